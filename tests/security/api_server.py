"""The host's HTTP API for the HTTP security tests: in-process (httpx over ASGI) or on a
real uvicorn at 127.0.0.1:<free port>, plus a log meter and raw HTTP/1.1 on one connection.

Each host comes from the make_host fixture (in the test's tmp_path) and has the scripted
model, so a chat or a workflow run ends at once.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from reference_host.agent.models import ModelTurn, ScriptedModel
from reference_host.http.app import create_app
from reference_host.support.loopback import serve_on_loopback
from tests.conftest import MakeHost

TIMEOUT = 30.0


def model() -> ScriptedModel:
    return ScriptedModel([ModelTurn(text="ok")])


@contextlib.asynccontextmanager
async def asgi_client(
    make_host: MakeHost, base_url: str = "http://127.0.0.1", **options: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client on create_app in-process, on a host from the make_host fixture with
    these HostConfig options (the Host closed at the end)."""
    host = make_host(**options)
    try:
        app = create_app(host, model)
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(
            transport=transport, base_url=base_url, timeout=TIMEOUT
        ) as client:
            yield client
    finally:
        await host.close()


@contextlib.contextmanager
def served(make_host: MakeHost, **options: Any) -> Iterator[tuple[str, int]]:
    """create_app on uvicorn on loopback (in a thread of this process), on a host from the
    make_host fixture made and closed in the server's event loop; yields (address, port)."""

    @contextlib.asynccontextmanager
    async def make() -> AsyncIterator[Any]:
        host = make_host(**options)
        try:
            yield create_app(host, model)
        finally:
            await host.close()

    with serve_on_loopback(make_app=make, lifespan="on", name="api under attack") as base:
        parts = urlsplit(base)
        assert parts.hostname is not None and parts.port is not None
        yield parts.hostname, parts.port


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.body)


class Connection:
    """One kept-alive HTTP/1.1 connection (http.client): whether a bad request costs the
    connection is seen by the next request on it."""

    def __init__(self, address: str, port: int) -> None:
        self._conn = http.client.HTTPConnection(address, port, timeout=TIMEOUT)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        self._conn.request(
            method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})}
        )
        response = self._conn.getresponse()
        content = response.read()
        return Answer(response.status, content, {k.lower(): v for k, v in response.getheaders()})

    def close(self) -> None:
        self._conn.close()


@contextlib.contextmanager
def connection(address: str, port: int) -> Iterator[Connection]:
    conn = Connection(address, port)
    try:
        yield conn
    finally:
        conn.close()


class LogMeter(logging.Handler):
    """Counts the bytes of every record logged while it is installed (root and uvicorn)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.bytes = 0
        self.records: list[str] = []
        self.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        self.bytes += len(text.encode("utf-8", "replace")) + 1
        self.records.append(text[:500])


@contextlib.contextmanager
def log_meter() -> Iterator[LogMeter]:
    meter = LogMeter()
    loggers = [logging.getLogger(), logging.getLogger("uvicorn")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(meter)
        logger.setLevel(logging.INFO)
    try:
        yield meter
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(meter)
            logger.setLevel(level)
