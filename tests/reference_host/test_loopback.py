"""serve_on_loopback: one way to run an app on 127.0.0.1 for tests, samples and benchmarks."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from reference_host.support.loopback import serve_on_loopback


def app() -> Starlette:
    return Starlette(routes=[Route("/", lambda request: PlainTextResponse("ok"))])


def test_serves_on_loopback_and_stops() -> None:
    with serve_on_loopback(app()) as base:
        assert base.startswith("http://127.0.0.1:")
        assert httpx.get(base).text == "ok"
    with pytest.raises(httpx.ConnectError):
        httpx.get(base)


def test_make_app_is_entered_and_left_in_the_servers_loop() -> None:
    seen: list[str] = []

    @contextlib.asynccontextmanager
    async def make() -> AsyncIterator[Any]:
        seen.append("enter")
        yield app()
        seen.append("exit")

    with serve_on_loopback(make_app=make, lifespan="on") as base:
        assert httpx.get(base).text == "ok"
    assert seen == ["enter", "exit"]


def test_a_failure_when_the_app_is_left_is_raised_at_the_end() -> None:
    @contextlib.asynccontextmanager
    async def make() -> AsyncIterator[Any]:
        yield app()
        raise OSError("cleanup failed")

    with pytest.raises(RuntimeError, match="failed: OSError"), serve_on_loopback(make_app=make):
        pass


def test_an_app_that_cannot_be_made_is_a_start_error() -> None:
    @contextlib.asynccontextmanager
    async def make() -> AsyncIterator[Any]:
        raise ValueError("no app")
        yield

    serving = serve_on_loopback(make_app=make)
    with pytest.raises(RuntimeError, match="did not start: ValueError"), serving:
        pass


def test_a_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError), serve_on_loopback(app(), port=taken.getsockname()[1]):
            pass


def test_app_or_make_app_not_both() -> None:
    serving = serve_on_loopback(app(), make_app=lambda: contextlib.nullcontext())
    with pytest.raises(TypeError), serving:
        pass
