"""The request body limit, in two steps: a body announced too large is refused unread, and
the bytes of any other are counted as they arrive.

The counting is Starlette's RequestBodyLimitMiddleware (what FastAPI's `max_body_size` uses):
it refuses a body once it goes over the limit, so a huge body is never buffered, and the app
answers that 413 in its JSON error shape. For a body whose Content-Length already says it is
too large, that middleware swaps whatever the app answers for a plain-text 413; the first step
answers that case before it, before a byte of the body is read, in the same JSON shape, so
every 413 looks alike and matches the OpenAPI document.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.datastructures import Headers
from starlette.middleware.body_limit import RequestBodyLimitMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from reference_host.http.error_answers import error_response, too_large


class AnnouncedBodyLimit:
    """ASGI middleware: 413 for a request whose Content-Length is over limit bytes."""

    def __init__(self, app: ASGIApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            announced = Headers(scope=scope).get("content-length", "")
            if announced.isdigit() and int(announced) > self.limit:
                await error_response(413, too_large(self.limit))(scope, receive, send)
                return
        await self.app(scope, receive, send)


def limit_bodies(app: FastAPI, limit: int) -> None:
    """Add both steps to app: the announced size outside, the counted bytes inside."""
    app.add_middleware(RequestBodyLimitMiddleware, max_body_size=limit)
    app.add_middleware(AnnouncedBodyLimit, limit=limit)
