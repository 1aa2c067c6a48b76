"""An ASGI app served by uvicorn on 127.0.0.1 in a background thread, for tests and samples.

One way to do it, so every loopback server binds a free port on 127.0.0.1 only, waits until
it accepts connections, and stops (or says it did not) when its block ends.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import uvicorn

LOOPBACK = "127.0.0.1"


@contextlib.contextmanager
def serve_on_loopback(
    app: Any, *, port: int = 0, name: str = "loopback server", start_timeout: float = 10.0
) -> Iterator[str]:
    """Serve app until the block ends; yields its base URL (http://127.0.0.1:<port>)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, port))
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name=name, daemon=True
        )
        thread.start()
        waited = threading.Event()
        for _ in range(int(start_timeout / 0.01)):
            if server.started or not thread.is_alive():
                break
            waited.wait(0.01)
        try:
            if not server.started:
                raise RuntimeError(f"the {name} did not start")
            yield f"http://{LOOPBACK}:{sock.getsockname()[1]}"
        finally:
            server.should_exit = True
            thread.join(timeout=10)
            if thread.is_alive():
                raise RuntimeError(f"the {name} did not stop")
    finally:
        sock.close()
