"""A standard-library HTTP server on 127.0.0.1 that answers every GET with one body.

For a test server outside the uvicorn stack of reference_host.support.loopback: one whose
socket a TLS context wraps (so the test sees the name a client sends for SNI), or one that
only counts what reached it.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def answering_server(
    body: bytes,
    content_type: str,
    seen: Callable[[BaseHTTPRequestHandler], object],
    *,
    name: str,
    tls: ssl.SSLContext | None = None,
) -> Iterator[int]:
    """Answer every GET with body (200) on a free port of 127.0.0.1, showing each request to
    seen() first; over TLS when given a server context. Yields the port; the server stops
    when the block ends."""

    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen(self)
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name=name, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
