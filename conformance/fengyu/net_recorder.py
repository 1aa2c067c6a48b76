"""A recording HTTP(S) proxy on loopback: the workers' proxy variables point at it, so every
connection a proxy-aware client opens is seen, with its target, and then forwarded.

It forwards rather than refuses so that `external` tools work as they would without the kit;
the record is what matters. CONNECT requests are tunnelled; absolute-form requests
(`GET http://host/...`) are sent on in origin form. Nothing else is understood: a client that
speaks anything else gets a 400 and its connection is still recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from dataclasses import dataclass
from urllib.parse import urlsplit

from conformance.loop_thread import LoopThread

HEAD_LIMIT = 64 * 1024
CONNECT_SECONDS = 10.0
KEPT = 10_000  # the latest connections remembered, so a flood cannot grow the kit


@dataclass(frozen=True)
class Connection:
    """One connection a worker opened through the proxy: when, and to where."""

    at: float
    target: str
    request_line: str


class NetRecorder:
    """The proxy, running on its own loop thread until close()."""

    def __init__(self) -> None:
        self._loop = LoopThread("kit network recorder")
        self._lock = threading.Lock()
        self._seen: deque[Connection] = deque(maxlen=KEPT)
        self._server = self._loop.run(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port: int = self._server.sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def environment(self) -> dict[str, str]:
        """The variables that send HTTP(S) clients through the proxy: the lower- and
        upper-case spellings curl, Python, Go and Node read, and Java's system properties."""
        url = self.url
        env = {name: url for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
        env.update({name.lower(): url for name in list(env)})
        env["JAVA_TOOL_OPTIONS"] = (
            " ".join(
                f"-D{scheme}.proxyHost=127.0.0.1 -D{scheme}.proxyPort={self.port}"
                for scheme in ("http", "https")
            )
            + " -Dhttp.nonProxyHosts="
        )
        return env

    def since(self, start: float) -> list[Connection]:
        """The connections opened at or after start (time.monotonic())."""
        with self._lock:
            return [c for c in self._seen if c.at >= start]

    def close(self) -> None:
        """Stop listening and end every tunnel still open."""
        with contextlib.suppress(Exception):
            self._loop.run(self._shutdown(), timeout=5)
        self._loop.close()

    async def _shutdown(self) -> None:
        self._server.close()
        for task in asyncio.all_tasks() - {asyncio.current_task()}:
            task.cancel()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        at = time.monotonic()
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CONNECT_SECONDS)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, OSError):
            self._note(Connection(at, "(no HTTP request)", ""))
            writer.close()
            return
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = line.partition(" ")
        target = rest.rsplit(" ", 1)[0]
        if method.upper() == "CONNECT":
            host, _, connect_port = target.rpartition(":")
            self._note(Connection(at, target, line))
            await self._tunnel(reader, writer, host.strip("[]"), int(connect_port or 443), b"")
            return
        url = urlsplit(target)
        if not url.hostname:
            self._note(Connection(at, "(not a proxy request)", line))
            writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        port = url.port or (443 if url.scheme == "https" else 80)
        self._note(Connection(at, f"{url.hostname}:{port}", line))
        path = url.path or "/"
        origin_line = f"{method} {path}{'?' + url.query if url.query else ''} HTTP/1.1"
        first = origin_line.encode("latin-1") + head[len(line.encode("latin-1")) :]
        await self._tunnel(reader, writer, url.hostname, port, first)

    def _note(self, connection: Connection) -> None:
        with self._lock:
            self._seen.append(connection)

    async def _tunnel(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        host: str,
        port: int,
        first: bytes,
    ) -> None:
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), CONNECT_SECONDS
            )
        except (OSError, TimeoutError, ValueError):
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            with contextlib.suppress(OSError):
                await writer.drain()
            writer.close()
            return
        if first:
            up_writer.write(first)
        else:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while chunk := await source.read(65536):
            sink.write(chunk)
            await sink.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            sink.close()
