"""What an MCP server's tools do besides answering, against their annotations (spec:
mcp.md#annotations): every call of the run is judged (call_effects.py), and what no single
call can be named for is reported on its own, never laid at another tool's door.
"""

from __future__ import annotations

from collections.abc import Iterator

from conformance.checks.mcp import McpContext, check
from conformance.checks.mcp_calls import _search, _tool
from conformance.fengyu.attribution import Unattributed
from conformance.findings import Finding, NotApplicable, NotExercised, shown
from conformance.mcp.server import McpTool
from plugin_spec import mcp

SHOWN = 3  # findings per tool, and unattributed effects per finding


def _forbidden(tool: McpTool, kind: str) -> bool:
    """Whether the tool's annotations forbid an effect of this kind: a write to a tool
    annotated readOnlyHint: true, a connection or send to one that also says openWorldHint:
    false (reading the open world, a fetch, a search, is still read-only)."""
    if not mcp.annotation(tool.definition, "readOnlyHint"):
        return False
    return kind == "write" or not mcp.annotation(tool.definition, "openWorldHint")


@check("MCP-ANN-001")
def read_only_holds(ctx: McpContext) -> Iterator[Finding]:
    tool = _tool(ctx)
    name = tool.name or ""
    if not mcp.annotation(tool.definition, "readOnlyHint"):
        raise NotApplicable(
            f"tool {name!r} is not annotated readOnlyHint: true (taken as not read-only)"
        )
    services = ctx.sessions
    if services.call_effects.unseen:
        raise NotApplicable(services.call_effects.unseen)
    if not services.call_effects.called(name):  # run alone (-k MCP-ANN-001): calls of its own
        list(_search(ctx, tool, lambda reply: ""))
    judged = services.call_effects_judged()
    effects, _ = judged.judged()
    seen = effects.get(name, [])
    if not seen and not judged.succeeded(name):
        raise NotExercised(
            f"every call of {name!r} in this run was refused (isError or an error): it did "
            "nothing whose effects could be judged, so its readOnlyHint is not verified "
            "(MCP-CALL-001 says why)"
        )
    counted = [e for e in seen if _forbidden(tool, e.kind)]
    for effect in counted[:SHOWN]:
        yield ctx.server_finding(
            f"tool {name!r} is annotated readOnlyHint: true, but a call with "
            f"{shown(effect.arguments)} {effect.what}",
            f"{tool.pointer}/annotations/readOnlyHint",
        )


@check("MCP-ANN-002")
def effects_belong_to_a_call(ctx: McpContext) -> Iterator[Finding]:
    ctx.sessions.require_session()
    services = ctx.sessions
    if services.call_effects.unseen:
        raise NotApplicable(services.call_effects.unseen)
    tools = {t.name: t for t in ctx.plugin.tools if isinstance(t.name, str)}
    if not any(services.call_effects.called(n) for n in tools):
        raise NotApplicable("no tool of the server was called in this run")
    _, unattributed = services.call_effects_judged().judged()
    counted = [
        u
        for u in unattributed
        if any(s in tools and _forbidden(tools[s], u.attempt.kind) for s in u.suspects)
    ]
    if counted:
        yield ctx.server_finding(_message(counted))


def _message(found: list[Unattributed]) -> str:
    suspects = ", ".join(repr(t) for t in dict.fromkeys(t for u in found for t in u.suspects))
    lines = [f"  {u.describe()}" for u in found[:SHOWN]]
    if len(found) > SHOWN:
        lines.append(f"  ... and {len(found) - SHOWN} more")
    return (
        "the server wrote or reached out when no single call can be named for it, so the kit "
        f"lays it at no tool's door; the tools that may have (one annotated so that it may "
        f"not): {suspects}\n" + "\n".join(lines) + f"\n  the trace: {found[0].attempt.line[:300]}"
    )
