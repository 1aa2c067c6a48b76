"""REST faults: an ERP plugin whose backend (Starlette on 127.0.0.1) times out, resets the
connection, answers 500 or answers something that is not JSON. Each call comes back as the
failure envelope naming that fault (not a timeout it waited out), and the next call to the
same tool works. No wall-clock bounds: speed is for benchmarks/."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from conformance.install_validation import kit_validator
from reference_host.erp.dispatch import RestCall, dispatch
from reference_host.host import Host
from sample_plugins.erp_backends import serve_backends
from tests.conftest import MakeHost
from tests.faults.erp import PREFIX, erp_host, write_erp_plugin
from tests.faults.support import CONTEXT, call_tool, is_failure_envelope

TOOLS = {
    "faults.slow.get": f"{PREFIX}/slow",
    "faults.reset.get": f"{PREFIX}/reset",
    "faults.error.get": f"{PREFIX}/error",
    "faults.text.get": f"{PREFIX}/text",
    "faults.late.get": f"{PREFIX}/late",
}
OK = {"success": True, "answer": "fine"}


async def slow(request: Request) -> Response:
    """mode=fault: answers after 10 s, or stops as soon as the client has gone."""
    if request.query_params.get("mode") == "fault":
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if await request.is_disconnected():
                return Response(status_code=499)
            await asyncio.sleep(0.02)
    return JSONResponse(OK)


class Reset:
    """A raw ASGI app; mode=fault starts a 1000-byte answer and dies after 5 bytes, so the
    server closes the connection in the middle of the body."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if b"mode=fault" in scope.get("query_string", b""):
            headers = [(b"content-type", b"application/json"), (b"content-length", b"1000")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b'{"suc', "more_body": True})
            raise RuntimeError("the backend died in the middle of its answer")
        await JSONResponse(OK)(scope, receive, send)


async def error(request: Request) -> Response:
    mode = request.query_params.get("mode")
    if mode == "fault":
        return JSONResponse({"status": 500, "error": "database unavailable"}, status_code=500)
    if mode == "raise":
        raise RuntimeError("unhandled in the backend")
    return JSONResponse(OK)


async def background_crash() -> None:
    await asyncio.sleep(0.2)
    raise RuntimeError("the backend's background task failed")


async def late(request: Request) -> Response:
    """mode=crash: answers at once, then a background task fails 0.2 s later, which makes
    the server close the connection; any other mode answers after 0.4 s."""
    if request.query_params.get("mode") == "crash":
        return JSONResponse(OK, background=BackgroundTask(background_crash))
    await asyncio.sleep(0.4)
    return JSONResponse(OK)


async def text(request: Request) -> Response:
    mode = request.query_params.get("mode")
    if mode == "fault":
        return PlainTextResponse("<html><body>Welcome to the ERP</body></html>")
    if mode == "truncated":
        return Response(b'{"success": tr', media_type="application/json")
    if mode == "nan":
        return Response(b'{"value": NaN}', media_type="application/json")
    return JSONResponse(OK)


def backend() -> Starlette:
    return Starlette(
        routes=[
            Route(f"{PREFIX}/slow", slow),
            Route(f"{PREFIX}/reset", Reset()),
            Route(f"{PREFIX}/error", error),
            Route(f"{PREFIX}/text", text),
            Route(f"{PREFIX}/late", late),
        ]
    )


@pytest.fixture(scope="module")
def erp_url() -> Iterator[str]:
    with serve_backends(backend()) as url:
        yield url


@pytest.fixture
async def host(tmp_path: Path, erp_url: str, make_host: MakeHost) -> Host:
    host = erp_host(make_host, erp_url, kit_validator)
    await host.install(write_erp_plugin(tmp_path / "faults-erp", TOOLS))
    return host


async def called(host: Host, tool: str, mode: str) -> dict:
    result: dict = await call_tool(host, tool, {"mode": mode})
    return result


async def test_a_backend_slower_than_the_timeout_fails_on_the_timeout(
    host: Host, erp_url: str
) -> None:
    """The backend would answer after 10 s: the call fails on its 0.5 s timeout instead,
    and another call is served meanwhile."""
    callback = host.registry.snapshot().get("faults_slow_get")
    assert callback is not None
    slow_result, ok_meanwhile = await asyncio.gather(
        dispatch(
            host.http,
            RestCall(
                erp_url,
                callback.decl.handler,
                {"mode": "fault"},
                CONTEXT.tenant,
                CONTEXT.actor,
                0.5,
            ),
        ),
        call_tool(host, "faults_error_get", {"mode": "ok"}),
    )
    result = slow_result.output
    assert is_failure_envelope(result)
    assert result["error"] == f"GET {PREFIX}/slow timed out after 0.5 s"
    assert ok_meanwhile == OK
    assert await called(host, "faults_slow_get", "ok") == OK


@pytest.mark.parametrize(
    ("tool", "mode", "expected"),
    [
        ("faults_reset_get", "fault", f"GET {PREFIX}/reset failed: RemoteProtocolError"),
        ("faults_error_get", "fault", f"HTTP 500 from GET {PREFIX}/error: "),
        ("faults_error_get", "raise", f"HTTP 500 from GET {PREFIX}/error: "),
        ("faults_text_get", "fault", "answered HTTP 200 with a body that is not JSON: <html>"),
        ("faults_text_get", "truncated", 'with a body that is not JSON: {"success": tr'),
        ("faults_text_get", "nan", 'with a body that is not JSON: {"value": NaN}'),
    ],
)
async def test_a_broken_answer_gives_the_failure_and_the_next_call_works(
    host: Host, tool: str, mode: str, expected: str
) -> None:
    for _ in range(2):  # the failure does not stick to the connection pool
        result = await called(host, tool, mode)
        assert is_failure_envelope(result), result
        assert expected in result["error"] and "timed out" not in result["error"]
        if mode == "raise":
            # uvicorn closes the connection once it has logged the error; a call reusing
            # it before that fails: see test_a_call_on_a_connection_the_erp_drops_...
            await asyncio.sleep(0.3)
        assert await called(host, tool, "ok") == OK


async def test_an_erp_that_refuses_connections_gives_the_failure(
    tmp_path: Path, make_host: MakeHost
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        host = erp_host(make_host, url)
        await host.install(write_erp_plugin(tmp_path / "faults-erp", TOOLS))
        result = await called(host, "faults_error_get", "ok")
    assert is_failure_envelope(result)
    assert result["error"].startswith(f"cannot connect for GET {PREFIX}/error")


async def test_a_call_on_a_connection_the_erp_drops_is_retried(host: Host) -> None:
    """The backend answers, then fails in a background task and closes the connection
    while the next request (sent on the same keep-alive connection) is being served."""
    crashed = await call_tool(host, "faults_late_get", {"mode": "crash"})
    assert crashed == OK
    after = await called(host, "faults_late_get", "ok")
    assert after == OK, after
