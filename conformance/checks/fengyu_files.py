"""Checks of file-class parameters (spec: fengyu-manifest.md#file-parameters): what the host
will inject and resolve."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from conformance.checks.fengyu import FengYuContext, check
from conformance.fengyu.file_parameters import (
    FileParameter,
    PathLikeParameter,
    file_classes,
    file_parameters,
    path_like_parameters,
)
from conformance.findings import Finding
from plugin_spec.filerefs import FILE_ACCESS, FileClass


@check("FY-FILE-001")
def file_parameters_typed_as_paths(ctx: FengYuContext) -> Iterator[Finding]:
    for parameter in _once_per_schema(file_parameters(ctx.plugin)):
        expected = "array of string" if parameter.file_class is FileClass.FILE_LIST else "string"
        actual = _type_of(parameter.schema)
        if actual != expected:
            yield ctx.manifest_finding(
                parameter.schema_pointer + "/type",
                f"{parameter.parameter!r} is a {parameter.file_class.value} parameter typed "
                f"{actual}; the worker receives the resolved path, so type it {expected}",
                f"declare {parameter.parameter!r} as {_schema_for(parameter.file_class)}; the "
                "host puts the absolute path there before dispatch",
            )


@check("FY-FILE-002")
def writing_tools_need_approval(ctx: FengYuContext) -> Iterator[Finding]:
    for tool in ctx.plugin.tools:
        writes = [name for name, cls in file_classes(tool).items() if cls.writes]
        if writes and tool.effect == "read":
            yield ctx.manifest_finding(
                f"{tool.pointer}/effect",
                f"tool {tool.name!r} writes through {', '.join(writes)} but declares effect "
                "'read', which runs without approval",
            )


@check("FY-FILE-003")
def file_permissions_declared(ctx: FengYuContext) -> Iterator[Finding]:
    declared = ctx.plugin.data.get("permissions")
    declared = declared if isinstance(declared, list) else []
    needs: dict[str, str] = {}
    for parameter in file_parameters(ctx.plugin):
        permission = "files.write" if parameter.file_class.writes else "files.read"
        needs.setdefault(permission, f"{parameter.tool}.{parameter.parameter}")
    for permission, example in sorted(needs.items()):
        if permission not in declared:
            yield ctx.manifest_finding(
                "/permissions",
                f"{permission} is not declared, but {example} takes a "
                f"{'writable directory' if permission == 'files.write' else 'granted file'}",
            )


P = TypeVar("P", "FileParameter", "PathLikeParameter")


@check("FY-FILE-004")
def path_like_parameters_are_file_class(ctx: FengYuContext) -> Iterator[Finding]:
    for parameter in _once_per_schema(path_like_parameters(ctx.plugin)):
        yield ctx.manifest_finding(
            parameter.schema_pointer,
            f"{parameter.tool}.{parameter.parameter} looks like a path ({parameter.because}) "
            "but is not file-class: the host never fills it from a grant, and no file check "
            "looks at it",
            f"if it takes a granted file or folder, mark it with FengYu's file marker: "
            f"{parameter.add}; if it is plain text, accept this warning",
        )


def _once_per_schema(parameters: list[P]) -> Iterator[P]:
    """Each parameter schema once: tools that share a method share its schema, and one
    defect there gets one finding."""
    seen: set[str] = set()
    for parameter in parameters:
        if parameter.schema_pointer not in seen:
            seen.add(parameter.schema_pointer)
            yield parameter


def _type_of(schema: object) -> str:
    if not isinstance(schema, dict):
        return "nothing"
    kind = schema.get("type", "nothing")
    if kind == "array":
        items = schema.get("items")
        inner = items.get("type", "anything") if isinstance(items, dict) else "anything"
        return f"array of {inner}"
    return str(kind)


def _schema_for(file_class: FileClass) -> str:
    """The property as FengYu's file marker spells its class (fengyu-manifest.md)."""
    if file_class is FileClass.FILE_LIST:
        return '{"type": "array", "items": {"type": "string", "format": "fengyu-file"}}'
    if file_class is FileClass.READ_FILE:
        return '{"type": "string", "format": "fengyu-file"}'
    access = "read-write" if file_class.writes else "read"
    return f'{{"type": "string", "format": "fengyu-directory", "{FILE_ACCESS}": "{access}"}}'
