"""Protocol checks of a FengYu worker (spec: fengyu-worker.md), read from one probe transcript."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conformance.fengyu.probe import (
    BIG_FRAME_ID,
    CRLF_ID,
    INVALID_REQUEST_ID,
    PROBE_IDS,
    SET_LEVEL_METHOD,
    UNKNOWN_METHOD_ID,
    Exchange,
    Step,
    Transcript,
    step_method,
)
from conformance.fengyu.raw_worker import Line
from conformance.fengyu.services import WorkerServices
from conformance.findings import Finding, NotApplicable
from conformance.registry import CheckContext, check
from reference_host.worker.errors import INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR


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
    ctx: CheckContext, name: Step, code: int, ids: tuple[Any, ...]
) -> Iterator[Finding]:
    exchange = transcript(ctx).exchanges[name]
    errors = [line.message.get("error") for line in exchange.replies if line.message]
    replies = exchange.replies
    ok = (
        exchange.answered
        and len(replies) == 1
        and replies[0].message is not None
        and isinstance(errors[0], dict)
        and errors[0].get("code") == code
        and _same_id(replies[0].message, ids)
    )
    if not ok:
        expected_ids = " or ".join(repr(i) for i in ids)
        yield finding(
            ctx, f"expected one error response with code {code} and id {expected_ids}", exchange
        )


@check("FY-WRK-002")
def parse_error(ctx: CheckContext) -> Iterator[Finding]:
    yield from _single_error(ctx, Step.PARSE_ERROR, PARSE_ERROR, (None,))


@check("FY-WRK-003")
def invalid_request(ctx: CheckContext) -> Iterator[Finding]:
    yield from _single_error(ctx, Step.INVALID_REQUEST, INVALID_REQUEST, (INVALID_REQUEST_ID, None))


@check("FY-WRK-004")
def unknown_method(ctx: CheckContext) -> Iterator[Finding]:
    yield from _single_error(ctx, Step.UNKNOWN_METHOD, METHOD_NOT_FOUND, (UNKNOWN_METHOD_ID,))


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
    exchange = transcript(ctx).exchanges[Step.IDS]
    got = [
        line.message.get("id", "<missing>") if line.message else "<not JSON>"
        for line in exchange.replies
    ]
    expected = list(PROBE_IDS)
    same_types = [type(g) for g in got] == [type(e) for e in expected]
    if not exchange.answered or got != expected or not same_types:
        yield finding(
            ctx,
            f"expected responses with ids {' and '.join(map(repr, expected))}, got ids {got!r}",
            exchange,
        )


# Exchanges of notifications: a JSON-RPC object printed there is a reply to a notification,
# FY-WRK-005's and FY-WRK-009's defect, not a stray stdout line.
NOTIFICATION_EXCHANGES = {Step.NOTIFICATIONS, Step.SET_LEVEL}


@check("FY-WRK-007")
def stdout_discipline(ctx: CheckContext) -> Iterator[Finding]:
    result = transcript(ctx)
    for name, line in result.all_lines():
        if name in NOTIFICATION_EXCHANGES and _json_rpc_object(line):
            continue
        problem = _response_problem(line)
        if problem:
            yield finding(ctx, f"during {name!r}: {problem}: {line.text[:300]!r}", None)


@check("FY-WRK-008")
def exits_on_eof(ctx: CheckContext) -> Iterator[Finding]:
    result = transcript(ctx)
    if result.exit_after_eof is None:
        yield finding(
            ctx, "the worker was still running 5 s after its stdin closed (it was killed)", None
        )


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
        codes = [
            line.message.get("error", {}).get("code")
            for line in exchange.replies
            if line.message and isinstance(line.message.get("error"), dict)
        ]
        if METHOD_NOT_FOUND in codes:
            yield finding(
                ctx, f"declared method {method!r} answers -32601 (method not found)", exchange
            )


def _same_id(message: dict[str, Any], ids: tuple[Any, ...]) -> bool:
    value = message.get("id", object())
    return any(value == i and type(value) is type(i) for i in ids)


def _json_rpc_object(line: Line) -> bool:
    return line.message is not None and line.message.get("jsonrpc") == "2.0"


def _response_problem(line: Line) -> str | None:
    message = line.message
    if message is None:
        return "a stdout line that is not a JSON object"
    if message.get("jsonrpc") != "2.0":
        return 'a stdout object without jsonrpc "2.0"'
    if "id" not in message:
        return "a stdout object without id"
    if ("result" in message) == ("error" in message):
        return "a response needs exactly one of result and error"
    return None
