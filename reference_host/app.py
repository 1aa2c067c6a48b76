"""The host's HTTP API and its SSE chat stream (SPEC F7-F10), an ASGI app served by uvicorn.

Routes (JSON in and out; every error is `{"error": message, "problems": [...]}`):

    GET    /api/plugins                          the installed plugins, with supportsAi
    POST   /api/plugins            {"path"}      install or upgrade (201 new, 200 upgrade)
    POST   /api/plugins/{id}/enable
    POST   /api/plugins/{id}/disable
    DELETE /api/plugins/{id}                     204
    GET    /api/tools                            the current snapshot: name, description,
                                                 inputSchema, effect, owner
    POST   /api/conversations/{cid}/grants  {"pluginId", "path", "access"} -> the FileRef (201)
    GET    /api/conversations/{cid}/grants
    POST   /api/approvals/{approval_id}     {"approved": bool}
    POST   /api/chat               {"message", "conversationId"?} -> text/event-stream

Status codes: 400 for a request the host refuses (invalid body, a plugin that fails
validation, a path outside the allowed roots, an id that does not match reference_host.ids),
404 for an unknown plugin or approval, 409 for a conflict with the current state (tool names
that clash with what is already offered), 413 for a body over the limit (HostConfig
max_body_bytes, 1 MiB by default; reference_host.http_limits), 405
with an Allow header naming every method of the path, 500 (still JSON, never a traceback)
for anything unexpected. Access (Host, Origin, token) is reference_host.http_access; the
OpenAPI document at /openapi.json says all of this (reference_host.api_doc).

Why FastAPI rather than bare Starlette: the request bodies are declared once as pydantic
models (validated, with camelCase field names), and a person trying the host gets the
OpenAPI page at /docs for free. Its validation errors are rewritten into our error shape.

Why a StreamingResponse with our own framing rather than sse-starlette's EventSourceResponse:
EventSourceResponse passes bytes through, so `: connected` and our frames could be sent, but
(1) its ping is a fixed timer, not "no event for N seconds", and it is sent on a separate
task outside the event order, so a ping can land after the final `error` frame (between the
last event and the end of the body); (2) it adds `Connection: keep-alive` and defaults to
`Cache-Control: no-store`; (3) importing it monkey-patches uvicorn's `Server.handle_exit`
process-wide and starts a shutdown-watcher task per loop. A dozen lines of our own give the
exact F10 stream: `: connected` first, `Event.encode()` frames, `: keep-alive` only after N
idle seconds (one generator, so never after the last event), `done`/`error` last.

A client disconnect stops the run: uvicorn (ASGI spec 2.3) makes Starlette's
StreamingResponse listen for `http.disconnect` and cancel the streaming task; the cancel
reaches our generator, which cancels the task running the agent (the model call, the
approval wait or the worker call it is in) and closes the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio
from fastapi import FastAPI, Header, Path, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import StreamingResponse
from starlette.routing import Match

from plugin_spec.filerefs import FileRefError
from reference_host import events
from reference_host.agent.models import ChatModel
from reference_host.api_doc import document, error
from reference_host.events import CONNECTED, KEEP_ALIVE, Event
from reference_host.host import Host
from reference_host.http_access import guard
from reference_host.http_errors import MESSAGE_LIMIT, error_response
from reference_host.http_limits import too_large
from reference_host.ids import ID_PATTERN, ID_RULE, ClientId
from reference_host.plugins import PluginError
from reference_host.quoting import quoted, shortened
from reference_host.workflow.routes import workflow_router

log = logging.getLogger(__name__)

DEFAULT_KEEP_ALIVE = 15.0
SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}
TERMINAL = frozenset({"done", "error"})
CLEANUP_SECONDS = 5.0
# How far a run may get ahead of its stream: enough to batch a burst into one write, few
# enough that the first events go out at once and a slow client holds the run back.
PUMP_AHEAD = 16
PATH_LIMIT = 4096  # PATH_MAX on Linux: no longer path names a file
NOT_FOUND = error("no such plugin, approval or workflow")
CONFLICT = error("it clashes with what is installed")
JSON_OBJECT = {"application/json": {"schema": {"type": "object"}}}
CONVERSATION_HEADER = {
    "X-Conversation-Id": {
        "description": "the run's conversation: the one sent, or a new `conv_<uuid>`",
        "schema": {"type": "string", "pattern": ID_PATTERN},
    }
}
# One event of the stream, as OpenAPI 3.1 describes text/event-stream: its `schema` is that
# of each event ({event, data, id, retry}); data is one JSON object.
SSE_EVENT = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {"enum": ["token", "thinking", "tool", "approval", "done", "error"]},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"type": "object"},
        },
    },
}
EVENT_STREAM = {
    "description": "the run's events (SPEC F10): `: connected`, then `event:`/`data:` frames, "
    "`done` or `error` last",
    "content": {"text/event-stream": {"schema": SSE_EVENT}},
    "headers": CONVERSATION_HEADER,
}
# Both are required (400 with one message naming both when either is missing or empty); the
# route checks them itself for that message, so the document states the rule here.
DISCOVERY_HEADERS = {
    "parameters": [
        {
            "name": name,
            "in": "header",
            "required": True,
            "schema": {"type": "string", "minLength": 1},
        }
        for name in ("X-Tenant-Id", "X-Actor")
    ]
}
ConversationPath = Path(pattern=ID_PATTERN, description=f"A conversation id of {ID_RULE}.")


class EventStream(StreamingResponse):
    """The media type of the chat and run answers, for the document (the answer itself sets
    Content-Type exactly, without the charset Starlette would add)."""

    media_type = "text/event-stream"


class ApiError(Exception):
    """An error answer: status, message and the list of reasons."""

    def __init__(self, status: int, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.problems = problems or []


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class InstallBody(_Body):
    path: str = Field(min_length=1, max_length=PATH_LIMIT)


class GrantBody(_Body):
    plugin_id: str = Field(alias="pluginId", min_length=1, max_length=PATH_LIMIT)
    path: str = Field(min_length=1, max_length=PATH_LIMIT)
    access: str


class ApprovalBody(_Body):
    approved: bool


class ChatBody(_Body):
    message: str
    conversation_id: ClientId | None = Field(default=None, alias="conversationId")


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
    )
    app.state.host = host
    guard(
        app,
        allowed_hosts=config.allowed_hosts,
        token=config.token,
        max_body_bytes=config.max_body_bytes,
    )
    document(app, token=config.token is not None, max_body_bytes=config.max_body_bytes)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.message, exc.problems)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, "invalid request", [_describe(e) for e in exc.errors()])

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 405:
            allowed = ", ".join(sorted(_methods_of(app, request)))
            return error_response(405, "method not allowed", headers={"Allow": allowed})
        if exc.status_code == 413:
            return error_response(413, too_large(config.max_body_bytes))
        return error_response(exc.status_code, str(exc.detail), [], exc.headers)

    # -- plugins ---------------------------------------------------------------------------

    @app.get("/api/plugins")
    async def list_plugins() -> list[dict[str, Any]]:
        return [info.to_json() for info in host.plugins.list()]

    @app.post(
        "/api/plugins",
        responses={
            201: {"description": "installed (200: upgraded)", "content": JSON_OBJECT},
            404: NOT_FOUND,
            409: CONFLICT,
        },
    )
    async def install_plugin(body: InstallBody) -> JSONResponse:
        before = {info.id for info in host.plugins.list()}
        try:
            info = await host.install(body.path)
        except PluginError as exc:
            raise ApiError(_install_status(exc), exc.message, exc.problems) from None
        return JSONResponse(info.to_json(), status_code=200 if info.id in before else 201)

    @app.post("/api/plugins/{plugin_id}/enable", responses={404: NOT_FOUND, 409: CONFLICT})
    async def enable_plugin(plugin_id: str) -> dict[str, Any]:
        _require_plugin(host, plugin_id)
        try:
            info = await host.enable(plugin_id)
        except PluginError as exc:
            raise ApiError(_install_status(exc), exc.message, exc.problems) from None
        return info.to_json()

    @app.post("/api/plugins/{plugin_id}/disable", responses={404: NOT_FOUND})
    async def disable_plugin(plugin_id: str) -> dict[str, Any]:
        _require_plugin(host, plugin_id)
        return (await host.disable(plugin_id)).to_json()

    @app.delete("/api/plugins/{plugin_id}", status_code=204, responses={404: NOT_FOUND})
    async def uninstall_plugin(plugin_id: str) -> Response:
        _require_plugin(host, plugin_id)
        await host.uninstall(plugin_id)
        return Response(status_code=204)

    # -- tools -----------------------------------------------------------------------------

    @app.get("/api/tools")
    async def list_tools() -> list[dict[str, Any]]:
        snapshot = host.registry.snapshot()
        return [
            {
                "name": callback.definition.name,
                "description": callback.definition.description,
                "inputSchema": dict(callback.definition.input_schema),
                "effect": callback.effect.value,
                "owner": callback.owner,
            }
            for callback in snapshot.callbacks.values()
        ]

    # -- FileRef grants --------------------------------------------------------------------

    @app.post(
        "/api/conversations/{conversation_id}/grants",
        status_code=201,
        responses={404: NOT_FOUND},
    )
    async def attach_grant(
        body: GrantBody, conversation_id: str = ConversationPath
    ) -> dict[str, Any]:
        _require_plugin(host, body.plugin_id)
        try:
            return host.grants.attach(conversation_id, body.plugin_id, body.path, body.access)
        except FileRefError as exc:
            raise ApiError(400, str(exc)) from None

    @app.get("/api/conversations/{conversation_id}/grants")
    async def list_grants(conversation_id: str = ConversationPath) -> list[dict[str, Any]]:
        return [
            {"pluginId": grant.plugin_id, "ref": dict(grant.ref), "path": str(grant.path)}
            for grant in host.grants.grants(conversation_id)
        ]

    # -- approvals -------------------------------------------------------------------------

    @app.post("/api/approvals/{approval_id}", responses={404: NOT_FOUND})
    async def decide_approval(approval_id: str, body: ApprovalBody) -> dict[str, Any]:
        if not host.approvals.decide(approval_id, body.approved):
            raise ApiError(404, f"no pending approval {quoted(approval_id)}")
        return {"id": approval_id, "approved": body.approved}

    # -- chat ------------------------------------------------------------------------------

    @app.get(
        "/api/v1/agents/metadata/tools",
        openapi_extra=DISCOVERY_HEADERS,
        responses={400: error("X-Tenant-Id or X-Actor is missing or empty")},
    )
    async def discover_tools(
        tenant: str | None = Header(None, alias="X-Tenant-Id", include_in_schema=False),
        actor: str | None = Header(None, alias="X-Actor", include_in_schema=False),
    ) -> list[dict[str, Any]]:
        """The ERP discovery endpoint (SPEC E5): the tools this actor may use, active or not."""
        if not tenant or not actor:
            raise ApiError(400, "the X-Tenant-Id and X-Actor headers are required")
        return host.discover(tenant, actor)

    @app.post("/api/chat", response_class=EventStream, responses={200: EVENT_STREAM})
    async def chat(
        body: ChatBody,
        tenant: str = Header("", alias="X-Tenant-Id"),
        actor: str = Header("", alias="X-Actor"),
    ) -> StreamingResponse:
        """The chat stream; X-Tenant-Id and X-Actor select the ERP tools offered."""
        conversation = body.conversation_id or f"conv_{uuid.uuid4()}"
        run = _run(host, model_factory, body.message, conversation, tenant, actor)
        frames = sse_frames(run, keep_alive=keep_alive)
        return StreamingResponse(
            frames,
            headers={**SSE_HEADERS, "X-Conversation-Id": conversation},
            media_type=None,
        )

    app.include_router(workflow_router(host, keep_alive=keep_alive))
    return app


async def sse_frames(run: AsyncIterator[Event], *, keep_alive: float) -> AsyncIterator[bytes]:
    """The F10 byte stream of one run: `: connected`, the event frames, keep-alives.

    `done` or `error` ends the stream; an exception in the run becomes a final error
    event, and so does a run that ends without either. Cancelling the consumer (client
    disconnect) cancels the run.

    The run is pumped by its own task into a short queue, and every event already waiting
    is sent in one chunk: a burst of tool events costs one write, not one per event, and
    no timer is set while events are ready.
    """
    yield CONNECTED
    queue: asyncio.Queue[Event] = asyncio.Queue(maxsize=PUMP_AHEAD)
    pump = asyncio.create_task(_pump(run, queue), name="sse run")
    try:
        while True:
            if queue.empty():
                try:
                    async with asyncio.timeout(keep_alive):
                        first = await queue.get()
                except TimeoutError:
                    yield KEEP_ALIVE
                    continue
            else:
                first = queue.get_nowait()
            chunk, ended = _frames(first, queue)
            yield chunk
            if ended:
                return
    finally:
        # Shielded: on a disconnect anyio keeps cancelling this task at every await.
        with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
            pump.cancel()
            await asyncio.wait({pump})


def _frames(first: Event, queue: asyncio.Queue[Event]) -> tuple[bytes, bool]:
    """The frames of first and every event waiting after it, up to a terminal one, and
    whether one was met."""
    frames = []
    event: Event | None = first
    while event is not None:
        frames.append(event.encode())
        if event.type in TERMINAL:
            return b"".join(frames), True
        event = None if queue.empty() else queue.get_nowait()
    return b"".join(frames), False


async def _pump(run: AsyncIterator[Event], queue: asyncio.Queue[Event]) -> None:
    """Move the run's events into queue and end it with a terminal event, whatever happens;
    closes the run when it ends or when the stream is cancelled."""
    try:
        async for event in run:
            await queue.put(event)
            if event.type in TERMINAL:
                return
        await queue.put(events.error("the run ended without a result"))
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # the stream is gone
        await queue.put(events.error("the run was cancelled"))  # not ours: the run's own
    except Exception as exc:
        text = shortened(str(exc), MESSAGE_LIMIT)
        await queue.put(events.error(f"internal error: {type(exc).__name__}: {text}"))
    finally:
        closer = getattr(run, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()


async def _run(
    host: Host,
    model_factory: Callable[[], ChatModel],
    message: str,
    conversation: str,
    tenant: str,
    actor: str,
) -> AsyncIterator[Event]:
    """One chat run with the factory's model; the factory's owner closes what it made."""
    model = model_factory()
    chat = host.chat(message, model=model, conversation_id=conversation, tenant=tenant, actor=actor)
    async for event in chat:
        yield event


def _require_plugin(host: Host, plugin_id: str) -> None:
    try:
        host.plugins.get(plugin_id)
    except PluginError:
        raise ApiError(404, f"no plugin {quoted(plugin_id)} is installed") from None


def _methods_of(app: FastAPI, request: Request) -> set[str]:
    """Every method some route serves at the request's path (Starlette's 405 names only the
    first route's)."""
    methods: set[str] = set()
    for route in app.router.routes:
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return methods


def _install_status(exc: PluginError) -> int:
    """409 when the plugin clashes with what is installed, 404 when there is no such
    plugin, else 400 (the plugin itself is wrong)."""
    return {"conflict": 409, "not_found": 404}.get(exc.kind, 400)


def _describe(error: Any) -> str:
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
    message = error.get("msg", "invalid")
    return f"{where}: {message}" if where else message
