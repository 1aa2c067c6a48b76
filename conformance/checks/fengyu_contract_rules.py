"""Rules FengYu checks beyond its JSON Schema, on fields the schema does describe (spec:
fengyu-manifest.md): file access against permissions, defaults against their property, the
engines range grammar, official ids, a backend's methods and repeated permissions."""

from __future__ import annotations

from collections.abc import Iterator

from jsonschema import Draft202012Validator

from conformance.checks.fengyu import FengYuContext, check
from conformance.fengyu.schema_walk import plugin_schema_nodes
from conformance.fengyu.version_range import range_problem
from conformance.findings import Finding, NotApplicable, shown
from conformance.schema_messages import explain, label
from conformance.sources import pointer
from plugin_spec.json_types import JsonObject
from plugin_spec.schema_refs import DOCUMENT_ONLY
from plugin_spec.schema_subset import to_json_schema

FILE_ACCESS = "x-fengyu-file-access"
OFFICIAL_PREFIX = "fan.summer."
SUBSET_TYPES = {"object", "array", "string", "integer", "number", "boolean"}


@check("FY-MAN-019")
def read_write_needs_files_write(ctx: FengYuContext) -> Iterator[Finding]:
    asking = [
        at for at, node in plugin_schema_nodes(ctx.plugin) if node.get(FILE_ACCESS) == "read-write"
    ]
    if not asking:
        raise NotApplicable(f"no method schema asks for {FILE_ACCESS} read-write")
    permissions = ctx.plugin.data.get("permissions")
    if isinstance(permissions, list) and "files.write" in permissions:
        return
    for at in asking:
        yield ctx.manifest_finding(
            at + pointer(FILE_ACCESS),
            f'{label(at)} asks for {FILE_ACCESS} "read-write", but permissions '
            f'{shown(permissions)} do not include "files.write"',
            f'add "files.write" to permissions, or set {FILE_ACCESS} to "read"',
        )


@check("FY-MAN-020")
def defaults_fit_their_property(ctx: FengYuContext) -> Iterator[Finding]:
    defaults = [(at, node) for at, node in plugin_schema_nodes(ctx.plugin) if "default" in node]
    if not defaults:
        raise NotApplicable("no method schema declares a default")
    for at, node in defaults:
        own = _own_schema(node)
        default = node.get("default")
        if own is None or default is None or isinstance(default, dict | list):
            continue  # a null default (an omitted value), or FY-MAN-011's finding
        for error in Draft202012Validator(own, registry=DOCUMENT_ONLY).iter_errors(default):
            told = explain(error, at + pointer("default"))
            yield ctx.manifest_finding(
                at + pointer("default"),
                f"the default does not fit its own property: {told.message}",
                f"change {label(at)}.default to a value the property accepts, or change the "
                "property's type, enum or bounds",
            )


def _own_schema(node: JsonObject) -> JsonObject | None:
    """The keywords that judge the node's own value, if the node has a default and they are
    well formed (malformed ones are FY-MAN-011's findings)."""
    if "default" not in node:
        return None
    kind = node.get("type")
    enum = node.get("enum")
    bounds = [node.get(k) for k in ("minimum", "maximum") if k in node]
    if (kind is not None and kind not in SUBSET_TYPES) or (
        enum is not None and not isinstance(enum, list)
    ):
        return None
    if any(isinstance(b, bool) or not isinstance(b, int | float) for b in bounds):
        return None
    keys = ("type", "enum", "minimum", "maximum", "nullable")
    own: JsonObject = to_json_schema({k: node[k] for k in keys if k in node})
    return own


@check("FY-MAN-021")
def engines_range(ctx: FengYuContext) -> Iterator[Finding]:
    engines = ctx.plugin.data.get("engines")
    text = engines.get("fengyu") if isinstance(engines, dict) else None
    if engines is None:
        raise NotApplicable("the manifest declares no engines.fengyu range")
    if not isinstance(text, str) or not text:
        return  # not a string: the schema's finding (FY-MAN-003)
    problem = range_problem(text)
    if problem is not None:
        yield ctx.manifest_finding(
            "/engines/fengyu",
            f"engines.fengyu {shown(text)} is not a FengYu version range: {problem}",
            "write engines.fengyu as space-separated comparators (>=, <=, >, <, =) with full "
            'SemVer versions and || between alternatives, e.g. ">=4.0.0-beta.4 <5.0.0"',
        )


@check("FY-MAN-026")
def official_ids(ctx: FengYuContext) -> Iterator[Finding]:
    data = ctx.plugin.data
    if data.get("official") is not True:
        raise NotApplicable("the manifest does not say official: true")
    plugin_id = data.get("id")
    if isinstance(plugin_id, str) and not plugin_id.startswith(OFFICIAL_PREFIX):
        yield ctx.manifest_finding(
            "/official",
            f"official is true, but the id {shown(plugin_id)} is not under {OFFICIAL_PREFIX}*",
            f"set official to false or leave it out: only FengYu's own {OFFICIAL_PREFIX}* "
            "plugins are official",
        )


@check("FY-MAN-027")
def backend_has_methods(ctx: FengYuContext) -> Iterator[Finding]:
    data = ctx.plugin.data
    if "backend" not in data:
        raise NotApplicable("the manifest declares no backend (a UI-only plugin)")
    rpc = data.get("rpc")
    methods = rpc.get("methods") if isinstance(rpc, dict) else None
    if isinstance(methods, dict) and methods:
        return
    yield ctx.manifest_finding(
        "/rpc/methods" if isinstance(methods, dict) else "/backend",
        f"backend declares a worker, but rpc.methods declares no method (found {shown(methods)})",
        "declare the worker's methods under rpc.methods, or remove backend",
    )


@check("FY-MAN-028")
def permissions_once(ctx: FengYuContext) -> Iterator[Finding]:
    permissions = ctx.declared("permissions", list, "the manifest lists no permissions")
    seen: dict[str, int] = {}
    for index, permission in enumerate(permissions):
        if not isinstance(permission, str):
            continue
        if permission in seen:
            yield ctx.manifest_finding(
                pointer("permissions", index),
                f"permission {shown(permission)} is listed again (first at "
                f"/permissions/{seen[permission]})",
                f"remove the repeated {shown(permission)} from permissions",
            )
        else:
            seen[permission] = index
