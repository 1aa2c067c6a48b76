"""web_fetch reaches the public web only (spec: host.md#what-web_fetch-can-reach).

A loopback-only service (uvicorn on 127.0.0.1 in a thread) holds a secret. No spelling of its
address, no redirect to it (or to a second loopback server playing the host's console) from
an allowed host, and no name whose DNS answer changes between lookups may bring the secret to
the model; the allow-list lets exactly the named host through.

No public host can be reached from the test machines. Where a test needs one (DNS rebinding,
TLS), the resolver is replaced so a made-up name answers a public address, and httpcore's
socket layer is stood in for: it records the address it is asked to connect to and connects
to a loopback server instead. That a public address passes the check is shown on the check
itself (test_public_address.py).
"""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from ipaddress import ip_address
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpcore
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from reference_host.builtins import WebFetchTool
from reference_host.stream.sse_parser import SSEEvent, SSEParser
from reference_host.support.loopback import serve_on_loopback
from reference_host.tools.callbacks import CallContext, plan_and_call
from tests.answering_server import answering_server
from tests.conftest import REPO
from tests.reference_host.served_cli import STARTED, api_headers

CONTEXT = CallContext(conversation_id="c1", run_id="r1")
SECRET = "loopback secret"
ONLY_PUBLIC = "only public addresses are fetched (allow one with --web-fetch-allow)"
LOOPBACK = "a loopback address"
PUBLIC = "93.184.216.34"  # a public address; no test opens a socket to it


async def web_fetch(url: str, allow: Sequence[str] = ()) -> dict[str, Any]:
    """What the model gets from web_fetch(url) on a host started with these allow entries."""
    tool = WebFetchTool(allow=allow)
    result: dict[str, Any] = (await plan_and_call(tool, {"url": url}, CONTEXT)).output
    return result


def refused(url: str, address: str, reason: str, *, via: str | None = None) -> dict[str, Any]:
    shown = f"{url} (redirected from {via})" if via else url
    error = f"web_fetch refuses {shown}: {address} is {reason}; {ONLY_PUBLIC}"
    return {"success": False, "error": error}


def fetched(url: str, text: str = SECRET) -> dict[str, Any]:
    return {"success": True, "url": url, "title": "", "text": text, "truncated": False}


def first_address(host: str) -> str:
    """The address the C library gives first for host: the one a refusal names."""
    return str(ip_address(socket.getaddrinfo(host, 80, type=socket.SOCK_STREAM)[0][4][0]))


# --------------------------------------------------------------------------- loopback servers


@dataclass
class Loopback:
    """A loopback server and what it was asked: (path, Host header), in order."""

    base: str = ""
    asked: list[tuple[str, str]] = field(default_factory=list)

    @property
    def port(self) -> int:
        port = httpx.URL(self.base).port
        assert port is not None
        return port


def serve(page: Response, name: str) -> Iterator[Loopback]:
    """Serve page at every path, and a redirect to ?url= at /to, on 127.0.0.1."""
    record = Loopback()

    async def answer(request: Request) -> Response:
        record.asked.append((request.url.path, request.headers.get("host", "")))
        if request.url.path == "/to":
            return RedirectResponse(request.query_params["url"], status_code=302)
        return page

    app = Starlette(routes=[Route("/{path:path}", answer)])
    with serve_on_loopback(app, name=name) as base:
        record.base = base
        yield record


@pytest.fixture(scope="module")
def service_server() -> Iterator[Loopback]:
    yield from serve(PlainTextResponse(SECRET), "loopback-only service")


@pytest.fixture(scope="module")
def console_server() -> Iterator[Loopback]:
    yield from serve(HTMLResponse("<title>reference host</title>console"), "host console")


@pytest.fixture
def service(service_server: Loopback) -> Loopback:
    service_server.asked.clear()
    return service_server


@pytest.fixture
def console(console_server: Loopback) -> Loopback:
    console_server.asked.clear()
    return console_server


# --------------------------------------------------------------------------- stand-ins


@dataclass
class Dns:
    """Answers for made-up names, one list per lookup (the last one repeats)."""

    answers: dict[str, list[list[str]]] = field(default_factory=dict)
    lookups: list[str] = field(default_factory=list)


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> Dns:
    """socket.getaddrinfo answering the made-up names in `answers`, other names as usual."""
    record = Dns()
    real = socket.getaddrinfo

    def lookup(host: Any, port: Any, family: int = 0, type: int = 0, *args: Any) -> Any:
        name = host.decode("ascii") if isinstance(host, bytes) else host
        if name not in record.answers:
            return real(host, port, family, type, *args)
        record.lookups.append(name)
        queue = record.answers[name]
        addresses = queue.pop(0) if len(queue) > 1 else queue[0]
        return [_answer(address, int(port)) for address in addresses]

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    return record


def _answer(address: str, port: int) -> Any:
    if ":" in address:
        return (socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port, 0, 0))
    return (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))


@dataclass
class Sockets:
    """Where httpcore was asked to connect; every connection really goes to 127.0.0.1:target."""

    target: int = 0
    opened: list[tuple[str, int]] = field(default_factory=list)


@pytest.fixture
def sockets(monkeypatch: pytest.MonkeyPatch) -> Sockets:
    record = Sockets()
    real = httpcore.AnyIOBackend.connect_tcp

    async def stand_in(self: Any, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        record.opened.append((host, port))
        return await real(self, "127.0.0.1", record.target, *args, **kwargs)

    monkeypatch.setattr(httpcore.AnyIOBackend, "connect_tcp", stand_in)
    return record


# --------------------------------------------------------------------------- address spellings


@pytest.mark.parametrize(
    ("host", "address", "reason"),
    [
        ("127.0.0.1", "127.0.0.1", LOOPBACK),
        ("[::1]", "::1", LOOPBACK),
        ("0x7f000001", "127.0.0.1", LOOPBACK),
        ("2130706433", "127.0.0.1", LOOPBACK),
        ("127.1", "127.0.0.1", LOOPBACK),
        ("0177.1", "127.0.0.1", LOOPBACK),  # octal, as inet_aton reads it
        ("0.0.0.0", "0.0.0.0", "the unspecified address"),
        (
            "[::ffff:127.0.0.1]",
            str(ip_address("::ffff:127.0.0.1")),
            f"an IPv4-mapped form of 127.0.0.1, {LOOPBACK}",
        ),
        ("localhost", first_address("localhost"), LOOPBACK),
        ("evil.example@127.0.0.1", "127.0.0.1", LOOPBACK),  # userinfo, then the real host
    ],
)
async def test_no_spelling_of_a_loopback_address_is_fetched(
    service: Loopback, host: str, address: str, reason: str
) -> None:
    url = f"http://{host}:{service.port}/secret"
    assert await web_fetch(url) == refused(url, address, reason)
    assert service.asked == []


# --------------------------------------------------------------------------- redirects


@pytest.mark.parametrize(
    ("target", "address", "reason"),
    [
        ("http://127.0.0.1:{service}/secret", "127.0.0.1", LOOPBACK),
        ("http://2130706433:{service}/secret", "127.0.0.1", LOOPBACK),
        (
            "http://[::ffff:127.0.0.1]:{service}/secret",
            str(ip_address("::ffff:127.0.0.1")),
            f"an IPv4-mapped form of 127.0.0.1, {LOOPBACK}",
        ),
        ("http://127.0.0.1:{console}/", "127.0.0.1", LOOPBACK),
        ("http://localhost:{console}/", first_address("localhost"), LOOPBACK),  # not its port
    ],
)
async def test_a_redirect_from_an_allowed_host_is_checked_again(
    service: Loopback, console: Loopback, target: str, address: str, reason: str
) -> None:
    """The allowed host answers 302 to a loopback address it may not send web_fetch to."""
    location = target.format(service=service.port, console=console.port)
    start = f"http://localhost:{service.port}/to?url={quote(location, safe='')}"
    result = await web_fetch(start, allow=[f"localhost:{service.port}"])
    assert result == refused(location, address, reason, via=str(httpx.URL(start)))
    assert service.asked == [("/to", f"localhost:{service.port}")]
    assert console.asked == []


# --------------------------------------------------------------------------- the allow-list


async def test_the_allow_list_lets_exactly_the_named_host_through(
    service: Loopback, console: Loopback
) -> None:
    allow = [f"localhost:{service.port}"]
    named = f"http://localhost:{service.port}/secret"
    assert await web_fetch(named, allow) == fetched(named)
    within = f"http://localhost:{service.port}/to?url=/secret"  # a redirect to the same host
    assert await web_fetch(within, allow) == fetched(named)
    by_address = f"http://127.0.0.1:{service.port}/secret"
    assert await web_fetch(by_address, allow) == refused(by_address, "127.0.0.1", LOOPBACK)
    other_port = f"http://localhost:{console.port}/"
    localhost = first_address("localhost")
    assert await web_fetch(other_port, allow) == refused(other_port, localhost, LOOPBACK)
    assert [path for path, _ in service.asked] == ["/secret", "/to", "/secret"]
    assert console.asked == []


# --------------------------------------------------------------------------- DNS


async def fetch_from_a_rebinding_name(
    scheme: str, server: Loopback | TlsServer, dns: Dns, sockets: Sockets
) -> None:
    """rebind.example answers a public address once, then 127.0.0.1. The connection goes to
    the address that was checked (the loopback server stands in for that public host), and
    the request still names rebind.example."""
    dns.answers["rebind.example"] = [[PUBLIC], ["127.0.0.1"]]
    sockets.target = server.port
    url = f"{scheme}://rebind.example:{server.port}/secret"
    assert await web_fetch(url) == fetched(url)
    assert sockets.opened == [(PUBLIC, server.port)]
    assert server.asked == [("/secret", f"rebind.example:{server.port}")]


async def test_dns_rebinding_cannot_move_the_connection_after_the_check(
    service: Loopback, dns: Dns, sockets: Sockets
) -> None:
    """The connection goes to the checked address (fetch_from_a_rebinding_name), and the
    name is looked up once: the answer that would move it is never asked for."""
    await fetch_from_a_rebinding_name("http", service, dns, sockets)
    assert dns.lookups == ["rebind.example"]


async def test_a_name_with_any_refused_address_is_refused(
    service: Loopback, dns: Dns, sockets: Sockets
) -> None:
    dns.answers["mixed.example"] = [[PUBLIC, "127.0.0.1"]]
    sockets.target = service.port
    url = f"http://mixed.example:{service.port}/secret"
    assert await web_fetch(url) == refused(url, "127.0.0.1", LOOPBACK)
    assert sockets.opened == []
    assert service.asked == []


# --------------------------------------------------------------------------- TLS on the name


@dataclass
class TlsServer:
    """An HTTPS server on 127.0.0.1 with a certificate for rebind.example only."""

    port: int
    ca: Path
    server_names: list[str] = field(default_factory=list)
    asked: list[tuple[str, str]] = field(default_factory=list)


def make_certificates(folder: Path) -> None:
    """A throwaway CA (ca.pem) and a certificate for rebind.example it signed (site.*)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command makes the test certificates")
    (folder / "site.ext").write_text(
        "subjectAltName=DNS:rebind.example\nbasicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
        "authorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n"
    )
    ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
    commands = [
        f"req -x509 {ec} -days 2 -keyout ca.key -out ca.pem -subj /CN=web_fetch-test-CA"
        " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign",
        f"req -new {ec} -keyout site.key -out site.csr -subj /CN=rebind.example",
        "x509 -req -in site.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2"
        " -out site.pem -extfile site.ext",
    ]
    for command in commands:
        run = [openssl, *command.split()]
        subprocess.run(run, cwd=folder, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsServer]:
    folder = tmp_path_factory.mktemp("tls")
    make_certificates(folder)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(folder / "site.pem", folder / "site.key")
    server_names: list[str] = []
    asked: list[tuple[str, str]] = []
    context.sni_callback = lambda _socket, name, _context: server_names.append(name)

    def seen(request: BaseHTTPRequestHandler) -> None:
        asked.append((request.path, request.headers.get("Host", "")))

    with answering_server(
        SECRET.encode(), "text/plain", seen, name="tls server", tls=context
    ) as port:
        yield TlsServer(port, folder / "ca.pem", server_names, asked)


@pytest.fixture
def tls(tls_server: TlsServer, monkeypatch: pytest.MonkeyPatch) -> TlsServer:
    """The TLS server, its records cleared, and its CA trusted by web_fetch (SSL_CERT_FILE)."""
    tls_server.server_names.clear()
    tls_server.asked.clear()
    monkeypatch.setenv("SSL_CERT_FILE", str(tls_server.ca))
    return tls_server


async def test_https_to_the_checked_address_keeps_the_name_for_sni_and_host(
    tls: TlsServer, dns: Dns, sockets: Sockets
) -> None:
    await fetch_from_a_rebinding_name("https", tls, dns, sockets)
    assert tls.server_names == ["rebind.example"]


async def test_https_checks_the_certificate_against_the_name_not_the_address(
    tls: TlsServer, dns: Dns, sockets: Sockets
) -> None:
    dns.answers["other.example"] = [[PUBLIC]]
    sockets.target = tls.port
    result = await web_fetch(f"https://other.example:{tls.port}/secret")
    assert result["success"] is False
    assert "CERTIFICATE_VERIFY_FAILED" in result["error"], result
    assert sockets.opened == [(PUBLIC, tls.port)]
    assert tls.asked == []


# --------------------------------------------------------------------------- the command line


def test_the_host_fetches_only_what_its_command_line_allows(
    tmp_path: Path, service: Loopback
) -> None:
    """`serve --web-fetch-allow localhost:PORT`, then the scripted model calls web_fetch on
    the allowed name and on 127.0.0.1: no approval is asked (a read tool), one is fetched,
    the other is the refusal, and the chat stream ends normally."""
    allowed = f"http://localhost:{service.port}/secret"
    by_address = f"http://127.0.0.1:{service.port}/secret"
    command = [sys.executable, "-m", "reference_host", "serve", "--port", "0"]
    command += ["--data-dir", str(tmp_path / "data"), "--log-level", "warning"]
    command += ["--web-fetch-allow", f"localhost:{service.port}"]
    host = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None
        line = host.stdout.readline()  # printed once the host listens
        started = STARTED.match(line)
        assert started, line
        message = "\n".join(
            f"/call web_fetch {json.dumps({'url': u})}" for u in (allowed, by_address)
        )
        parser, items = SSEParser(), []
        chat = started.group(1) + "api/chat"
        headers = api_headers(tmp_path / "data")
        with httpx.stream(
            "POST", chat, json={"message": message}, headers=headers, timeout=60
        ) as response:
            assert response.status_code == 200
            for chunk in response.iter_bytes():
                items += parser.feed(chunk)
        items += parser.close()
    finally:
        host.terminate()
        host.wait(timeout=30)
    events = [(item.type, json.loads(item.data)) for item in items if isinstance(item, SSEEvent)]
    results = [data for kind, data in events if kind == "tool" and data["phase"] == "result"]
    assert [json.loads(result["output"]) for result in results] == [
        fetched(allowed),
        refused(by_address, "127.0.0.1", LOOPBACK),
    ]
    assert "approval" not in [kind for kind, _ in events]
    assert events[-1][0] == "done"
    assert service.asked == [("/secret", f"localhost:{service.port}")]
