"""Issue 10 item 6: DNS rebinding and cross-site requests.

Before: the host answered any Host header (`Host: evil.example` got 200), took a POST from any
Origin, and had no way to require a token. Now (reference_host.http.access): a Host
allow-list (loopback names by default, any port), an Origin check on state-changing and
streaming requests, and a bearer token, required to bind a non-loopback address. The Host
and token behaviour is tested on real uvicorn on loopback, with raw HTTP/1.1 where the
header itself is the point.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import reference_host.__main__ as cli
from reference_host.__main__ import build_parser, main
from reference_host.host import DEFAULT_ALLOWED_HOSTS
from reference_host.http.access import TOKEN_ENV, origin_host
from reference_host.options import HostOptions
from tests.conftest import MakeHost
from tests.security.api_server import asgi_client, served

TOKEN = "s3cret-token-for-tests-0123456789"


def raw_status(address: str, port: int, head: str) -> tuple[int, bytes]:
    """Send one request head (no body) on a fresh connection; the status and the body."""
    with socket.create_connection((address, port), timeout=30) as sock:
        sock.sendall(head.encode("latin-1"))
        answer = b""
        while data := sock.recv(65536):
            answer += data
            if b"\r\n\r\n" in answer:
                head_part, _, rest = answer.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head_part.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                if len(rest) >= length:
                    break
    status = int(answer.split(b" ", 2)[1])
    return status, answer.partition(b"\r\n\r\n")[2]


# -- Host ----------------------------------------------------------------------------------


def test_testserver_is_not_a_production_default() -> None:
    assert set(DEFAULT_ALLOWED_HOSTS) == {"localhost", "127.0.0.1", "[::1]"}


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("127.0.0.1", 200),
        ("127.0.0.1:{port}", 200),
        ("localhost:1234", 200),
        ("LOCALHOST", 200),
        ("[::1]:8080", 200),
        ("evil.example", 400),
        ("evil.example:{port}", 400),
        ("localhost.evil.example", 400),
        ("127.0.0.1.nip.io", 400),
        ("testserver", 400),
        ("::1", 400),
    ],
)
def test_only_allowed_host_values_are_answered(make_host: MakeHost, host: str, status: int) -> None:
    with served(make_host) as (address, port):
        value = host.format(port=port)
        got, _ = raw_status(address, port, f"GET /api/plugins HTTP/1.1\r\nHost: {value}\r\n\r\n")
        assert got == status


def test_a_request_without_host_is_refused(make_host: MakeHost) -> None:
    with served(make_host) as (address, port):
        got, _ = raw_status(address, port, "GET /api/plugins HTTP/1.0\r\n\r\n")
        assert got == 400


async def test_more_hosts_can_be_allowed_through_the_config(make_host: MakeHost) -> None:
    hosts = (*DEFAULT_ALLOWED_HOSTS, "host.lan")
    async with asgi_client(make_host, "http://host.lan:8765", allowed_hosts=hosts) as client:
        assert (await client.get("/api/plugins")).status_code == 200
    async with asgi_client(make_host, "http://host.lan:8765") as client:
        assert (await client.get("/api/plugins")).status_code == 400


# -- Origin --------------------------------------------------------------------------------

STATE_CHANGING = [
    ("POST", "/api/chat", {"message": "hi"}),
    ("POST", "/api/plugins", {"path": "/nonexistent"}),
    ("POST", "/api/workflows", {"id": "wf1", "name": "w", "nodes": []}),
    ("POST", "/api/workflows/wf1/run", {}),
    ("DELETE", "/api/plugins/fan.summer.markdown", None),
    ("PUT", "/api/plugins", None),
    ("PATCH", "/api/plugins", None),
]


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "https://evil.example:443",
        "http://localhost.evil.example",
        "null",
        "file://",
        "http://user@localhost",
        "http://localhost:99999",
        "http://localhost:5173",  # an allowed name, but another port: another local server
        "https://[::1]:8443",
        "https://127.0.0.1",  # the host's own name and port, another scheme
    ],
)
@pytest.mark.parametrize(("method", "path", "body"), STATE_CHANGING)
async def test_a_foreign_origin_is_refused_on_state_changing_and_streaming_requests(
    make_host: MakeHost, origin: str, method: str, path: str, body: object
) -> None:
    async with asgi_client(make_host) as client:
        answer = await client.request(method, path, json=body, headers={"Origin": origin})
        assert answer.status_code == 403
        assert answer.json() == {
            "error": "cross-site request refused: the Origin is not the host's own",
            "problems": [],
        }
        assert (await client.get("/api/workflows")).json() == []  # nothing was saved


@pytest.mark.parametrize("origin", [None, "http://127.0.0.1", "http://127.0.0.1:80"])
async def test_the_hosts_own_or_an_absent_origin_is_let_through(
    make_host: MakeHost, origin: str | None
) -> None:
    headers = {"Origin": origin} if origin else {}
    async with asgi_client(make_host) as client:
        chat = await client.post("/api/chat", json={"message": "hi"}, headers=headers)
        assert chat.status_code == 200
        assert chat.headers["content-type"] == "text/event-stream"
        saved = await client.post("/api/workflows", json={"id": "w", "nodes": []}, headers=headers)
        assert saved.status_code == 201


async def test_reads_do_not_check_origin(make_host: MakeHost) -> None:
    """A cross-site page cannot read the answer (no CORS headers), and a rebinding page is
    refused by the Host check; a read changes nothing."""
    async with asgi_client(make_host) as client:
        answer = await client.get("/api/plugins", headers={"Origin": "http://evil.example"})
        assert answer.status_code == 200
        assert "access-control-allow-origin" not in answer.headers


def test_origin_host_names_the_allow_list_entry() -> None:
    assert origin_host("http://LocalHost:3000") == "localhost"
    assert origin_host("https://[::1]") == "[::1]"
    assert origin_host("http://127.0.0.1/") is None  # an Origin has no path
    assert origin_host("ftp://localhost") is None


# -- token ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token-wrong-token", f"Basic {TOKEN}", TOKEN, "Bearer", f"Bearer {TOKEN}x"],
    ids=["none", "wrong", "basic", "bare", "empty", "longer"],
)
def test_with_a_token_every_request_needs_it(
    make_host: MakeHost, authorization: str | None
) -> None:
    with served(make_host, token=TOKEN) as (address, port):
        base = f"http://{address}:{port}"
        headers = {"Authorization": authorization} if authorization else {}
        for method, path in [("GET", "/api/plugins"), ("GET", "/openapi.json")]:
            answer = httpx.request(method, base + path, headers=headers, timeout=30)
            assert answer.status_code == 401
            assert answer.headers["www-authenticate"] == "Bearer"
            assert answer.json()["error"].startswith("a bearer token is required")
        chat = httpx.post(base + "/api/chat", json={"message": "hi"}, headers=headers, timeout=30)
        assert chat.status_code == 401


def test_the_right_token_is_let_through(make_host: MakeHost) -> None:
    with served(make_host, token=TOKEN) as (address, port):
        base = f"http://{address}:{port}"
        for scheme in ("Bearer", "bearer"):
            headers = {"Authorization": f"{scheme} {TOKEN}"}
            assert httpx.get(base + "/api/plugins", headers=headers, timeout=30).status_code == 200
        doc = httpx.get(base + "/openapi.json", headers=headers, timeout=30).json()
        assert doc["components"]["securitySchemes"] == {
            "bearer": {"type": "http", "scheme": "bearer"}
        }
        assert doc["paths"]["/api/plugins"]["get"]["security"] == [{"bearer": []}]


# -- the CLI -------------------------------------------------------------------------------


def never_started(*args: object, **kwargs: object) -> None:
    """Stands in for the Host: a refused start never gets as far as making one (and a
    regression fails here instead of serving on a public address)."""
    raise AssertionError("the host was started")


@pytest.mark.parametrize("address", ["0.0.0.0", "192.0.2.7", "::", "example.org"])
def test_binding_beyond_loopback_without_a_token_is_refused(
    tmp_path: Path,
    address: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.setattr(cli, "Host", never_started)
    assert main(["serve", "--host", address, "--data-dir", str(tmp_path / "d")]) == 2
    assert "is not a loopback address: set a token" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()  # refused before anything was made


def test_a_weak_token_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "short")
    monkeypatch.setattr(cli, "Host", never_started)
    assert main(["serve", "--data-dir", str(tmp_path / "d")]) == 2
    assert "at least 16 visible ASCII characters" in capsys.readouterr().err


def test_the_allow_list_has_the_defaults_the_flags_and_a_specific_bind_address() -> None:
    args = build_parser().parse_args(
        ["serve", "--host", "192.0.2.7", "--allowed-host", "Box.LAN", "--allowed-host", "::2"]
    )
    allowed = HostOptions.from_args(args).allowed_hosts
    assert allowed == (*DEFAULT_ALLOWED_HOSTS, "box.lan", "[::2]", "192.0.2.7")
    wildcard = build_parser().parse_args(["serve", "--host", "0.0.0.0"])
    assert HostOptions.from_args(wildcard).allowed_hosts == DEFAULT_ALLOWED_HOSTS


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_cli_serves_with_the_token_from_the_environment(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, TOKEN_ENV: TOKEN}
    command = [sys.executable, "-m", "reference_host", "serve", "--port", str(port)]
    command += ["--data-dir", str(tmp_path / "d"), "--log-level", "warning"]
    server = subprocess.Popen(command, env=env, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}/api/plugins"
        deadline = time.monotonic() + 60
        while True:  # until it listens (bounded by the deadline)
            try:
                refused = httpx.get(base, timeout=5)
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        assert refused.status_code == 401
        allowed = httpx.get(base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5)
        assert allowed.status_code == 200
        evil = httpx.get(
            base, headers={"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"}, timeout=5
        )
        assert evil.status_code == 400
    finally:
        server.terminate()
        server.wait(timeout=30)
