"""Protocol checks of a FengYu worker (spec: fengyu-worker.md), read from one probe transcript."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from conformance.check_registry import CheckContext, check
from conformance.fengyu.artifact_candidates import rename_fix
from conformance.fengyu.probe import (
    BIG_FRAME_ID,
    CRLF_ID,
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
from reference_host.process.launch import EXECUTABLE, artifact_problem


def transcript(ctx: CheckContext, *, need_start: bool = True) -> Transcript:
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


def _workers(ctx: CheckContext) -> WorkerServices:
    if ctx.workers is None or not ctx.workers.declared:
        raise NotApplicable("the plugin declares no worker")
    return ctx.workers


class _LaunchFailed(Exception):
    pass


def finding(ctx: CheckContext, problem: str, exchange: Exchange | None, fix: str = "") -> Finding:
    detail = f"{problem}\n{exchange.describe()}" if exchange else problem
    workers = _workers(ctx)
    return ctx.finding(f"{detail}\nworker: {workers.command}", workers.display, fix=fix)


@check("FY-WRK-001")
def worker_starts(ctx: CheckContext) -> Iterator[Finding]:
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
    ctx: CheckContext, name: Step, codes: tuple[int | str, ...], ids: tuple[Any, ...]
) -> Iterator[Finding]:
    """One error response with one of ids and one of codes: a JSON-RPC code, or a string
    that its `data.code` may carry instead (FengYu's Python SDK answers an unknown method
    with -32000 and data.code METHOD_NOT_FOUND)."""
    exchange = transcript(ctx).exchanges[name]
    errors = [line.message.get("error") for line in exchange.replies if line.message]
    replies = exchange.replies
    ok = (
        exchange.answered
        and len(replies) == 1
        and replies[0].message is not None
        and isinstance(errors[0], dict)
        and (errors[0].get("code") in codes or error_data_code(errors[0]) in codes)
        and _same_id(replies[0].message, ids)
    )
    if not ok:
        expected_ids = " or ".join("left out" if i is NO_ID else repr(i) for i in ids)
        expected_codes = " or ".join(
            f"data.code {c}" if isinstance(c, str) else str(c) for c in codes
        )
        yield finding(
            ctx,
            f"expected one error response with code {expected_codes} and id {expected_ids}",
            exchange,
        )


@check("FY-WRK-002")
def parse_error(ctx: CheckContext) -> Iterator[Finding]:
    # FengYu's Python SDK answers unparsable input with -32600, as an invalid request, and its
    # Go SDK leaves the null id out of the error (Go's omitempty).
    yield from _single_error(ctx, Step.PARSE_ERROR, (PARSE_ERROR, INVALID_REQUEST), (None, NO_ID))


@check("FY-WRK-003")
def invalid_request(ctx: CheckContext) -> Iterator[Finding]:
    yield from _single_error(
        ctx, Step.INVALID_REQUEST, (INVALID_REQUEST,), (INVALID_REQUEST_ID, None)
    )


@check("FY-WRK-004")
def unknown_method(ctx: CheckContext) -> Iterator[Finding]:
    yield from _single_error(
        ctx, Step.UNKNOWN_METHOD, (METHOD_NOT_FOUND, METHOD_NOT_FOUND_CODE), (UNKNOWN_METHOD_ID,)
    )


def _silent(ctx: CheckContext, name: Step, what: str) -> Iterator[Finding]:
    exchange = transcript(ctx).exchanges[name]
    if exchange.replies or not exchange.answered:
        yield finding(
            ctx, f"{what} must get no response, and the worker must go on answering", exchange
        )


@check("FY-WRK-005")
def no_reply_to_notifications(ctx: CheckContext) -> Iterator[Finding]:
    yield from _silent(ctx, Step.NOTIFICATIONS, "a notification")


@check("FY-WRK-009")
def reserved_set_level(ctx: CheckContext) -> Iterator[Finding]:
    yield from _silent(ctx, Step.SET_LEVEL, SET_LEVEL_METHOD)


@check("FY-WRK-006")
def ids_echoed(ctx: CheckContext) -> Iterator[Finding]:
    """Answers are matched by id, not by order: JSON-RPC allows any order, and FengYu's Go
    SDK answers each request from its own goroutine."""
    exchange = transcript(ctx).exchanges[Step.IDS]
    got = [
        line.message.get("id", "<missing>") if line.message else "<not JSON>"
        for line in exchange.replies
    ]
    expected = list(PROBE_IDS)
    if not exchange.answered or sorted(map(id_key, got)) != sorted(map(id_key, expected)):
        yield finding(
            ctx,
            f"expected responses with ids {' and '.join(map(repr, expected))} (in any order), "
            f"got ids {got!r}",
            exchange,
        )


SHOWN_STRAY_LINES = 5  # distinct stray stdout lines reported; the rest are counted
DEEP_FIX = (
    f"answer with results nested at most {MAX_DEPTH} levels deep: hosts refuse a deeper line "
    "unread (its call fails), as recursive JSON readers give up on it; flatten the structure"
)

# An id left out where it could only have been null (FengYu's Go SDK drops a nil id).
NO_ID = object()

# Exchanges of notifications: a JSON-RPC object printed there is a reply to a notification,
# FY-WRK-005's and FY-WRK-009's defect, not a stray stdout line.
NOTIFICATION_EXCHANGES = {Step.NOTIFICATIONS, Step.SET_LEVEL}


@check("FY-WRK-007")
def stdout_discipline(ctx: CheckContext) -> Iterator[Finding]:
    """Every stdout line from start to exit, in every suite: the probe's, then those the tool
    and host workers wrote (services.py), which is why this item runs last. Those are many
    calls: each distinct line is reported once, where it was first seen, the first few only."""
    result = transcript(ctx)
    for name, line in result.all_lines():
        if name in NOTIFICATION_EXCHANGES and _json_rpc_object(line):
            continue
        if name == Step.PARSE_ERROR and _error_without_id(line):
            continue  # FY-WRK-002 judges it: FengYu's Go SDK writes it so, FengYu reads past it
        if problem := line.problem:
            where = f"protocol probe, during step {str(name)!r}"
            yield _stray(ctx, where, problem, line.text)
    for when, line in result.later_lines:
        if problem := line.problem:
            yield _stray(ctx, f"protocol probe, {when}", problem, line.text)
    found: dict[tuple[str, str], list[str]] = {}
    for stray in _workers(ctx).stray_stdout():
        found.setdefault((stray.what.problem, stray.what.line), []).append(stray.step)
    for (problem, text), steps in list(found.items())[:SHOWN_STRAY_LINES]:
        yield _stray(ctx, steps[0], problem, text, _again(steps))
    if len(found) > SHOWN_STRAY_LINES:
        rest = len(found) - SHOWN_STRAY_LINES
        yield finding(ctx, f"and {rest} more distinct stdout lines that are not responses", None)


def _stray(ctx: CheckContext, where: str, problem: str, text: str, again: str = "") -> Finding:
    fix = DEEP_FIX if problem == TOO_DEEP else ""
    return finding(ctx, f"in the {where}: {problem}: {text[:300]!r}{again}", None, fix)


@check("FY-WRK-008")
def exits_on_eof(ctx: CheckContext) -> Iterator[Finding]:
    result = transcript(ctx)
    if result.exit_after_eof is None:
        waited = f"{result.eof_wait:g} s after its stdin closed"
        yield finding(ctx, f"the worker was still running {waited} (it was killed)", None)


@check("FY-WRK-010")
def framing(ctx: CheckContext) -> Iterator[Finding]:
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
def declared_methods_implemented(ctx: CheckContext) -> Iterator[Finding]:
    for name, exchange in transcript(ctx).exchanges.items():
        method = step_method(name)
        if method is None:
            continue
        errors = [
            line.message["error"]
            for line in exchange.replies
            if line.message and isinstance(line.message.get("error"), dict)
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


def _json_rpc_object(line: Line) -> bool:
    return line.message is not None and line.message.get("jsonrpc") == "2.0"


@check("FY-WRK-012")
def runtime_artifact(ctx: CheckContext) -> Iterator[Finding]:
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


def _greeting(ctx: CheckContext) -> tuple[Exchange, Any]:
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


def _handshake_problem(ctx: CheckContext, field: str) -> Iterator[Finding]:
    exchange, (answered, result) = _greeting(ctx)
    if not answered:
        raise NotApplicable(f"the worker does not answer {HANDSHAKE_METHOD} (FY-WRK-013)")
    spec = _workers(ctx).spec
    assert spec is not None and spec.protocol_version is not None
    for name, problem in handshake_problems(result, spec.protocol_version, spec.runtime):
        if name == field or (name == "result" and field == "protocolVersion"):
            yield finding(ctx, f"{HANDSHAKE_METHOD} answered {shown(result)}: {problem}", exchange)


@check("FY-WRK-013")
def handshake_answered(ctx: CheckContext) -> Iterator[Finding]:
    exchange, (answered, result) = _greeting(ctx)
    if not answered:
        got = f"error {shown(result)}" if result is not None else "no answer"
        yield finding(
            ctx,
            f"{HANDSHAKE_METHOD} got {got} within {HANDSHAKE_SECONDS:g} s; FengYu refuses "
            "the worker",
            exchange,
        )


@check("FY-WRK-014")
def handshake_version(ctx: CheckContext) -> Iterator[Finding]:
    yield from _handshake_problem(ctx, "protocolVersion")


@check("FY-WRK-015")
def handshake_runtime(ctx: CheckContext) -> Iterator[Finding]:
    yield from _handshake_problem(ctx, "runtime")


@check("FY-WRK-016")
def structured_logs(ctx: CheckContext) -> Iterator[Finding]:
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
