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
validation, a path outside the allowed roots), 404 for an unknown plugin or approval, 409 for
a conflict with the current state (tool names that clash with what is already offered),
500 (still JSON, never a traceback) for anything unexpected.

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
from fastapi import FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import StreamingResponse

from reference_host import events
from reference_host.agent.models import ChatModel
from reference_host.events import CONNECTED, KEEP_ALIVE, Event
from reference_host.filerefs import FileRefError
from reference_host.host import Host
from reference_host.plugins import PluginError
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
    path: str = Field(min_length=1)


class GrantBody(_Body):
    plugin_id: str = Field(alias="pluginId", min_length=1)
    path: str = Field(min_length=1)
    access: str


class ApprovalBody(_Body):
    approved: bool


class ChatBody(_Body):
    message: str
    conversation_id: str | None = Field(default=None, alias="conversationId", min_length=1)


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

    app = FastAPI(
        title="Reference host", summary="AI-tool plugins over HTTP and SSE", lifespan=lifespan
    )
    app.state.host = host

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.problems)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(400, "invalid request", [_describe(e) for e in exc.errors()])

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail), [], exc.headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error in %s %s", request.method, request.url.path)
        return _error(500, f"internal error: {type(exc).__name__}: {exc}")

    # -- plugins ---------------------------------------------------------------------------

    @app.get("/api/plugins")
    async def list_plugins() -> list[dict[str, Any]]:
        return [info.to_json() for info in host.plugins.list()]

    @app.post("/api/plugins")
    async def install_plugin(body: InstallBody) -> JSONResponse:
        before = {info.id for info in host.plugins.list()}
        try:
            info = await host.install(body.path)
        except PluginError as exc:
            raise ApiError(_install_status(exc), exc.message, exc.problems) from None
        return JSONResponse(info.to_json(), status_code=200 if info.id in before else 201)

    @app.post("/api/plugins/{plugin_id}/enable")
    async def enable_plugin(plugin_id: str) -> dict[str, Any]:
        _require_plugin(host, plugin_id)
        try:
            info = await host.enable(plugin_id)
        except PluginError as exc:
            raise ApiError(_install_status(exc), exc.message, exc.problems) from None
        return info.to_json()

    @app.post("/api/plugins/{plugin_id}/disable")
    async def disable_plugin(plugin_id: str) -> dict[str, Any]:
        _require_plugin(host, plugin_id)
        return (await host.disable(plugin_id)).to_json()

    @app.delete("/api/plugins/{plugin_id}", status_code=204)
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

    @app.post("/api/conversations/{conversation_id}/grants", status_code=201)
    async def attach_grant(conversation_id: str, body: GrantBody) -> dict[str, Any]:
        _require_plugin(host, body.plugin_id)
        try:
            return host.grants.attach(conversation_id, body.plugin_id, body.path, body.access)
        except FileRefError as exc:
            raise ApiError(400, str(exc)) from None

    @app.get("/api/conversations/{conversation_id}/grants")
    async def list_grants(conversation_id: str) -> list[dict[str, Any]]:
        return [
            {"pluginId": grant.plugin_id, "ref": dict(grant.ref), "path": str(grant.path)}
            for grant in host.grants.grants(conversation_id)
        ]

    # -- approvals -------------------------------------------------------------------------

    @app.post("/api/approvals/{approval_id}")
    async def decide_approval(approval_id: str, body: ApprovalBody) -> dict[str, Any]:
        if not host.approvals.decide(approval_id, body.approved):
            raise ApiError(404, f"no pending approval {approval_id!r}")
        return {"id": approval_id, "approved": body.approved}

    # -- chat ------------------------------------------------------------------------------

    @app.get("/api/v1/agents/metadata/tools")
    async def discover_tools(
        tenant: str | None = Header(None, alias="X-Tenant-Id"),
        actor: str | None = Header(None, alias="X-Actor"),
    ) -> list[dict[str, Any]]:
        """The ERP discovery endpoint (SPEC E5): the tools this actor may use, active or not."""
        if not tenant or not actor:
            raise ApiError(400, "the X-Tenant-Id and X-Actor headers are required")
        return host.discover(tenant, actor)

    @app.post("/api/chat")
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
        await queue.put(events.error(f"internal error: {type(exc).__name__}: {exc}"))
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
    except PluginError as exc:
        raise ApiError(404, exc.message) from None


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


def _error(
    status: int,
    message: str,
    problems: list[str] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(
        {"error": message, "problems": problems or []}, status_code=status, headers=headers
    )
