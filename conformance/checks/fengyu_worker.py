"""Protocol checks of a FengYu worker (spec: fengyu-worker.md), read from one probe transcript."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from conformance.checks.fengyu import FengYuContext, check
from conformance.fengyu.artifact_candidates import rename_fix
from conformance.fengyu.probe import (
    BIG_FRAME_ID,
    CRLF_ID,
    HANDSHAKE_ID,
    INVALID_REQUEST_ID,
    PROBE_IDS,
    UNKNOWN_METHOD_ID,
    Exchange,
    Step,
    Transcript,
    handshake_result,
    id_key,
    step_method,
)
from conformance.fengyu.raw_worker import Line
from conformance.fengyu.services import WorkerServices
from conformance.findings import Finding, NotApplicable, shown
from plugin_spec.fengyu_runtime import (
    CANCEL_METHOD,
    HANDSHAKE_METHOD,
    HANDSHAKE_SECONDS,
    LOG_LEVELS,
    LOG_PREFIX,
    METHOD_NOT_FOUND_CODE,
    SET_LEVEL_METHOD,
    UnsupportedRuntime,
    error_data_code,
    fengyu_launch,
    handshake_problems,
)
from plugin_spec.jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR
from plugin_spec.line_depth import MAX_DEPTH, TOO_DEEP
from reference_host.process.connection import NO_RESULT
from reference_host.process.launch import EXECUTABLE, artifact_problem


def transcript(ctx: FengYuContext, *, need_start: bool = True) -> Transcript:
    """The plugin's probe transcript; NotApplicable when there is no worker to check."""
    workers = _workers(ctx)
    if workers.launch_error is not None:
        if need_start:
            raise NotApplicable(workers.start_failure())
        raise _LaunchFailed(workers.launch_error)
    result = workers.transcript()
    if need_start and not result.exchanges[Step.START].answered:
        raise NotApplicable(workers.start_failure())
    return result


def _workers(ctx: FengYuContext) -> WorkerServices:
    if ctx.workers is None or not ctx.workers.declared:
        raise NotApplicable("the plugin declares no worker")
    return ctx.workers


class _LaunchFailed(Exception):
    pass


def finding(ctx: FengYuContext, problem: str, exchange: Exchange | None, fix: str = "") -> Finding:
    detail = f"{problem}\n{exchange.describe()}" if exchange else problem
    workers = _workers(ctx)
    return ctx.finding(f"{detail}\nworker: {workers.command}", workers.display, fix=fix)


@check("FY-WRK-001")
def worker_starts(ctx: FengYuContext) -> Iterator[Finding]:
    if _workers(ctx).missing_artifact:
        raise NotApplicable(_workers(ctx).start_failure())
    try:
        start = transcript(ctx, need_start=False).exchanges[Step.START]
    except _LaunchFailed as exc:
        yield ctx.finding(str(exc), "backend/")
        return
    if not start.answered:
        problem = "the worker did not answer its first request"
        yield finding(ctx, problem, start, _start_fix(start))


def _start_fix(start: Exchange) -> str:
    """A worker that runs but does not answer: endless output, a crash, or silence."""
    if any(line.overlong for line in start.replies):
        return (
            "end each response with a newline: the host reads stdout line by line, and a "
            "line past 16 MiB is never read"
        )
    if start.stderr:
        return (
            "the worker's stderr, shown in the finding above, says why it stopped; fix that "
            "and keep serving until stdin closes"
        )
    return (
        "read requests from stdin line by line and write each response as one JSON line to "
        "stdout, flushed at once, without waiting for more input"
    )


def _single_error(
    ctx: FengYuContext, name: Step, codes: tuple[int | str, ...], ids: tuple[Any, ...] | None
) -> Iterator[Finding]:
    """One error response with one of ids (None: any id, or none) and one of codes: a
    JSON-RPC code, or a string that its `data.code` may carry instead (FengYu's Python SDK
    answers an unknown method with -32000 and data.code METHOD_NOT_FOUND)."""
    exchange = transcript(ctx).exchanges[name]
    errors = [line.message.get("error") for line in exchange.replies if line.message]
    replies = exchange.replies
    ok = (
        exchange.answered
        and len(replies) == 1
        and replies[0].message is not None
        and isinstance(errors[0], dict)
        and (errors[0].get("code") in codes or error_data_code(errors[0]) in codes)
        and (ids is None or _same_id(replies[0].message, ids))
    )
    if not ok:
        expected_ids = (
            "any (FY-WRK-022 judges it)"
            if ids is None
            else " or ".join("left out" if i is NO_ID else repr(i) for i in ids)
        )
        expected_codes = " or ".join(
            f"data.code {c}" if isinstance(c, str) else str(c) for c in codes
        )
        yield finding(
            ctx,
            f"expected one error response with code {expected_codes} and id {expected_ids}",
            exchange,
        )


@check("FY-WRK-002")
def parse_error(ctx: FengYuContext) -> Iterator[Finding]:
    # FengYu's Python SDK answers unparsable input with -32600, as an invalid request, and
    # with the id of the request before it; its Go SDK leaves the null id out (omitempty).
    # FengYu never sends such a line: the id is FY-WRK-022's, a SHOULD.
    yield from _single_error(ctx, Step.PARSE_ERROR, (PARSE_ERROR, INVALID_REQUEST), None)


@check("FY-WRK-003")
def invalid_request(ctx: FengYuContext) -> Iterator[Finding]:
    # FengYu's Go SDK leaves the id out (omitempty); FengYu never sends such a request, and
    # logs and ignores an answer without id: a left-out id is FY-WRK-022's, a SHOULD.
    yield from _single_error(
        ctx, Step.INVALID_REQUEST, (INVALID_REQUEST,), (INVALID_REQUEST_ID, None, NO_ID)
    )


GO_NO_ID = (
    "FengYu's Go SDK writes it so: its response's id is `any` with omitempty, so a nil id is "
    "dropped"
)
ERROR_ID_FIXES = {
    "left out": (
        'write the id member always: "id": null when the request\'s id cannot be read, else '
        f"the request's id ({GO_NO_ID}; declare the field without omitempty)"
    ),
    "stale": (
        'answer a line that is not JSON with "id": null: FengYu\'s Python SDK 2.1.0 sends the '
        "id of the request read before it (its `request` variable is left over from the last "
        "loop turn), which a host that has that call pending takes for its answer; reset the "
        "request before parsing each line"
    ),
}


@check("FY-WRK-022")
def error_ids(ctx: FengYuContext) -> Iterator[Finding]:
    """The id of the error to an unreadable line or an invalid request, as JSON-RPC asks:
    present, null where the request's id cannot be read. FengYu never sends such lines, so a
    wrong id costs nothing there: FY-WRK-002 and FY-WRK-003 accept any, this warns."""
    exchanges = transcript(ctx).exchanges
    judged = False
    for name, allowed in (
        (Step.PARSE_ERROR, (None,)),
        (Step.INVALID_REQUEST, (INVALID_REQUEST_ID, None)),
    ):
        exchange = exchanges[name]
        messages = [line.message for line in exchange.replies if line.message is not None]
        if len(messages) != 1 or not isinstance(messages[0].get("error"), dict):
            continue  # FY-WRK-002's or FY-WRK-003's finding
        judged = True
        if _same_id(messages[0], allowed):
            continue
        kind = "left out" if "id" not in messages[0] else "stale"
        got = "no id member" if kind == "left out" else f"id {shown(messages[0]['id'])}"
        expected = " or ".join(map(shown, allowed))
        yield finding(
            ctx,
            f"the error carries {got}; JSON-RPC asks for id {expected}",
            exchange,
            ERROR_ID_FIXES[kind],
        )
    if not judged:
        raise NotApplicable("no single error answer to judge (FY-WRK-002, FY-WRK-003)")


@check("FY-WRK-004")
def unknown_method(ctx: FengYuContext) -> Iterator[Finding]:
    yield from _single_error(
        ctx, Step.UNKNOWN_METHOD, (METHOD_NOT_FOUND, METHOD_NOT_FOUND_CODE), (UNKNOWN_METHOD_ID,)
    )


def _silent(ctx: FengYuContext, name: Step, what: str, fix: str = "") -> Iterator[Finding]:
    exchange = transcript(ctx).exchanges[name]
    if exchange.replies or not exchange.answered:
        yield finding(
            ctx,
            f"{what} must get no response, and the worker must go on answering",
            exchange,
            fix,
        )


@check("FY-WRK-005")
def no_reply_to_cancel(ctx: FengYuContext) -> Iterator[Finding]:
    """The notifications FengYu sends: `$/cancelRequest` here, setLevel under FY-WRK-009."""
    yield from _silent(ctx, Step.CANCEL, f"{CANCEL_METHOD}, a notification FengYu sends,")


@check("FY-WRK-024")
def no_reply_to_other_notifications(ctx: FengYuContext) -> Iterator[Finding]:
    """Notifications FengYu never sends: FengYu's Go SDK answers them (-32601 for an unknown
    method, -32000 for a failing handler), and FengYu would log and drop the answer."""
    yield from _silent(
        ctx,
        Step.NOTIFICATIONS,
        "a notification (no id member), of a known or an unknown method,",
        "write nothing for a message without an id member, not even an error (FengYu's Go "
        "SDK 2.1.0 answers an unknown notification with -32601 and a failing one with "
        "-32000, without id): JSON-RPC forbids any reply to a notification",
    )


@check("FY-WRK-009")
def reserved_set_level(ctx: FengYuContext) -> Iterator[Finding]:
    yield from _silent(ctx, Step.SET_LEVEL, SET_LEVEL_METHOD)


def _ids_got(exchange: Exchange) -> list[Any]:
    return [
        line.message.get("id", "<missing>") if line.message else "<not JSON>"
        for line in exchange.replies
    ]


def _as_double(value: Any) -> Any:
    """The id as a reader of numbers as doubles has it: 2^53 + 1 becomes 2^53, of either
    JSON spelling (FengYu's Go SDK writes 9007199254740992, Python 9007199254740992.0)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return value


@check("FY-WRK-006")
def ids_echoed(ctx: FengYuContext) -> Iterator[Finding]:
    """Answers are matched by id, not by order: JSON-RPC allows any order, and FengYu's Go
    SDK answers each request from its own goroutine. An integer beyond 2^53 may come back
    rounded to a double here: FengYu's ids are strings, FY-WRK-023 warns of it."""
    exchange = transcript(ctx).exchanges[Step.IDS]
    got = _ids_got(exchange)
    expected = list(PROBE_IDS)
    keys = [id_key(_as_double(i) if i == BIG_ID else i) for i in expected]
    seen = [id_key(_as_double(i) if _as_double(i) == float(BIG_ID) else i) for i in got]
    if not exchange.answered or sorted(seen) != sorted(keys):
        yield finding(
            ctx,
            f"expected responses with ids {' and '.join(map(repr, expected))} (in any order), "
            f"got ids {got!r}",
            exchange,
        )


# The probe's integer id beyond 2^53, which a reader of numbers as doubles rounds.
BIG_ID = next(i for i in PROBE_IDS if isinstance(i, int) and i > 2**53)


@check("FY-WRK-023")
def big_ids_echoed(ctx: FengYuContext) -> Iterator[Finding]:
    exchange = transcript(ctx).exchanges[Step.IDS]
    got = _ids_got(exchange)
    if any(id_key(i) == id_key(BIG_ID) for i in got):
        return
    rounded = [i for i in got if i != BIG_ID and _as_double(i) == float(BIG_ID)]
    if not rounded:
        raise NotApplicable(f"no response with id {BIG_ID} or a rounding of it (FY-WRK-006)")
    yield finding(
        ctx,
        f"the request with id {BIG_ID} was answered with id {shown(rounded[0])}: the id went "
        "through a double",
        exchange,
        "keep the id member as it came (a json.Number, a long or the raw text), not as a "
        "double: FengYu's Go SDK 2.1.0 reads ids into float64, which holds integers up to "
        "2^53 only; FengYu's own ids are strings, so only other hosts are hit",
    )


SHOWN_STRAY_LINES = 5  # distinct stray stdout lines reported; the rest are counted
DEEP_FIX = (
    f"answer with results nested at most {MAX_DEPTH} levels deep: hosts refuse a deeper line "
    "unread (its call fails), as recursive JSON readers give up on it; flatten the structure"
)

# An id left out where it could only have been null (FengYu's Go SDK drops a nil id).
NO_ID = object()

# Exchanges of notifications: a JSON-RPC object printed there is a reply to a notification,
# FY-WRK-005's, FY-WRK-009's and FY-WRK-024's defect, not a stray stdout line.
NOTIFICATION_EXCHANGES = {Step.NOTIFICATIONS, Step.SET_LEVEL, Step.CANCEL}
# Exchanges whose error may leave its id out, as FengYu's Go SDK writes it: FY-WRK-022's.
ID_LESS_ERROR_EXCHANGES = {Step.PARSE_ERROR, Step.INVALID_REQUEST}


@check("FY-WRK-007")
def stdout_discipline(ctx: FengYuContext) -> Iterator[Finding]:
    """Every stdout line from start to exit, in every suite: the probe's, then those the tool
    and host workers wrote (services.py), which is why this item runs last. Those are many
    calls: each distinct line is reported once, where it was first seen, the first few only."""
    result = transcript(ctx)
    for name, line in result.all_lines():
        if name in NOTIFICATION_EXCHANGES and _json_rpc_object(line):
            continue
        if name in ID_LESS_ERROR_EXCHANGES and _error_without_id(line):
            continue  # FY-WRK-022 judges it: FengYu's Go SDK writes it so, FengYu reads past it
        if (problem := line.problem) and problem != NO_RESULT:
            where = f"protocol probe, during step {str(name)!r}"
            yield _stray(ctx, where, problem, line.text)
    for when, line in result.later_lines:
        if (problem := line.problem) and problem != NO_RESULT:
            yield _stray(ctx, f"protocol probe, {when}", problem, line.text)
    # The tool and host suites notify only `$/cancelRequest`: where the probe saw it answered,
    # an id-less JSON-RPC object there is that answer, FY-WRK-005's finding.
    cancel = result.exchanges.get(Step.CANCEL)
    cancel_answered = cancel is not None and bool(cancel.replies)
    found: dict[tuple[str, str], list[str]] = {}
    for stray in _workers(ctx).stray_stdout():
        if stray.what.problem == NO_RESULT:
            continue  # FY-WRK-021's: FengYu reads it as a null result
        if cancel_answered and _id_less_json_rpc(stray.what.line):
            continue
        found.setdefault((stray.what.problem, stray.what.line), []).append(stray.step)
    for (problem, text), steps in list(found.items())[:SHOWN_STRAY_LINES]:
        yield _stray(ctx, steps[0], problem, text, _again(steps))
    if len(found) > SHOWN_STRAY_LINES:
        rest = len(found) - SHOWN_STRAY_LINES
        yield finding(ctx, f"and {rest} more distinct stdout lines that are not responses", None)


NO_RESULT_FIX = (
    'write "result": null, or better a result object, when there is nothing to return: '
    "FengYu's Go SDK 2.1.0 leaves result out when a handler returns nil (`return nil, nil`: "
    "the `result any` field has omitempty), its Java SDK when a handler returns null (Gson "
    "drops nulls); FengYu reads the answer as a null result and checks it against the "
    "method's outputSchema (FY-TOOL-001), other JSON-RPC clients may not read it at all"
)


@check("FY-WRK-021")
def responses_carry_result(ctx: FengYuContext) -> Iterator[Finding]:
    """Responses with neither result nor error, from the probe and the tool and host
    workers alike (after FY-WRK-007 in the catalog: the same lines, its workers ended);
    a reply to a notification is the notification items' finding."""
    result = transcript(ctx)
    found: dict[str, list[str]] = {}
    for name, line in result.all_lines():
        if name not in NOTIFICATION_EXCHANGES and line.problem == NO_RESULT:
            found.setdefault(line.text, []).append(f"protocol probe, during step {str(name)!r}")
    for when, line in result.later_lines:
        if line.problem == NO_RESULT:
            found.setdefault(line.text, []).append(f"protocol probe, {when}")
    for stray in _workers(ctx).stray_stdout():
        if stray.what.problem == NO_RESULT:
            found.setdefault(stray.what.line, []).append(stray.step)
    for text, steps in list(found.items())[:SHOWN_STRAY_LINES]:
        yield finding(
            ctx,
            f"in the {steps[0]}: {NO_RESULT}: {text[:300]!r}{_again(steps)}",
            None,
            NO_RESULT_FIX,
        )
    if len(found) > SHOWN_STRAY_LINES:
        rest = len(found) - SHOWN_STRAY_LINES
        yield finding(ctx, f"and {rest} more distinct responses without result", None)


def _stray(ctx: FengYuContext, where: str, problem: str, text: str, again: str = "") -> Finding:
    fix = DEEP_FIX if problem == TOO_DEEP else ""
    return finding(ctx, f"in the {where}: {problem}: {text[:300]!r}{again}", None, fix)


@check("FY-WRK-008")
def exits_on_eof(ctx: FengYuContext) -> Iterator[Finding]:
    result = transcript(ctx)
    if result.exit_after_eof is None:
        waited = f"{result.eof_wait:g} s after its stdin closed"
        yield finding(ctx, f"the worker was still running {waited} (it was killed)", None)


@check("FY-WRK-010")
def framing(ctx: FengYuContext) -> Iterator[Finding]:
    exchanges = transcript(ctx).exchanges
    for name, request_id, what in (
        (Step.CRLF, CRLF_ID, "a request ending in \\r\\n"),
        (Step.BIG_FRAME, BIG_FRAME_ID, "a 4 MiB request"),
    ):
        exchange = exchanges[name]
        ids = [line.message.get("id") for line in exchange.replies if line.message]
        if not exchange.answered or ids != [request_id]:
            yield finding(ctx, f"{what} got no response with id {request_id!r}", exchange)


@check("FY-WRK-011")
def declared_methods_implemented(ctx: FengYuContext) -> Iterator[Finding]:
    for name, exchange in transcript(ctx).exchanges.items():
        method = step_method(name)
        if method is None:
            continue
        errors = [
            error
            for line in exchange.replies
            if line.message and isinstance(error := line.message.get("error"), dict)
        ]
        if any(
            e.get("code") == METHOD_NOT_FOUND or error_data_code(e) == METHOD_NOT_FOUND_CODE
            for e in errors
        ):
            yield finding(
                ctx,
                f"declared method {method!r} answers method not found "
                "(-32601 or data.code METHOD_NOT_FOUND)",
                exchange,
            )


def _again(steps: list[str]) -> str:
    """Where a line was seen after its first time, by suite."""
    if len(steps) < 2:
        return ""
    suites = ", ".join(dict.fromkeys(step.split(",")[0] for step in steps[1:]))
    return f" (seen {len(steps) - 1} more time{'s' if len(steps) > 2 else ''}: {suites})"


def _same_id(message: dict[str, Any], ids: tuple[Any, ...]) -> bool:
    value = message.get("id", NO_ID)
    return any(value is i if i is NO_ID else value == i and type(value) is type(i) for i in ids)


def _error_without_id(line: Line) -> bool:
    message = line.message
    return message is not None and "id" not in message and "error" in message


def _id_less_json_rpc(text: str) -> bool:
    line = Line.parse(text.encode())
    return _json_rpc_object(line) and line.message is not None and "id" not in line.message


def _handshake_without_result(exchange: Exchange) -> bool:
    return any(
        line.message.get("id") == HANDSHAKE_ID
        and "result" not in line.message
        and line.message.get("error") is None
        for line in exchange.replies
        if line.message is not None
    )


def _json_rpc_object(line: Line) -> bool:
    return line.message is not None and line.message.get("jsonrpc") == "2.0"


@check("FY-WRK-012")
def runtime_artifact(ctx: FengYuContext) -> Iterator[Finding]:
    workers = _workers(ctx)
    try:
        launch = fengyu_launch(workers.plugin.data, os.environ)
    except UnsupportedRuntime as exc:
        raise NotApplicable(f"{exc} (FY-MAN-003)") from None
    problem = artifact_problem(workers.plugin.root, launch)
    if problem is None:
        return
    at = "/backend/runtime" if launch.declared else "/backend"
    if (workers.plugin.root / launch.artifact).is_symlink():
        fix = f"put the worker itself at {launch.artifact}, not a link to it"
        yield ctx.manifest_finding(at, problem, fix=fix)
        return
    if workers.override:
        instead = f"the kit ran --worker-cmd {workers.override!r} for the other checks"
    elif not launch.declared and (workers.plugin.root / EXECUTABLE).is_file():
        instead = "the kit ran backend/worker, its legacy launch, for the other checks"
    else:
        instead = "nothing else can be started"
    fix = (
        rename_fix(workers.plugin.root, launch.runtime, launch.artifact)
        or f"build {launch.artifact} into the package"
        if launch.declared
        else 'declare backend.runtime: "python" with backend/worker.py, or "go" with the '
        "native backend/worker, or build backend/worker.jar"
    )
    yield ctx.manifest_finding(at, f"{problem}; {instead}", fix=fix)


def _greeting(ctx: FengYuContext) -> tuple[Exchange, Any]:
    """The handshake exchange and its result; NotApplicable when FengYu sends none or the
    answer is not there to judge (naming FY-WRK-013)."""
    workers = _workers(ctx)
    spec = workers.spec
    if spec is not None and spec.protocol_version is None:
        raise NotApplicable(
            "the manifest declares no backend.protocolVersion: FengYu greets no legacy package"
        )
    exchange = transcript(ctx).exchanges.get(Step.HANDSHAKE)
    if exchange is None:
        raise NotApplicable("no handshake was sent")
    return exchange, handshake_result(exchange)


def _handshake_problem(ctx: FengYuContext, field: str) -> Iterator[Finding]:
    exchange, (answered, result) = _greeting(ctx)
    if not answered:
        raise NotApplicable(f"the worker does not answer {HANDSHAKE_METHOD} (FY-WRK-013)")
    spec = _workers(ctx).spec
    assert spec is not None and spec.protocol_version is not None
    for name, problem in handshake_problems(result, spec.protocol_version, spec.runtime):
        if name == field or (name == "result" and field == "protocolVersion"):
            yield finding(ctx, f"{HANDSHAKE_METHOD} answered {shown(result)}: {problem}", exchange)


@check("FY-WRK-013")
def handshake_answered(ctx: FengYuContext) -> Iterator[Finding]:
    exchange, (answered, result) = _greeting(ctx)
    if not answered:
        got = f"error {shown(result)}" if result is not None else "no answer"
        if _handshake_without_result(exchange):
            got = "a response with neither result nor error (a null result to FengYu)"
        yield finding(
            ctx,
            f"{HANDSHAKE_METHOD} got {got} within {HANDSHAKE_SECONDS:g} s; FengYu refuses "
            "the worker",
            exchange,
        )


@check("FY-WRK-014")
def handshake_version(ctx: FengYuContext) -> Iterator[Finding]:
    yield from _handshake_problem(ctx, "protocolVersion")


@check("FY-WRK-015")
def handshake_runtime(ctx: FengYuContext) -> Iterator[Finding]:
    yield from _handshake_problem(ctx, "runtime")


@check("FY-WRK-016")
def structured_logs(ctx: FengYuContext) -> Iterator[Finding]:
    logs = transcript(ctx).logs
    if not logs.seen:
        raise NotApplicable(f"the worker wrote no {LOG_PREFIX} line to stderr during the probe")
    for line, problem in logs.malformed:
        yield finding(
            ctx,
            f"a stderr line FengYu cannot read as a log record ({problem}): {line!r}",
            None,
            fix=f"write {LOG_PREFIX} followed by one JSON object with string fields: level "
            f"({', '.join(LOG_LEVELS)}), logger, thread, message and throwable",
        )
