"""An ASGI app served by uvicorn on 127.0.0.1 in a background thread, for tests and samples.

One way to do it, so every loopback server binds a free port on 127.0.0.1 only, waits until
it accepts connections, and stops (or says it did not, or that it failed) when its block
ends. An app whose state needs the server's event loop (a Host: its locks, its workers) is
given as `make_app`, an async context manager entered and left inside that loop.

The socket is made with IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets whose proto
is TCP, and without it Nagle's algorithm and delayed ACKs hold small SSE frames back by
20-40 ms on a kept-alive connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import uvicorn

LOOPBACK = "127.0.0.1"
AppFactory = Callable[[], contextlib.AbstractAsyncContextManager[Any]]
Lifespan = Literal["auto", "on", "off"]


@dataclass
class _Serving:
    """What the server thread reports back."""

    ready: threading.Event = field(default_factory=threading.Event)
    server: uvicorn.Server | None = None
    failure: BaseException | None = None


@contextlib.contextmanager
def serve_on_loopback(
    app: Any = None,
    *,
    make_app: AppFactory | None = None,
    lifespan: Lifespan = "off",
    port: int = 0,
    name: str = "loopback server",
    start_timeout: float = 10.0,
    stop_timeout: float = 10.0,
) -> Iterator[str]:
    """Serve app (or the app make_app yields) until the block ends; yields its base URL
    (http://127.0.0.1:<port>). A failure of the server thread is raised at the end."""
    if (app is None) == (make_app is None):
        raise TypeError("give app or make_app")
    factory = make_app or (lambda: _given(app))
    state = _Serving()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, port))
        thread = threading.Thread(
            target=asyncio.run, args=(_serve(factory, sock, lifespan, state),), name=name
        )
        thread.daemon = True
        thread.start()
        try:
            state.ready.wait(start_timeout)
            if state.server is None or not state.server.started:
                raise RuntimeError(f"the {name} did not start: {state.failure!r}")
            yield f"http://{LOOPBACK}:{sock.getsockname()[1]}"
        finally:
            if state.server is not None:
                state.server.should_exit = True
            thread.join(stop_timeout)
        if thread.is_alive():
            raise RuntimeError(f"the {name} did not stop")
        if state.failure is not None:
            raise RuntimeError(f"the {name} failed: {state.failure!r}") from state.failure


@contextlib.asynccontextmanager
async def _given(app: Any) -> AsyncIterator[Any]:
    yield app


async def _serve(
    factory: AppFactory, sock: socket.socket, lifespan: Lifespan, state: _Serving
) -> None:
    try:
        async with factory() as app:
            config = uvicorn.Config(
                app,
                log_level="warning",
                access_log=False,
                lifespan=lifespan,
                timeout_graceful_shutdown=2,
            )
            state.server = uvicorn.Server(config)
            serving = asyncio.create_task(state.server.serve(sockets=[sock]))
            while not state.server.started and not serving.done():
                await asyncio.sleep(0.01)
            state.ready.set()
            await serving
    except BaseException as exc:
        state.failure = exc
    finally:
        state.ready.set()
