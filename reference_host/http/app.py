"""The host's HTTP API and its SSE streams (spec: host.md), an ASGI app served by uvicorn.

Routes (JSON in and out; every error is `{"error": message, "problems": [...]}`), one router
module per area: reference_host.http.plugins, tools, grants, approvals, erp (discovery), chat,
conversations (following one) and workflows. Each reads the Host and the app's settings
through reference_host.http.deps.

Status codes: 400 for a request the host refuses (invalid body, a plugin that fails
validation, a path outside the allowed roots, an id that does not match reference_host.http.ids),
404 for an unknown plugin or approval, 409 for a conflict with the current state (tool names
that clash with what is already offered), 413 for a body over the limit (HostConfig
max_body_bytes, 1 MiB by default; reference_host.http.body_limits), 405
with an Allow header naming every method of the path, 500 (still JSON, never a traceback)
for anything unexpected (reference_host.http.error_answers). Access (Host, Origin, token) is
reference_host.http.access; the OpenAPI document at /openapi.json says all of this
(reference_host.http.openapi).

The dev console (reference_host.http.console) is a page at `/` that uses this same API; it
is not in the document. FastAPI's /docs and /redoc pages are off: they load their scripts
from a CDN, so offline they are blank.

Why FastAPI rather than bare Starlette: the request bodies and the JSON answers
(reference_host.http.answers) are declared once as pydantic models (validated, with camelCase
field names), and the OpenAPI document comes from them.
Its validation errors are rewritten into our error shape.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from fastapi import FastAPI

from reference_host.agent.models import ChatModel
from reference_host.host import Host
from reference_host.http import (
    approvals,
    chat,
    console,
    conversations,
    erp,
    grants,
    plugins,
    tools,
    workflows,
)
from reference_host.http.access import guard
from reference_host.http.error_answers import handle_errors
from reference_host.http.openapi import document
from reference_host.http.streaming import DEFAULT_KEEP_ALIVE
from reference_host.workflow.canvas import Canvas

log = logging.getLogger(__name__)

# In the order of the document's paths.
ROUTERS = (plugins, tools, grants, approvals, erp, chat, conversations, workflows)


def create_app(
    host: Host,
    model_factory: Callable[[], ChatModel],
    *,
    keep_alive: float = DEFAULT_KEEP_ALIVE,
    on_shutdown: Sequence[Callable[[], Awaitable[None]]] = (),
) -> FastAPI:
    """The API over host; model_factory gives the model of each chat request.

    keep_alive: seconds without an event after which the stream sends `: keep-alive`.
    on_shutdown: awaited in order at the ASGI lifespan shutdown (a failing one is logged),
    e.g. `host.close`: uvicorn runs it before it re-raises a SIGTERM it caught, which would
    end the process before any code after `server.serve()`. The caller owns host and the
    models its factory makes.
    """
    if keep_alive <= 0:
        raise ValueError("keep_alive must be positive")

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        for hook in on_shutdown:
            try:
                await hook()
            except Exception:
                log.exception("shutdown hook %r failed", hook)

    config = host.config
    app = FastAPI(
        title="Reference host",
        summary="AI-tool plugins over HTTP and SSE",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    # What reference_host.http.deps hands to the routes.
    app.state.host = host
    app.state.canvas = Canvas.for_host(host)
    app.state.model_factory = model_factory
    app.state.keep_alive = keep_alive
    guard(
        app,
        allowed_hosts=config.allowed_hosts,
        token=config.token,
        max_body_bytes=config.max_body_bytes,
        public_paths=console.PUBLIC_PATHS,
    )
    document(app, token=config.token is not None, max_body_bytes=config.max_body_bytes)
    handle_errors(app, max_body_bytes=config.max_body_bytes)
    for module in ROUTERS:
        app.include_router(module.router)
    app.include_router(console.router)
    return app
