"""Cross-references of flowNodes and i18n that FengYu's build checks beyond its schema (spec:
fengyu-manifest.md#flow-nodes): ports name real properties, widgets fit their types, the
methods behind pickers exist, and translations are keyed by names that exist."""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Set as AbstractSet

from conformance.checks.fengyu import FengYuContext, check
from conformance.fengyu.manifest import AiTool, FengYuPlugin
from conformance.fengyu.schema_walk import input_properties
from conformance.findings import Finding, NotApplicable, shown
from conformance.sources import pointer
from plugin_spec.json_types import JsonObject, JsonValue

# The property types each widget can edit; an untyped property takes any widget.
WIDGET_TYPES: dict[str, set[str]] = {
    "text": {"string", "number", "integer"},
    "textarea": {"string"},
    "number": {"number", "integer"},
    "switch": {"boolean"},
    "select": {"string", "number", "integer", "array"},
    "json": {"object", "array", "string", "number", "integer", "boolean"},
    "analyze": {"string"},
    "rows": {"array"},
}


def _nodes(ctx: FengYuContext) -> list[tuple[str, JsonObject]]:
    nodes = ctx.declared("flowNodes", list, "the manifest declares no flowNodes")
    return [(pointer("flowNodes", i), n) for i, n in enumerate(nodes) if isinstance(n, dict)]


def _ports(node: JsonObject, key: str) -> list[tuple[int, JsonObject]]:
    ports = node.get(key)
    if not isinstance(ports, list):
        return []
    return [(i, p) for i, p in enumerate(ports) if isinstance(p, dict)]


def _tools(plugin: FengYuPlugin) -> dict[str, AiTool]:
    return {tool.name: tool for tool in plugin.tools if isinstance(tool.name, str)}


def _methods(plugin: FengYuPlugin) -> JsonObject:
    rpc = plugin.data.get("rpc")
    methods = rpc.get("methods") if isinstance(rpc, dict) else None
    return methods if isinstance(methods, dict) else {}


def _names(properties: JsonObject | None) -> str:
    return ", ".join(sorted(properties)) if properties else "none"


@check("FY-MAN-022")
def flow_ports_resolve(ctx: FengYuContext) -> Iterator[Finding]:
    tools = _tools(ctx.plugin)
    for at, node in _nodes(ctx):
        name = node.get("tool")
        tool = tools.get(name) if isinstance(name, str) else None
        if tool is None:
            if isinstance(name, str):
                yield ctx.manifest_finding(
                    at + "/tool",
                    f"flow node tool {shown(name)} names no aiTools[] entry "
                    f"(declared: {_names(dict.fromkeys(tools))})",
                    "set tool to the name of an aiTools[] entry, or declare that tool",
                )
            continue
        yield from _inputs_resolve(ctx, at, node, tool)
        yield from _outputs_resolve(ctx, at, node, tool)


def _inputs_resolve(
    ctx: FengYuContext, at: str, node: JsonObject, tool: AiTool
) -> Iterator[Finding]:
    if tool.input_schema is None:
        return  # no input schema to resolve against: FY-MAN-004/FY-MAN-010's finding
    properties = input_properties(tool.input_schema.data) or {}
    for index, port in _ports(node, "inputs"):
        name = port.get("name")
        if not isinstance(name, str):
            continue
        where = at + pointer("inputs", index)
        if name not in properties:
            yield ctx.manifest_finding(
                where + "/name",
                f"flow input {shown(name)} is not an input property of method "
                f"{shown(tool.method)} (its inputSchema has: {_names(properties)})",
                "rename the input to a property of the method's inputSchema, or add it there",
            )
            continue
        yield from _fields_resolve(ctx, where, port, properties[name])


def _fields_resolve(
    ctx: FengYuContext, where: str, port: JsonObject, prop: JsonValue
) -> Iterator[Finding]:
    fields = _ports(port, "fields")
    if not fields:
        return
    items = prop.get("items") if isinstance(prop, dict) else None
    item_properties = input_properties(items)
    if not (isinstance(prop, dict) and prop.get("type") == "array" and item_properties):
        yield ctx.manifest_finding(
            where + "/fields",
            f"flow input {shown(port.get('name'))} has row fields, but its property "
            f"{shown(prop)} is not an array of objects with properties",
            "give the property type array with items of type object and properties, or drop fields",
        )
        return
    for index, field in fields:
        name = field.get("name")
        if isinstance(name, str) and name not in item_properties:
            yield ctx.manifest_finding(
                where + pointer("fields", index, "name"),
                f"row field {shown(name)} is not a property of the array's items "
                f"(they have: {_names(item_properties)})",
                "rename the row field to a property of the items, or add it there",
            )


def _outputs_resolve(
    ctx: FengYuContext, at: str, node: JsonObject, tool: AiTool
) -> Iterator[Finding]:
    site = tool.output_schema
    properties = input_properties(site.data) if site is not None else None
    seen: set[str] = set()
    for index, port in _ports(node, "outputs"):
        name = port.get("name")
        if not isinstance(name, str):
            continue
        where = at + pointer("outputs", index, "name")
        if name in seen:
            yield ctx.manifest_finding(
                where,
                f"flow output {shown(name)} is declared twice on one node",
                "give each output port its own name, or remove the repeated one",
            )
        elif properties is None or name not in properties:
            has = "declares no outputSchema" if site is None else f"has: {_names(properties)}"
            yield ctx.manifest_finding(
                where,
                f"flow output {shown(name)} is not an output property of method "
                f"{shown(tool.method)} (its outputSchema {has})",
                "rename the output to a property of the method's outputSchema, or add it there",
            )
        seen.add(name)


@check("FY-MAN-023")
def flow_widgets_fit(ctx: FengYuContext) -> Iterator[Finding]:
    tools = _tools(ctx.plugin)
    widgets = 0
    for at, node in _nodes(ctx):
        tool = tools.get(str(node.get("tool")))
        properties = input_properties(tool.input_schema.data) if tool and tool.input_schema else {}
        for index, port in _ports(node, "inputs"):
            widget, name = port.get("widget"), port.get("name")
            if not isinstance(widget, str) or widget not in WIDGET_TYPES:
                continue
            widgets += 1
            prop = (properties or {}).get(name) if isinstance(name, str) else None
            if not isinstance(prop, dict):
                continue  # a port naming no property is FY-MAN-022's finding
            kind = prop.get("type")
            fits = not isinstance(kind, str) or kind in WIDGET_TYPES[widget]
            if fits and widget == "rows":
                items = prop.get("items")
                fits = isinstance(items, dict) and items.get("type") in (None, "object")
            if not fits:
                yield ctx.manifest_finding(
                    at + pointer("inputs", index, "widget"),
                    f"widget {shown(widget)} cannot edit input {shown(name)} of type "
                    f"{shown(kind)}"
                    + (" (rows need an array of objects)" if widget == "rows" else ""),
                    f"use a widget for {kind} values ({_widgets_for(kind)}), or leave widget "
                    "out so that the host infers it",
                )
    if not widgets:
        raise NotApplicable("no flow-node input names a widget")


def _widgets_for(kind: JsonValue) -> str:
    return ", ".join(w for w, kinds in WIDGET_TYPES.items() if kind in kinds) or "none"


@check("FY-MAN-024")
def flow_methods_exist(ctx: FengYuContext) -> Iterator[Finding]:
    methods = _methods(ctx.plugin)
    calls = 0
    for at, node in _nodes(ctx):
        for index, port in _ports(node, "inputs"):
            for key in ("context", "source"):
                block = port.get(key)
                method = block.get("method") if isinstance(block, dict) else None
                if not isinstance(method, str) or not isinstance(block, dict):
                    continue
                calls += 1
                where = at + pointer("inputs", index, key)
                if method not in methods:
                    yield ctx.manifest_finding(
                        where + "/method",
                        f"{key}.method {shown(method)} is not a key of rpc.methods "
                        f"(declared: {_names(methods)})",
                        f"set {key}.method to a declared rpc.methods key, or declare the method",
                    )
                    continue
                yield from _params_resolve(ctx, where, block, method, methods[method])
    if not calls:
        raise NotApplicable("no flow-node input calls a method (context or source)")


def _params_resolve(
    ctx: FengYuContext, where: str, block: JsonObject, name: str, method: JsonValue
) -> Iterator[Finding]:
    params = block.get("params")
    if not isinstance(params, dict) or not isinstance(method, dict):
        return
    properties = input_properties(method.get("inputSchema")) or {}
    for key in params:
        if key not in properties:
            yield ctx.manifest_finding(
                where + pointer("params", key),
                f"context param {shown(key)} is not an input property of method {shown(name)} "
                f"(its inputSchema has: {_names(properties)})",
                "key context.params by the context method's input properties",
            )


@check("FY-MAN-025")
def i18n_keys_exist(ctx: FengYuContext) -> Iterator[Finding]:
    i18n = ctx.declared("i18n", dict, "the manifest declares no i18n overrides")
    tools = set(_tools(ctx.plugin))
    raw_nodes = ctx.plugin.data.get("flowNodes")
    nodes = {
        n["tool"]: n
        for n in (raw_nodes if isinstance(raw_nodes, list) else [])
        if isinstance(n, dict) and isinstance(n.get("tool"), str)
    }
    for locale, override in i18n.items():
        if not isinstance(override, dict):
            continue
        at = pointer("i18n", locale)
        yield from _keys_exist(ctx, at + "/aiTools", override.get("aiTools"), tools, "aiTools")
        texts = override.get("flowNodes")
        yield from _keys_exist(ctx, at + "/flowNodes", texts, set(nodes), "flowNodes tools")
        for tool, text in texts.items() if isinstance(texts, dict) else ():
            if tool not in nodes or not isinstance(text, dict):
                continue
            for key in ("inputs", "outputs"):
                ports = {p.get("name") for _, p in _ports(nodes[tool], key)}
                where = at + pointer("flowNodes", tool, key)
                yield from _keys_exist(ctx, where, text.get(key), ports, f"{tool} {key}")


def _keys_exist(
    ctx: FengYuContext, at: str, overrides: JsonValue, known: AbstractSet[JsonValue], what: str
) -> Iterator[Finding]:
    if not isinstance(overrides, dict):
        return
    names = sorted(k for k in known if isinstance(k, str))
    for key in overrides:
        if key not in known:
            yield ctx.manifest_finding(
                at + pointer(key),
                f"i18n override key {shown(key)} names none of the {what} "
                f"(declared: {', '.join(names) or 'none'})",
                "key the override by a declared name exactly, or remove the stale override",
            )
