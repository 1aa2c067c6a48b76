"""Issue 10 item 4: no bad input gets a 5xx, costs the connection, or is echoed at length.

Before: an install path with a component over 255 bytes gave a 500 (ENAMETOOLONG from
is_dir() outside the error handling) and the next request on that connection was reset; a
50 MB install path gave a 500 whose body repeated the path (50 MB) and 100 MB of log per
request; no endpoint limited its body. On real uvicorn on loopback, since the connection's
fate is part of the behaviour.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from reference_host.host import DEFAULT_MAX_BODY_BYTES
from reference_host.support.quoting import quoted, shortened
from tests.conftest import MakeHost
from tests.security.api_server import asgi_client, connection, log_meter, served

SMALL_ANSWER = 2_000  # bytes: an error names what it refused, it does not repeat it
SMALL_LOG = 10_000  # bytes of log per bad request, at most


def test_quoted_and_shortened_cut_long_values_and_say_by_how_much() -> None:
    assert quoted("abc") == "'abc'"
    assert quoted("a\r\nb") == "'a\\r\\nb'"
    cut = quoted("x" * 1_000_000)
    assert cut.startswith("'" + "x" * 200 + "'") and cut.endswith("(999800 more characters)")
    assert len(cut) < 260
    assert quoted(Path("/tmp/p"), limit=3) == "'/tm'... (3 more characters)"
    assert shortened("short") == "short"
    assert shortened("y" * 500, limit=10) == "yyyyyyyyyy... (490 more characters)"


@pytest.mark.parametrize(
    "path",
    [
        "/tmp/" + "a" * 300,  # one component over NAME_MAX: ENAMETOOLONG
        "/tmp/" + "/".join(["b" * 250] * 16),  # 4 KB in all, each component fine
        "/tmp/no\0such",  # a NUL byte
        "x" * 5_000,  # over the 4096 characters an install path may have
    ],
    ids=["name-too-long", "path-4k", "nul-byte", "over-path-max"],
)
def test_a_bad_install_path_is_a_400_and_the_connection_lives_on(
    make_host: MakeHost, path: str
) -> None:
    with served(make_host) as (address, port), log_meter() as meter:
        with connection(address, port) as conn:
            answer = conn.request("POST", "/api/plugins", {"path": path})
            assert answer.status == 400, answer.body[:300]
            assert len(answer.body) < SMALL_ANSWER
            assert answer.json()["error"]
            again = conn.request("GET", "/api/plugins")
            assert again.status == 200 and again.json() == []
        assert meter.bytes < SMALL_LOG, meter.records


@pytest.mark.parametrize("size", [DEFAULT_MAX_BODY_BYTES + 1, 50_000_000])
def test_a_body_over_the_limit_is_a_413_named_briefly_and_not_logged(
    make_host: MakeHost, size: int
) -> None:
    body = b'{"path": "/tmp/' + b"c" * (size - 15) + b'"}'
    with served(make_host) as (address, port), log_meter() as meter:
        with connection(address, port) as conn:
            answer = conn.request("POST", "/api/plugins", raw=body)
            assert answer.status == 413
            assert answer.json() == {
                "error": f"the body is larger than {DEFAULT_MAX_BODY_BYTES} bytes",
                "problems": [],
            }
        with connection(address, port) as conn:
            assert conn.request("GET", "/api/plugins").status == 200
        assert meter.bytes < SMALL_LOG, meter.records


def send_chunked(address: str, port: int, chunk: bytes, chunks: int) -> tuple[bytes, int]:
    """POST a chunked body of up to `chunks` chunks, reading between them; returns the
    answer's head and how many body bytes were sent before it came."""
    with socket.create_connection((address, port), timeout=30) as sock:
        sock.sendall(
            f"POST /api/approvals/x HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )
        sent = 0
        answer = b""
        sock.settimeout(0.05)
        for _ in range(chunks):
            try:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
                answer += sock.recv(65536)
            except TimeoutError:
                continue  # no answer yet
            except OSError:
                break  # the server closed the connection after its answer
            if b"\r\n\r\n" in answer:
                break
        sock.settimeout(30)
        while b"\r\n\r\n" not in answer and (data := sock.recv(65536)):
            answer += data
    return answer, sent


def test_a_streamed_body_is_refused_once_it_goes_over_the_limit(make_host: MakeHost) -> None:
    """No Content-Length (chunked): the bytes are counted as they arrive, the answer comes
    while the client is still sending, and the body is never buffered whole."""
    limit = 64 * 1024
    with served(make_host, max_body_bytes=limit) as (address, port):
        answer, sent = send_chunked(address, port, b"d" * 16 * 1024, chunks=2_000)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 100 * limit  # refused long before the 32 MB the client would send


async def test_the_limit_is_configurable_and_exact(make_host: MakeHost) -> None:
    async with asgi_client(make_host, max_body_bytes=100) as client:
        fits = b'{"approved": true}'.ljust(100)
        over = fits + b" "
        json = {"Content-Type": "application/json"}
        assert (
            await client.post("/api/approvals/x", content=fits, headers=json)
        ).status_code == 404
        refused = await client.post("/api/approvals/x", content=over, headers=json)
        assert refused.status_code == 413
        assert refused.json()["error"] == "the body is larger than 100 bytes"


async def test_an_unexpected_error_is_a_bounded_500_and_a_bounded_log(make_host: MakeHost) -> None:
    """The last line of defence: whatever fails unexpectedly, with however long a message,
    answers a short JSON 500 and logs a bounded record, and nothing reaches the server."""
    async with asgi_client(make_host) as client:
        host = client._transport.app.state.host  # type: ignore[attr-defined]

        def broken() -> list[object]:
            raise RuntimeError("z" * 10_000_000)

        host.plugins.list = broken
        with log_meter() as meter:
            answer = await client.get("/api/plugins")
        assert answer.status_code == 500
        assert answer.json() == {"error": "internal error: RuntimeError", "problems": []}
        assert 0 < meter.bytes < SMALL_LOG
