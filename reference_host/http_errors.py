"""The API's error answer, and the last line of defence for an error nobody expected.

Every error is `{"error": message, "problems": [...]}`. The message and the problems are cut
(reference_host.quoting), so no answer repeats a huge input, whatever part of the host wrote
the message.

Why `ContainErrors` rather than an exception handler: Starlette's ServerErrorMiddleware answers
500 and then re-raises, so uvicorn logs the whole exception again (its message can hold a
client's 50 MB value) and closes the connection. This middleware answers the 500 itself, logs
one bounded record, and lets nothing reach the server.
"""

from __future__ import annotations

import logging
import traceback

from pydantic import BaseModel
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reference_host.quoting import quoted, shortened

log = logging.getLogger(__name__)

MESSAGE_LIMIT = 1000
MAX_PROBLEMS = 50
TRACEBACK_LINE_LIMIT = 500


class ErrorBody(BaseModel):
    """What every error answer holds (documented in the OpenAPI document)."""

    error: str
    problems: list[str]


def error_response(
    status: int,
    message: str,
    problems: list[str] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """The JSON error answer, message and problems cut to a bounded size."""
    listed = [shortened(p, MESSAGE_LIMIT) for p in (problems or [])[:MAX_PROBLEMS]]
    if problems and len(problems) > MAX_PROBLEMS:
        listed.append(f"... and {len(problems) - MAX_PROBLEMS} more problems")
    body = {"error": shortened(message, MESSAGE_LIMIT), "problems": listed}
    return JSONResponse(body, status_code=status, headers=headers)


def bounded_traceback(exc: BaseException) -> str:
    """The traceback of exc with every line cut: frames stay readable, echoed values do not
    grow the log."""
    lines = traceback.format_exception(exc)
    return "".join(shortened(line.rstrip("\n"), TRACEBACK_LINE_LIMIT) + "\n" for line in lines)


class ContainErrors:
    """ASGI middleware: an exception from the app becomes a logged, bounded 500 answer (or,
    once the answer has started, the end of it) and never reaches the server."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False
        refused: BaseException | None = None

        async def sending(message: Message) -> None:
            nonlocal started, refused
            if message["type"] == "http.response.start":
                started = True
            try:
                await send(message)
            except BaseException as exc:
                refused = exc  # the server's or an outer layer's: theirs to handle
                raise

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            if exc is refused:
                raise
            log.error(
                "unexpected error in %s %s\n%s",
                scope.get("method"),
                quoted(scope.get("path", "")),
                bounded_traceback(exc),
            )
            if not started:
                answer = error_response(500, f"internal error: {type(exc).__name__}")
                await answer(scope, receive, send)
