"""An MCP server's tools/list (spec: mcp.md#listing-tools): each tool's shape, names and
schemas, pagination, and whether the list holds still; hidden characters and rug pulls
(spec: mcp.md#hidden-characters, mcp.md#rug-pulls).

The shape and name checks read the listing the server gave when it was loaded; stability
and pagination ask again.
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from collections.abc import Iterator

from jsonschema import Draft202012Validator, SchemaError
from jsonschema.validators import validator_for

from conformance.checks.mcp import McpContext, check
from conformance.findings import Finding, NotApplicable, shown
from conformance.mcp.server import McpServer, McpTool
from conformance.sources import strings_in
from plugin_spec import mcp
from plugin_spec.json_types import JsonArray, JsonObject, JsonValue
from plugin_spec.schema_refs import external_refs

HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
BAD_CURSOR = "conformance-not-a-cursor"
KNOWN_DIALECTS = frozenset(
    f"http://json-schema.org/draft-{n}/schema" for n in ("04", "06", "07")
) | frozenset(f"https://json-schema.org/draft/{n}/schema" for n in ("2019-09", "2020-12"))


def _tools(ctx: McpContext) -> list[McpTool]:
    if not ctx.plugin.tools:
        raise NotApplicable("the server lists no tools")
    return ctx.plugin.tools


@check("MCP-TL-001")
def tool_shape(ctx: McpContext) -> Iterator[Finding]:
    server = ctx.plugin
    era = server.era
    for tool in _tools(ctx):
        d, at = tool.definition, tool.pointer
        yield from ctx.expect(
            isinstance(d.get("name"), str), "a tool has no string name", d.get("name"), at
        )
        schema = d.get("inputSchema")
        yield from ctx.expect(
            isinstance(schema, dict) and schema.get("type") == "object",
            f'tool {_name(tool)}: inputSchema must be an object schema with type "object"',
            schema,
            f"{at}/inputSchema",
        )
        output = d.get("outputSchema")
        if output is not None:
            object_root = isinstance(output, dict) and output.get("type") == "object"
            yield from ctx.expect(
                isinstance(output, dict) and (era == mcp.MODERN or object_root),
                f"tool {_name(tool)}: outputSchema must be an object schema "
                '(type "object" before 2026-07-28)',
                output,
                f"{at}/outputSchema",
            )
        annotations = d.get("annotations")
        if annotations is not None:
            yield from _annotation_problems(ctx, tool, annotations)


def _annotation_problems(
    ctx: McpContext, tool: McpTool, annotations: JsonValue
) -> Iterator[Finding]:
    at = f"{tool.pointer}/annotations"
    if not isinstance(annotations, dict):
        yield ctx.server_finding(
            f"tool {_name(tool)}: annotations is not an object: {shown(annotations)}", at
        )
        return
    for hint in HINTS:
        if hint in annotations and not isinstance(annotations[hint], bool):
            yield ctx.server_finding(
                f"tool {_name(tool)}: {hint} must be a boolean; got: {shown(annotations[hint])}",
                f"{at}/{hint}",
            )
    if "title" in annotations and not isinstance(annotations["title"], str):
        yield ctx.server_finding(f"tool {_name(tool)}: title must be a string", f"{at}/title")


@check("MCP-TL-002")
def schemas_valid(ctx: McpContext) -> Iterator[Finding]:
    for tool in _tools(ctx):
        for key in ("inputSchema", "outputSchema"):
            schema = tool.definition.get(key)
            if isinstance(schema, dict):
                problem = schema_problem(schema)
                if problem:
                    yield ctx.server_finding(
                        f"tool {_name(tool)}: {key} {problem}", f"{tool.pointer}/{key}"
                    )


def schema_problem(schema: JsonObject) -> str:
    """What is wrong with a schema in its dialect ("" when nothing)."""
    dialect = schema.get("$schema")
    if dialect is not None:
        if not isinstance(dialect, str) or dialect.rstrip("#") not in KNOWN_DIALECTS:
            return f"names a dialect the kit does not know: $schema {shown(dialect)}"
        cls = validator_for(schema)
    else:
        cls = Draft202012Validator
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        where = "/" + "/".join(str(p) for p in exc.path) if exc.path else ""
        return f"is not a valid schema of its dialect at {where or '/'}: {exc.message}"
    external = external_refs(schema)
    if external:
        return f"refers outside itself, which the kit does not follow: {external[0].describe('')}"
    return ""


@check("MCP-TL-003")
def pagination_ends(ctx: McpContext) -> Iterator[Finding]:
    listing = ctx.plugin.listing
    if listing is None:
        raise NotApplicable("the server was not listed")
    if listing.problem:
        yield ctx.server_finding(
            f"tools/list did not reach a last page: {listing.problem}", "/nextCursor"
        )
    repeated = [n for n, k in Counter(_names(ctx.plugin)).items() if k > 1]
    if repeated and len(listing.pages) > 1:
        yield ctx.server_finding(
            f"tools/list pages repeat tool(s) {', '.join(map(repr, repeated))}", "/tools"
        )


@check("MCP-TL-004")
def bad_cursors_refused(ctx: McpContext) -> Iterator[Finding]:
    listing = ctx.plugin.listing
    if listing is None or len(listing.pages) < 2:
        raise NotApplicable("the server lists its tools on one page: it issues no cursor")
    reply = ctx.sessions.session.request(mcp.TOOLS_LIST, {"cursor": BAD_CURSOR})
    asked = f"tools/list with the cursor {BAD_CURSOR!r}, never issued"
    if reply.ok:
        yield ctx.answered(f"{asked}, got a page", reply, "/params/cursor")


@check("MCP-TL-005")
def tool_names(ctx: McpContext) -> Iterator[Finding]:
    for tool in _tools(ctx):
        name = tool.name
        if name is not None and not mcp.TOOL_NAME.fullmatch(name):
            yield ctx.server_finding(
                f"tool name {name!r} is not 1-128 characters from A-Z a-z 0-9 _ - .",
                f"{tool.pointer}/name",
            )


@check("MCP-TL-006")
def unique_names(ctx: McpContext) -> Iterator[Finding]:
    _tools(ctx)
    listing = ctx.plugin.listing
    if listing is not None and listing.problem:
        raise NotApplicable("the listing did not end (MCP-TL-003)", ("MCP-TL-003",))
    for name, count in Counter(_names(ctx.plugin)).items():
        if count > 1:
            yield ctx.server_finding(f"{count} tools are named {name!r}", "/tools")


@check("MCP-TL-007")
def tools_described(ctx: McpContext) -> Iterator[Finding]:
    for tool in _tools(ctx):
        description = tool.definition.get("description")
        yield from ctx.expect(
            isinstance(description, str) and bool(description.strip()),
            f"tool {_name(tool)} has no description",
            description,
            f"{tool.pointer}/description",
        )


@check("MCP-TL-008")
def stable_listing(ctx: McpContext) -> Iterator[Finding]:
    _tools(ctx)
    first = _names(ctx.plugin)
    services = ctx.sessions
    again = services.session.list_tools()
    services.progress_seen()  # calls each tool once
    after = services.session.list_tools()
    for when, listing in (("asked again", again), ("after tool calls", after)):
        names = [t.get("name") for t in listing.tools if isinstance(t, dict)]
        if listing.complete and names != first:
            yield ctx.server_finding(
                f"tools/list {when} answered {shown(names)}, first {shown(first)}", "/tools"
            )


@check("MCP-SEC-001")
def no_hidden_characters(ctx: McpContext) -> Iterator[Finding]:
    for tool in _tools(ctx):
        for at, text in strings_in(tool.definition, tool.pointer):
            hidden = [c for c in text if is_hidden(c)]
            if hidden:
                named = ", ".join(dict.fromkeys(f"U+{ord(c):04X} {_char_name(c)}" for c in hidden))
                yield ctx.server_finding(
                    f"tool {_name(tool)} hides {len(hidden)} invisible character(s) ({named}) "
                    f"in: {shown(text)}",
                    at,
                )


def is_hidden(char: str) -> bool:
    """Tag characters, bidirectional controls and zero-width characters: what renders as
    nothing yet reaches the model."""
    point = ord(char)
    return (
        0xE0000 <= point <= 0xE007F
        or point in (0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x180E)
        or 0x202A <= point <= 0x202E
        or 0x2066 <= point <= 0x2069
        or point in (0x200E, 0x200F, 0x061C)
    )


@check("MCP-SEC-002")
def no_rug_pull(ctx: McpContext) -> Iterator[Finding]:
    tools = _tools(ctx)
    first: dict[str, JsonObject] = {t.name: t.definition for t in tools if t.name is not None}
    services = ctx.sessions
    listings = services.last_listings()  # the run's calls sessions, each listed at its end
    if not listings:
        services.progress_seen()  # calls each tool once, in the session listed next
        listings = services.last_listings() or [("after tool calls", services.session.list_tools())]
    second = services.second_start
    if second is not None:
        listings.append(("in a second start of the server", second))
    for when, listing in listings:
        if not listing.complete:
            continue
        later = {
            name: (i, t)
            for i, t in enumerate(listing.tools)
            if isinstance(t, dict) and isinstance(name := t.get("name"), str)
        }
        gone, added = sorted(set(first) - set(later)), sorted(set(later) - set(first))
        if gone or added:
            yield ctx.server_finding(
                f"the tools changed {when}: gone {shown(gone)}, added {shown(added)}",
                "/tools",
            )
        for name, (index, tool) in later.items():
            before = first.get(name)
            if before is None:
                continue
            changed = sorted(k for k in set(before) | set(tool) if before.get(k) != tool.get(k))
            if changed:
                key = changed[0]
                yield ctx.server_finding(
                    f"tool {name!r} changed its {', '.join(changed)} {when}: first "
                    f"{shown(before.get(key))}, then {shown(tool.get(key))}",
                    f"/tools/{index}/{key}",
                )


def _char_name(char: str) -> str:
    return unicodedata.name(char, "TAG" if 0xE0000 <= ord(char) <= 0xE007F else "FORMAT")


def _names(server: McpServer) -> JsonArray:
    return [t.definition.get("name") for t in server.tools]


def _name(tool: McpTool) -> str:
    return json.dumps(tool.definition.get("name"), ensure_ascii=False)
