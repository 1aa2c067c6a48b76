"""An MCP server's tools called (spec: mcp.md#calling-tools): generated valid arguments must
be answered, structured output must match its schema, invalid arguments must never succeed,
an unknown tool must be refused (as a protocol error, a SHOULD), a call still at work at the
kit's deadline should not be, and no result may carry a secret the server was given
(spec: mcp.md#secrets).

A call the server still works on when the kit stops waiting, sending progress for it, is not
silence: the spec leaves timeouts to the client, so no MUST of an answer judges it; the search
that drew it ends there (each further call could work as long), and MCP-CALL-007 reports it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from conformance.call_log import unexercised
from conformance.checks.mcp import McpContext, check
from conformance.findings import Finding, NotApplicable, NotExercised, shown
from conformance.mcp.refusal import refusal
from conformance.mcp.server import McpTool
from conformance.mcp.services import UNKNOWN_TOOL, Called
from conformance.mcp.wire import Reply
from conformance.properties import Counterexample, find_counterexample
from conformance.strategies import GeneratorGap, InputSpace
from plugin_spec.json_types import ReadOnlyJson
from plugin_spec.jsonrpc import INVALID_PARAMS

# Invalid arguments left unanswered are MCP-CALL-003's finding; the rules that judge the
# answer's form are skipped naming it, without waiting out another call.
UNANSWERED_OWNER = "MCP-CALL-003"
UNANSWERED_FIX = (
    "Answer every tools/call, invalid arguments included: an isError result naming what is "
    "wrong (or a -32602 error), never silence, which leaves the client waiting."
)
# An answer refused unread (nested too deep, past 16 MiB) is MCP-STD-001's finding.
REFUSED_OWNER = "MCP-STD-001"
WORKING_OWNER = "MCP-CALL-007"
# The call of UNKNOWN_TOOL, as MCP-CALL-005 and MCP-CALL-006 name it in their findings.
UNKNOWN_CALL = f"tools/call of {UNKNOWN_TOOL!r}, which the server did not list"
HANG_FIX = (
    "Bound the tool's work for every input its schema allows (cap counts and sizes in the "
    "inputSchema, e.g. maximum), answer within 30 seconds, and stop when the call is cancelled."
)


def _tool(ctx: McpContext) -> McpTool:
    ctx.sessions.require_session()
    tool = ctx.tool
    if not isinstance(tool, McpTool) or tool.name is None:
        raise NotApplicable("the item names no listed tool")
    if tool.task_only:
        raise NotApplicable(
            f'tool {tool.name!r} runs only as a task (execution.taskSupport: "required"), '
            "and refuses a plain call as it should; the kit does not drive tasks, so its "
            "calls are not judged"
        )
    return tool


def _space(ctx: McpContext, tool: McpTool) -> InputSpace:
    try:
        return ctx.sessions.input_space(tool)
    except GeneratorGap as exc:
        raise NotApplicable(f"no arguments can be generated: {exc}") from None


def _unknown_tool_reply(ctx: McpContext) -> Reply:
    """The answer to the call of UNKNOWN_TOOL, made in a second start of the server."""
    ctx.sessions.require_session()
    reply = ctx.sessions.unknown_tool
    if reply is None:
        raise NotApplicable("a second start of the server opened no session: no call was made")
    return reply


def _calls_of(ctx: McpContext, tool: McpTool) -> Iterator[Called]:
    """The run's calls of tool; one with its minimal arguments when the run made none."""
    services = ctx.sessions
    if not any(c.tool == tool.name for c in services.results):
        services.call(tool.name or "", _space(ctx, tool).minimal())
    return (c for c in services.results if c.tool == tool.name)


def result_problem(reply: Reply) -> str:
    """What makes a reply neither a well-formed CallToolResult nor a JSON-RPC error."""
    if reply.response is None:
        return reply.describe()
    if reply.error is not None:
        return "" if isinstance(reply.error.get("code"), int) else "an error without a code"
    result = reply.result
    if not isinstance(result, dict):
        return f"the result is not an object: {shown(result)}"
    content = result.get("content")
    if not isinstance(content, list) or not all(
        isinstance(b, dict) and isinstance(b.get("type"), str) for b in content
    ):
        return f"content is not a list of typed blocks: {shown(content)}"
    if "isError" in result and not isinstance(result["isError"], bool):
        return f"isError is not a boolean: {shown(result['isError'])}"
    return ""


def _reproduction(ctx: McpContext, tool: McpTool, arguments: ReadOnlyJson, got: str) -> str:
    """The call, how its answer began (Reply.describe) and its session's transcript."""
    request = {"name": tool.name, "arguments": arguments}
    note = ctx.sessions.transcript_note(
        ctx.sessions.session.wire, f"{ctx.requirement.id}-{tool.name}"
    )
    sent = json.dumps(request, ensure_ascii=False)
    return f"request: tools/call {sent}\ngot: {got}\n{note}"


def _search(
    ctx: McpContext, tool: McpTool, judge: Callable[[Reply], str], *, invalid: bool = False
) -> Iterator[Finding]:
    space = _space(ctx, tool)
    services = ctx.sessions
    assert tool.name is not None
    name = tool.name
    if invalid and not space.mutations(space.minimal()):
        raise NotApplicable(
            f"the inputSchema of {name!r} leaves nothing the kit can break (no required or "
            "typed property): no invalid arguments to send"
        )
    unanswered = f"invalid arguments of {name!r} got no answer ({UNANSWERED_OWNER})"
    owner = ctx.requirement.id == UNANSWERED_OWNER
    if invalid and not owner and name in services.unanswered:
        raise NotApplicable(unanswered)
    judged = [0]  # the answers judged before a call still at work ended the search

    def attempt(data: st.DataObject) -> Counterexample | None:
        arguments = space.draw_valid(data.draw)
        if invalid:
            mutations = space.mutations(arguments)
            if not mutations:
                return None
            why, arguments = data.draw(st.sampled_from(mutations))
        else:
            why = ""
        reply = services.call(name, arguments)
        if reply.refused:  # the search ends here: each further answer would be refused too
            return Counterexample(reply.describe(), (arguments, reply), hang=True)
        if reply.working:  # the search ends here: not silence, MCP-CALL-007's to judge
            return Counterexample(reply.describe(), (arguments, reply), hang=True)
        judged[0] += 1
        if invalid and reply.response is None:  # the search ends here: each would wait
            services.unanswered.add(name)
            problem = f"invalid arguments got no answer: {reply.describe()}"
            return Counterexample(f"{problem} ({why})", (arguments, reply), hang=True)
        problem = judge(reply)
        if not problem:
            return None
        hang = reply.response is None and reply.timed_out
        return Counterexample(
            f"{problem}{f' ({why})' if why else ''}", (arguments, reply), hang=hang
        )

    services.begin_search()
    found = find_counterexample(attempt, services.settings)
    if found is None:
        return
    arguments, reply = found.outcome
    if reply.refused:
        raise NotApplicable(
            f"tool {name!r} was answered with {reply.refused} (called with "
            f"{shown(arguments, 200)}), which clients refuse unread: its answers cannot be "
            f"judged ({REFUSED_OWNER})"
        )
    if reply.working:
        if judged[0]:
            return  # the answers before it were judged, and passed
        raise NotApplicable(
            f"tool {name!r} was still at work when the kit stopped waiting ({reply.describe()}; "
            f"called with {shown(arguments, 200)}): no answer to judge ({WORKING_OWNER})"
        )
    if invalid and reply.response is None and not owner:
        raise NotApplicable(unanswered)
    fix = UNANSWERED_FIX if invalid and found.hang else HANG_FIX if found.hang else ""
    yield ctx.server_finding(
        f"tool {name!r}: {found.problem}\n{_reproduction(ctx, tool, arguments, reply.describe())}",
        f"{tool.pointer}/inputSchema",
        fix=fix,
    )


def _search_invalid(
    ctx: McpContext, wrong: str, is_wrong: Callable[[Reply], bool]
) -> Iterator[Finding]:
    """Search the item's tool with invalid arguments for an answer that is_wrong, which the
    finding names as `wrong` ("invalid arguments got <wrong>: <the answer>")."""
    return _search(
        ctx,
        _tool(ctx),
        lambda r: f"invalid arguments got {wrong}: {r.describe()}" if is_wrong(r) else "",
        invalid=True,
    )


@check("MCP-CALL-001")
def valid_calls_answered(ctx: McpContext) -> Iterator[Finding]:
    """A tool whose every answer was a refusal is not exercised (exercised.py), not a pass."""
    tool = _tool(ctx)
    services = ctx.sessions
    answers: list[Reply] = []

    name = tool.name or ""

    def judge(reply: Reply) -> str:
        answers.append(reply)
        problem = result_problem(reply)
        if not services.server_gone():
            return problem
        # Gone: by this call, or by the one before it, which answered and ended the server
        # a moment later (a tool that signals its own process group). A call of another
        # tool before it is that tool's item's to report (it waits for such an end): this
        # tool is blamed only if its call alone ends a fresh server too.
        before = services.previous_call()
        another = before is not None and before.tool != name
        if another and services.survives_alone(name, services.results[-1].arguments):
            return ""
        return (problem or "the server exited after answering") + services.call_before()

    findings = list(_search(ctx, tool, judge))
    if not findings and answers and services.gone_after_quiet():
        last = services.last_call_of(name)
        if last is not None:
            findings.append(
                ctx.server_finding(
                    f"tool {name!r}: the server exited after answering the search's last call"
                    f"{services.call_before()}\n"
                    + _reproduction(ctx, tool, last.arguments, last.got),
                    f"{tool.pointer}/inputSchema",
                )
            )
    if not findings and not any(reply.succeeded for reply in answers):
        space = _space(ctx, tool)
        raise NotExercised(
            unexercised(name, len(answers), space.dropped, services.setup_failures),
            refusal(answers[-1]) if answers else "",
        )
    yield from findings


@check("MCP-CALL-002")
def structured_output_conforms(ctx: McpContext) -> Iterator[Finding]:
    tool = _tool(ctx)
    schema = tool.output_schema
    if not isinstance(schema, dict):
        raise NotApplicable(f"tool {tool.name!r} declares no outputSchema")
    try:
        validator = Draft202012Validator(schema)
    except Exception as exc:  # an invalid schema is MCP-TL-002's finding
        raise NotApplicable(f"the outputSchema cannot be used (MCP-TL-002): {exc}") from None

    successes: list[Reply] = []

    def judge(reply: Reply) -> str:
        result = reply.result
        if not reply.succeeded or not isinstance(result, dict):
            return ""
        successes.append(reply)
        structured = result.get("structuredContent")
        if structured is None:
            return "a result without structuredContent, though the tool has an outputSchema"
        error = next(iter(validator.iter_errors(structured)), None)
        if error is not None:
            return (
                f"structuredContent {shown(structured)} does not match the outputSchema: "
                f"{error.message}"
            )
        return ""

    findings = list(_search(ctx, tool, judge))
    if not findings and not successes:
        raise NotApplicable(
            f"no generated call of {tool.name!r} succeeded (each got isError or an error): "
            "no structuredContent to validate"
        )
    yield from findings


@check("MCP-CALL-003")
def invalid_arguments_refused(ctx: McpContext) -> Iterator[Finding]:
    yield from _search_invalid(ctx, "a success result", lambda r: r.succeeded)


@check("MCP-CALL-004")
def input_errors_as_results(ctx: McpContext) -> Iterator[Finding]:
    yield from _search_invalid(ctx, "a JSON-RPC error, not isError", lambda r: r.error is not None)


@check("MCP-CALL-005")
def unknown_tool_refused(ctx: McpContext) -> Iterator[Finding]:
    reply = _unknown_tool_reply(ctx)
    if reply.response is None or reply.succeeded:
        yield ctx.answered(f"{UNKNOWN_CALL}, got", reply, "/params/name")


@check("MCP-CALL-006")
def unknown_tool_is_a_protocol_error(ctx: McpContext) -> Iterator[Finding]:
    reply = _unknown_tool_reply(ctx)
    if reply.response is None or reply.succeeded:
        raise NotApplicable(f"the call of {UNKNOWN_TOOL!r} was not refused at all (MCP-CALL-005)")
    code = reply.error.get("code") if reply.error is not None else None
    if code != INVALID_PARAMS:
        got = "an isError result" if reply.error is None else f"a JSON-RPC error of code {code}"
        yield ctx.answered(f"{UNKNOWN_CALL}, got {got}, not a -32602 error", reply, "/params/name")


@check("MCP-CALL-007")
def working_calls_end(ctx: McpContext) -> Iterator[Finding]:
    tool = _tool(ctx)
    for called in _calls_of(ctx, tool):
        if not called.working:
            continue
        yield ctx.server_finding(
            f"tool {called.tool!r} was still at work {called.seconds:g} s after the call, "
            f"sending progress, when the kit cancelled it (arguments "
            f"{shown(called.arguments)})\n"
            f"{_reproduction(ctx, tool, called.arguments, called.got)}",
            f"{tool.pointer}/inputSchema",
        )
        return


@check("MCP-SEC-003")
def secrets_stay_in(ctx: McpContext) -> Iterator[Finding]:
    tool = _tool(ctx)
    given = ctx.plugin.secrets()
    if not given:
        raise NotApplicable(
            "the server is given no secret to keep: its env has no credential-like variable "
            "(a name with KEY, TOKEN, SECRET, ...) of 8 characters or more; give it a test "
            "token there to have results searched for it"
        )
    for called in _calls_of(ctx, tool):
        if not called.leaked:
            continue
        leaked = called.leaked
        values = " and ".join(
            f"the value of the environment variable {v}, {leaked[v].encoding},"
            for v in sorted(leaked)
        )
        yield ctx.server_finding(
            f"tool {called.tool!r} returned {values} for arguments {shown(called.arguments)}\n"
            f"{_reproduction(ctx, tool, called.arguments, called.got)}",
            tool.pointer,
        )
        return
