"""Static checks of a FengYu manifest.json (spec: fengyu-manifest.md): what the file itself must
get right."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from conformance.checks.fengyu import FengYuContext, check
from conformance.fengyu.code_first import Sidecar
from conformance.fengyu.manifest import FENGYU_V1, SCHEMA_FILES, FengYuPlugin
from conformance.findings import Finding
from conformance.profiles import Plugin
from conformance.schema_validation import (
    SchemaError,
    annotated_requirements,
    schema_uri,
    validate,
)
from plugin_spec.builtin_names import BUILTIN_TOOL_NAMES

METHOD_SCHEMA = schema_uri("fengyu-manifest-v2.schema.json#/$defs/methodSchema")
FLOW_NODES_FILE = schema_uri("fengyu-manifest-v2.schema.json#/$defs/flowNodesFile")
LOCALE_FILE = schema_uri("fengyu-manifest-v2.schema.json#/$defs/localeOverride")
# What one locale's override may hold (the schema's localeOverride): found straight under i18n,
# such a field has lost its locale.
OVERRIDE_FIELDS = ("name", "description", "aiTools", "flowNodes")


@check("FY-MAN-001")
def manifest_loads(ctx: FengYuContext) -> Iterator[Finding]:
    error = ctx.plugin.load_error
    if error is not None:
        yield ctx.finding(error.message, ctx.plugin.source_file, error.pointer, error.line)
    for sidecar in _sidecars(ctx.plugin):
        if sidecar.error is not None:
            told = sidecar.error
            yield ctx.finding(told.message, sidecar.display, told.pointer, told.line)


@check("FY-MAN-002")
def no_duplicate_keys(ctx: FengYuContext) -> Iterator[Finding]:
    for duplicate in ctx.plugin.duplicates:
        yield ctx.manifest_finding(
            duplicate.pointer,
            _twice(duplicate.key),
            f"remove one of the two {duplicate.key!r} keys, or rename one",
        )
    for sidecar in _sidecars(ctx.plugin):
        document = sidecar.document
        for duplicate in document.duplicates if document else ():
            yield ctx.finding(
                _twice(duplicate.key),
                sidecar.display,
                duplicate.pointer,
                document.line_of(duplicate.pointer) if document else None,
                f"remove one of the two {duplicate.key!r} keys, or rename one",
            )


def _twice(key: str) -> str:
    return f"key {key!r} appears twice in one object; parsers keep only the last value"


def _sidecars(plugin: FengYuPlugin) -> list[Sidecar]:
    return plugin.code_first.sidecars if plugin.code_first is not None else []


def schema_findings(plugin: FengYuPlugin) -> list[Finding]:
    """Every schema error of the manifest, once per plugin, attributed to its requirement.

    v1 schemas are escaped strings the manifest schema cannot see into, so each parsed one is
    validated on its own against the same method-schema definition v2 uses.
    """
    errors = _locale_left_out(validate(plugin.data, schema_uri(SCHEMA_FILES[plugin.profile])))
    if plugin.profile == FENGYU_V1:
        for site in plugin.schemas:
            errors += validate(site.data, METHOD_SCHEMA, at=site.pointer)
    found = [plugin.finding(e.requirement, e.pointer, e.message, e.fix) for e in errors]
    for sidecar in _sidecars(plugin):
        if sidecar.document is None:
            continue
        uri = LOCALE_FILE if sidecar.locale else FLOW_NODES_FILE
        for e in validate(sidecar.document.data, uri):
            line = sidecar.document.line_of(e.pointer)
            found.append(Finding(e.requirement, e.message, sidecar.display, e.pointer, line, e.fix))
    return found


def _locale_left_out(errors: list[SchemaError]) -> list[SchemaError]:
    """errors with an override field put straight under i18n (i18n.flowNodes, without its
    locale) told as that, once: the schema sees a key that is no locale tag and, inside it,
    keys an override may not hold, and the fixes for those (rename it, remove what it holds)
    would lose the translation."""
    misplaced = {
        e.pointer
        for e in errors
        if e.pointer.count("/") == 2
        and e.pointer.startswith("/i18n/")
        and e.pointer.rsplit("/", 1)[1] in OVERRIDE_FIELDS
    }
    told: list[SchemaError] = []
    for e in errors:
        if any(e.pointer.startswith(f"{at}/") for at in misplaced):
            continue  # what the misplaced field holds: its own finding says where it goes
        if e.pointer in misplaced:
            field = e.pointer.rsplit("/", 1)[1]
            e = SchemaError(
                e.requirement,
                e.pointer,
                f"/i18n: found the override field {field!r} straight under i18n, without the "
                "locale it translates into (i18n is keyed by locale tags such as zh or pt-br)",
                f"move it under a locale: i18n.<locale>.{field}, for example i18n.zh.{field} "
                f"(merge it into that locale's {field} where the locale has one)",
            )
        told.append(e)
    return told


@check(*sorted(set().union(*(annotated_requirements(f) for f in SCHEMA_FILES.values()))))
def manifest_schema(ctx: FengYuContext) -> list[Finding]:
    return ctx.store.once(schema_findings, ctx.plugin)


@check("FY-MAN-004")
def ai_tool_methods_resolve(ctx: FengYuContext) -> Iterator[Finding]:
    rpc = ctx.plugin.data.get("rpc")
    methods = rpc.get("methods", {}) if isinstance(rpc, dict) else {}
    if not isinstance(methods, dict):
        return  # a malformed method table is the schema's finding (FY-MAN-003), not ours
    declared = set(methods)  # a set: one lookup per tool, not a scan of every method
    known = _known_methods(methods)
    for tool in ctx.plugin.tools:
        if isinstance(tool.method, str) and tool.method not in declared:
            yield ctx.manifest_finding(
                f"{tool.pointer}/method",
                f"method {tool.method!r} is not a key of rpc.methods (declared: {known})",
            )


@check("FY-MAN-007")
def tool_names_unique(ctx: FengYuContext) -> Iterator[Finding]:
    first: dict[str, str] = {}
    for tool in ctx.plugin.tools:
        if not isinstance(tool.name, str):
            continue
        if tool.name in first:
            yield ctx.manifest_finding(
                f"{tool.pointer}/name",
                f"tool name {tool.name!r} is already used at {first[tool.name]}",
            )
        else:
            first[tool.name] = tool.pointer


def offered_tool_names(peers: Sequence[Plugin]) -> dict[str, str]:
    """The tool names a host offers beside the plugin's, each with who offers it: its
    built-in tools, then the other plugins checked in the same run (peers)."""
    offered_by = {name: "the host's built-in tools" for name in BUILTIN_TOOL_NAMES}
    for peer in peers:
        for name in peer.tool_names():
            offered_by.setdefault(name, f"plugin {peer.label} ({peer.root})")
    return offered_by


@check("FY-MAN-008")
def tool_names_do_not_clash(ctx: FengYuContext) -> Iterator[Finding]:
    offered_by = offered_tool_names(ctx.peers)
    for tool in ctx.plugin.tools:
        if isinstance(tool.name, str) and tool.name in offered_by:
            site, fix = _clash(ctx, tool.name)
            yield ctx.manifest_finding(
                f"{tool.pointer}/name",
                f"tool name {tool.name!r} is also offered by {offered_by[tool.name]}{site}",
                fix,
            )


def _clash(ctx: FengYuContext, name: str) -> tuple[str, str]:
    """Where another FengYu plugin of the run declares name (its file and pointer), and the
    fix: rename one of the two, where a prefix (which both names already share when they
    have one) does not tell them apart. ("", "") for a built-in or another kind of plugin:
    the requirement's hint (prefix the name with the plugin's noun) fits those."""
    for peer in ctx.peers:
        if not isinstance(peer, FengYuPlugin):
            continue
        declared = next((t for t in peer.tools if t.name == name), None)
        if declared is None:
            continue
        file = peer.root / peer.source_file
        site = f", in {file} at {declared.pointer}/name"
        prefix = name.split("_", 1)[0] + "_" if "_" in name.strip("_") else ""
        how = (
            f"both names already start with {prefix!r}, so a prefix does not tell them apart: "
            "name what each tool does differently"
            if prefix
            else "prefix each with its plugin's noun"
        )
        return site, (
            f"rename {name!r} here or in plugin {peer.label} ({file}, {declared.pointer}/name): "
            f"a host offers one tool per name across all plugins; {how}"
        )
    return "", ""


def _known_methods(methods: Mapping[str, object], shown: int = 20) -> str:
    """The declared methods for a finding, cut to a readable number."""
    if not methods:
        return "rpc.methods declares none"
    names = sorted(methods)
    more = f", ... ({len(names) - shown} more)" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
