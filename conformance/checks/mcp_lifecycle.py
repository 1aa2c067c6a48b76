"""An MCP server's session from launch to exit (spec: mcp.md#opening-a-session): the era it
opens, the stdio wire, and the utilities it declares. Read from the lifecycle probe, and from
a 2025-11-25 session for the rules of that revision only.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

from conformance.checks.mcp import McpContext, check
from conformance.findings import Finding, NotApplicable, shown
from conformance.mcp.services import PROBE_IDS, UNKNOWN_VERSION, Probe
from conformance.mcp.session import Session
from conformance.mcp.wire import Reply, Wire, same_id
from plugin_spec import mcp
from plugin_spec.framing import MAX_FRAME_BYTES
from plugin_spec.json_types import JsonObject, JsonValue
from plugin_spec.jsonrpc import INVALID_PARAMS
from plugin_spec.line_depth import MAX_DEPTH

DEEP_FIX = (
    f"Answer with results nested at most {MAX_DEPTH} levels deep (the MCP Python SDK's "
    "reader stops near 200): clients refuse a deeper line unread and the call fails; "
    "flatten the structure."
)
LONG_FIX = (
    f"End every message with a newline and keep each line under {MAX_FRAME_BYTES} bytes: "
    "return large data as a resource link or in pages, not in one line."
)


def _probe(ctx: McpContext) -> Probe:
    ctx.sessions.require_session()
    return ctx.sessions.probe


def _legacy(ctx: McpContext) -> Session:
    """The 2025-11-25 session, for the rules only that revision has."""
    ctx.sessions.require_session()
    return ctx.sessions.require_legacy()


def _note(ctx: McpContext, wire: Wire) -> str:
    """Where the transcript of wire is saved for this requirement, and how to replay it."""
    return ctx.sessions.transcript_note(wire, ctx.requirement.id)


@check("MCP-LIF-001")
def session_opens(ctx: McpContext) -> Iterator[Finding]:
    server = ctx.plugin
    if server.load_error is not None:
        yield ctx.server_finding(server.load_error.message, fix=server.load_error.fix)
        return
    opening = server.opening
    assert opening is not None
    info, caps = opening.server_info, opening.result.get("capabilities")
    named = (
        isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
    )
    where = "/result/_meta" if opening.era == mcp.MODERN else "/result/serverInfo"
    opened = f"the {opening.era} session opened without"
    yield from ctx.expect(named, f"{opened} serverInfo {{name, version}}", info, where)
    yield from ctx.expect(
        isinstance(caps, dict), f"{opened} a capabilities object", caps, "/result/capabilities"
    )


@check("MCP-LIF-002")
def version_negotiated(ctx: McpContext) -> Iterator[Finding]:
    services = ctx.sessions
    legacy = _legacy(ctx)
    answered = legacy.opening.result.get("protocolVersion")
    if answered != mcp.LEGACY:
        yield ctx.server_finding(
            f"offered {mcp.LEGACY}, which it speaks, the server answered protocolVersion "
            f"{shown(answered)}",
            "/result/protocolVersion",
        )
    reply, alive = services.unknown_version
    version = reply.result.get("protocolVersion") if isinstance(reply.result, dict) else None
    offered = f"offered protocolVersion {UNKNOWN_VERSION!r}, the server"
    if not alive:
        yield ctx.answered(f"{offered} exited", reply)
    elif reply.response is None or (reply.ok and version not in mcp.HANDSHAKE_VERSIONS):
        yield ctx.answered(
            f"{offered} answered neither a version initialize can open nor an error",
            reply,
            "/result/protocolVersion",
        )


@check("MCP-LIF-003")
def capabilities_declared(ctx: McpContext) -> Iterator[Finding]:
    server = ctx.plugin
    probe = _probe(ctx)
    capabilities = probe.opening.capabilities
    yield from ctx.expect(
        not server.tools or isinstance(capabilities.get("tools"), dict),
        f"tools/list answered {len(server.tools)} tool(s), but the capabilities do not "
        "declare tools",
        capabilities,
        "/result/capabilities",
    )
    logged = next((m for m in _received(probe) if m.get("method") == mcp.LOG_MESSAGE), None)
    yield from ctx.expect(
        logged is None or isinstance(capabilities.get("logging"), dict),
        f"the server sent {mcp.LOG_MESSAGE} without declaring logging",
        logged,
        "/result/capabilities",
    )


@check("MCP-LIF-004")
def exits_on_eof(ctx: McpContext) -> Iterator[Finding]:
    probe = _probe(ctx)
    shutdown = probe.shutdown
    if shutdown is not None and shutdown.by != "eof":
        yield ctx.server_finding(f"stdin closed: the server was {shutdown.describe()}")


@check("MCP-ERA-001")
def survives_the_probe(ctx: McpContext) -> Iterator[Finding]:
    server = ctx.plugin
    if server.era == mcp.MODERN:
        raise NotApplicable("the server speaks 2026-07-28: it answered server/discover")
    if server.probe_killed is not None:
        yield ctx.server_finding(
            f"the server exited on the first {mcp.DISCOVER}, so a dual-era client cannot "
            f"follow with initialize: {server.probe_killed.describe()}",
        )


@check("MCP-ERA-002")
def modern_envelope(ctx: McpContext) -> Iterator[Finding]:
    server, services = ctx.plugin, ctx.sessions
    services.require_session()
    if server.era != mcp.MODERN:
        raise NotApplicable("the server speaks 2025-11-25 only: no 2026-07-28 envelope to check")
    opening = server.opening
    assert opening is not None
    versions = opening.result.get("supportedVersions")
    yield from ctx.expect(
        isinstance(versions, list) and all(isinstance(v, str) for v in versions),
        "the DiscoverResult's supportedVersions is not a list of versions",
        versions,
        "/result/supportedVersions",
    )
    session = services.session
    bare = session.wire.request(mcp.TOOLS_LIST, {})
    yield from _refused(
        ctx,
        "tools/list without the _meta protocol version",
        bare,
        INVALID_PARAMS,
        "/params/_meta",
        fix=f'Refuse a request without params._meta "{mcp.META_VERSION}" with -32602.',
    )
    meta = {**mcp.modern_meta(UNKNOWN_VERSION)}
    wrong = session.wire.request(mcp.TOOLS_LIST, {"_meta": meta})
    yield from _refused(
        ctx,
        f"tools/list at protocol version {UNKNOWN_VERSION!r}",
        wrong,
        mcp.UNSUPPORTED_VERSION,
        "/params/_meta",
    )


@check("MCP-STD-001")
def stdout_carries_only_messages(ctx: McpContext) -> Iterator[Finding]:
    probe = _probe(ctx)
    wire = probe.wire
    if wire.stray_count:
        lines = "\n".join(
            f"  line at {f.at:.2f} s: {shown(f.text)} ({why})" for f, why in wire.strays
        )
        yield ctx.server_finding(
            f"{wire.stray_count} stdout line(s) of the probe's session are not one JSON-RPC "
            f"message:\n{lines}\n{_note(ctx, probe.wire)}",
        )
    services = ctx.sessions
    services.progress_seen()  # one call of each tool: its answer is read here too
    refused = [w for w in services.wires() if w.refused]
    if refused:
        first = refused[0]
        yield ctx.server_finding(
            f"the server sent {first.refused}, which clients refuse unread: the request it "
            f"answered failed and the kit stopped the server ({len(refused)} of the run's "
            f"{len(services.wires())} session(s) ended so)\n"
            f"{_note(ctx, first)}",
            fix=DEEP_FIX if first.refused_depth else LONG_FIX,
        )


@check("MCP-STD-002")
def ids_echoed(ctx: McpContext) -> Iterator[Finding]:
    probe = _probe(ctx)
    for kind, reply in probe.ids.items():
        if reply.response is None:
            continue  # an unanswered tools/list is the listing's finding, not the id's
        got, sent = reply.response.get("id"), PROBE_IDS[kind]
        if type(got) is not type(sent) or got != sent:
            yield ctx.server_finding(
                f"a request with the {kind} id {json.dumps(sent)} was answered with id "
                f"{json.dumps(got)}\n{_note(ctx, probe.wire)}",
                "/id",
            )


@check("MCP-STD-003")
def notifications_unanswered(ctx: McpContext) -> Iterator[Finding]:
    probe = _probe(ctx)
    wire = probe.wire
    answers = _unrequested_responses(wire)
    legacy = ctx.sessions.legacy if probe.opening.era == mcp.MODERN else None
    if not answers and legacy is not None:
        # A modern probe sends no notifications/initialized: the 2025-11-25 session does.
        legacy.wire.quiet(ctx.sessions.deadlines.quiet)
        wire = legacy.wire
        answers = _unrequested_responses(wire)
    if answers:
        yield ctx.server_finding(
            f"the server answered notifications: got: {shown(answers[0])}\n{_note(ctx, wire)}",
        )


@check("MCP-STD-004")
def results_match_the_schema(ctx: McpContext) -> Iterator[Finding]:
    from mcp_types.methods import validate_server_result
    from pydantic import ValidationError

    services = ctx.sessions
    services.require_session()
    services.progress_seen()  # one call of each tool, so that tools/call results are judged
    reported: set[tuple[str, str]] = set()
    for wire in services.wires():
        if wire.version is None:
            continue
        for method, response in _answered(wire):
            # validate_server_result is typed for a Mapping, but pydantic judges any value: a
            # result that is not an object is this requirement's finding too
            result: Any = response["result"]
            try:
                validate_server_result(method, wire.version, result)
            except KeyError:
                continue  # no such result in this revision: the request's error is its finding
            except (ValidationError, TypeError, AttributeError) as exc:
                problem = _first_error(method, exc)
                if not problem or (method, problem) in reported:
                    continue
                reported.add((method, problem))
                yield ctx.server_finding(
                    f"the {method} result (protocol {wire.version}) does not match its "
                    f"schema: {problem}\ngot: {shown(result)}\n"
                    f"{_note(ctx, wire)}",
                    "/result",
                )


def _answered(wire: Wire) -> Iterator[tuple[str, JsonObject]]:
    """(method, response) for each request the kit sent on the wire and got a result for."""
    pending: dict[str, str] = {}
    for frame in wire.frames:
        message = frame.message
        if message is None or "id" not in message:
            continue
        key = json.dumps(message["id"])
        if frame.direction == "sent" and isinstance(method := message.get("method"), str):
            pending[key] = method
        elif frame.direction == "received" and "result" in message and key in pending:
            yield pending.pop(key), message


# Parts of results that requirements of their own judge: a defect there is their finding.
OWNED = {
    mcp.INITIALIZE: ("/serverInfo", "/capabilities", "/protocolVersion"),  # LIF-001, LIF-002
    mcp.DISCOVER: ("/capabilities", "/supportedVersions", "/_meta"),  # LIF-001, ERA-002
    mcp.TOOLS_LIST: ("/tools/", "/nextCursor"),  # the listing suite
}


def _first_error(method: str, exc: Exception) -> str:
    """The first schema error outside the parts other requirements own ("" if none)."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return str(exc)
    owned = OWNED.get(method, ())
    for error in exc.errors():
        where = "/" + "/".join(str(p) for p in error["loc"])
        if not any(where == o.rstrip("/") or where.startswith(o) for o in owned):
            return f"{where}: {error['msg']}"
    return ""


@check("MCP-UTL-001")
def ping_answered(ctx: McpContext) -> Iterator[Finding]:
    session = _legacy(ctx)
    reply = session.request(mcp.PING)
    if reply.result != {}:
        yield ctx.server_finding(
            f"ping should get an empty result; got: {reply.describe()}\n{_note(ctx, session.wire)}",
        )


@check("MCP-UTL-002")
def log_levels_checked(ctx: McpContext) -> Iterator[Finding]:
    session = _legacy(ctx)
    if not isinstance(session.opening.capabilities.get("logging"), dict):
        raise NotApplicable("the server does not declare the logging capability")
    for level in mcp.LOG_LEVELS:
        reply = session.request(mcp.SET_LEVEL, {"level": level})
        if not reply.ok:
            yield ctx.answered(f"logging/setLevel {level!r} was refused", reply, "/params/level")
    reply = session.request(mcp.SET_LEVEL, {"level": "verbose"})
    yield from _refused(
        ctx, "logging/setLevel 'verbose', not a level,", reply, INVALID_PARAMS, "/params/level"
    )


@check("MCP-UTL-003")
def cancellation_survived(ctx: McpContext) -> Iterator[Finding]:
    probe = _probe(ctx)
    reply = probe.after_cancel
    if reply is not None and not reply.ok:
        yield ctx.server_finding(
            f"after notifications/cancelled, the next tools/list got: {reply.describe()}\n"
            f"{_note(ctx, probe.wire)}",
        )


@check("MCP-UTL-004")
def progress_well_formed(ctx: McpContext) -> Iterator[Finding]:
    services = ctx.sessions
    services.require_session()
    progress = services.progress_seen()
    if not progress:
        raise NotApplicable("no call was answered with progress notifications")
    for seen in progress:
        problem = _progress_problem(seen.token, seen.values, seen.late)
        if problem:
            yield ctx.server_finding(problem, "/params/progress")


def _progress_problem(token: int, values: list[tuple[JsonValue, JsonValue]], late: bool) -> str:
    if any(v[0] != token or isinstance(v[0], bool) for v in values):
        wrong = next(v[0] for v in values if v[0] != token or isinstance(v[0], bool))
        return f"a call with progressToken {token!r} got progress for token {wrong!r}"
    got = [v[1] for v in values]
    numbers = [n for n in got if isinstance(n, int | float)]
    if len(numbers) != len(got):
        return f"progress values are not numbers: got: {shown(got)}"
    if any(b <= a for a, b in itertools.pairwise(numbers)):
        return f"progress for token {token!r} did not increase: {shown(numbers)}"
    if late:
        return f"progress for token {token!r} came after the call's response"
    return ""


def _code(reply: Reply) -> JsonValue:
    return reply.error.get("code") if reply.error else None


def _refused(
    ctx: McpContext, asked: str, reply: Reply, code: int, at: str, fix: str = ""
) -> Iterator[Finding]:
    """A finding unless the request `asked` names got an error of code: a request that the
    rules say the server must refuse so."""
    if _code(reply) != code:
        yield ctx.answered(f"{asked} should get {code}; got", reply, at, fix)


def _unrequested_responses(wire: Wire) -> list[JsonObject]:
    """The responses of a whole session that answer no request the kit sent: an id of null or
    of no request (the answer to a notification, notifications/initialized included, whenever
    it came). An id echoed as another type still answers its request (MCP-STD-002's finding,
    not this one)."""
    sent = [
        m["id"]
        for f in wire.frames
        if f.direction == "sent" and (m := f.message) is not None and "id" in m
    ]
    received = [m for f in wire.received() if (m := f.message) is not None]
    return [
        m
        for m in received
        if "method" not in m
        and ("result" in m or "error" in m)
        and (m.get("id") is None or not any(same_id(m["id"], s) for s in sent))
    ]


def _received(probe: Probe) -> list[JsonObject]:
    return [m for f in probe.wire.received() if (m := f.message) is not None]
