"""The API's error answer, the handlers that give every error that shape, and the last line
of defence for an error nobody expected.

Every error is `{"error": message, "problems": [...]}`. The message and the problems are cut
(reference_host.support.quoting), so no answer repeats a huge input, whatever part of the host wrote
the message. FastAPI's validation errors (422 by default) are rewritten into a 400 of that
shape, and a 405 names every method of the path in its Allow header.

Why `ContainErrors` rather than an exception handler: Starlette's ServerErrorMiddleware answers
500 and then re-raises, so uvicorn logs the whole exception again (its message can hold a
client's 50 MB value) and closes the connection. This middleware answers the 500 itself, logs
one bounded record, and lets nothing reach the server.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reference_host.support.quoting import quoted, shortened
from reference_host.workflow.canvas import WorkflowError

log = logging.getLogger(__name__)

MESSAGE_LIMIT = 1000
MAX_PROBLEMS = 50
TRACEBACK_LINE_LIMIT = 500


class ApiError(Exception):
    """An error answer: status, message and the list of reasons."""

    def __init__(self, status: int, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.problems = problems or []


class ErrorBody(BaseModel):
    """What every error answer holds (documented in the OpenAPI document)."""

    error: str
    problems: list[str]


def error_response(
    status: int,
    message: str,
    problems: list[str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """The JSON error answer, message and problems cut to a bounded size."""
    listed = [shortened(p, MESSAGE_LIMIT) for p in (problems or [])[:MAX_PROBLEMS]]
    if problems and len(problems) > MAX_PROBLEMS:
        listed.append(f"... and {len(problems) - MAX_PROBLEMS} more problems")
    body = {"error": shortened(message, MESSAGE_LIMIT), "problems": listed}
    return JSONResponse(body, status_code=status, headers=headers)


def too_large(limit: int) -> str:
    """The message of every 413: the middleware's, the handler's and the document's."""
    return f"the body is larger than {limit} bytes"


def handle_errors(app: FastAPI, *, max_body_bytes: int) -> None:
    """Give every error app raises (ApiError, a refused workflow, invalid requests,
    Starlette's HTTP errors) the error shape."""

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.message, exc.problems)

    @app.exception_handler(WorkflowError)
    async def _refused(request: Request, exc: WorkflowError) -> JSONResponse:
        """404 for an unknown workflow, else 400 with every reason."""
        return error_response(404 if exc.kind == "not_found" else 400, exc.message, exc.problems)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, "invalid request", [_describe(e) for e in exc.errors()])

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 405:
            allowed = ", ".join(sorted(_methods_of(app, request)))
            return error_response(405, "method not allowed", headers={"Allow": allowed})
        if exc.status_code == 413:
            return error_response(413, too_large(max_body_bytes))
        return error_response(exc.status_code, str(exc.detail), [], exc.headers)


def _methods_of(app: FastAPI, request: Request) -> set[str]:
    """Every method some route serves at the request's path (Starlette's 405 names only the
    first route's)."""
    methods: set[str] = set()
    routes = list(app.router.routes)
    while routes:
        route = routes.pop()
        # An included router (FastAPI 0.165 keeps it whole): its own routes, same paths.
        included = getattr(route, "original_router", None)
        if included is not None:
            routes.extend(included.routes)
            continue
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return methods


def _describe(error: Mapping[str, Any]) -> str:
    """One problem of a request body, named by its field (camelCase, as sent)."""
    kind = error.get("type")
    loc = tuple(error.get("loc", ()))
    if kind == "json_invalid":
        return f"the body is not valid JSON: {error.get('ctx', {}).get('error', 'invalid')}"
    if loc == ("body",):
        if kind == "missing":
            return "the body is missing: a JSON object is expected"
        return "the body must be a JSON object (sent with Content-Type: application/json)"
    where = ".".join(str(part) for part in loc if part != "body")
    message = str(error.get("msg", "invalid"))
    return f"{where}: {message}" if where else message


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
