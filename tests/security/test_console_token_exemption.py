"""The token's one exception (the console page and its two assets, GET and HEAD) holds on a
real uvicorn against raw request targets a client could bend: dot segments, encoded dots
and slashes, doubled or trailing slashes, other methods. Each answer without the token is
a 401 or the console's own file, never API data; and a cross-site POST or a rebinding Host
is refused even for the exempt paths."""

from __future__ import annotations

import pytest

from tests.conftest import MakeHost
from tests.security.api_server import connection, served

TOKEN = "exemption-test-token-0123456789"
API = b'"id"'  # in every plugin listing; an empty one is [] so look at the status too

BENT = [
    "/console/../api/plugins",
    "/console/%2e%2e/api/plugins",
    "/console/%2E%2E%2Fapi%2Fplugins",
    "/%2e%2e/api/plugins",
    "//api/plugins",
    "/./api/plugins",
    "/api/plugins/",
    "/api//plugins",
    "/console/console.js/../../api/plugins",
    "/console/console.js%2F..%2F..%2Fapi%2Fplugins",
    "/openapi.json",
    "/console/",
    "/console/index.html",
    "/console/__init__.py",
]


@pytest.mark.parametrize("path", BENT)
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_a_bent_path_gets_no_data_without_the_token(
    make_host: MakeHost, path: str, method: str
) -> None:
    with served(make_host, token=TOKEN) as (address, port), connection(address, port) as conn:
        answer = conn.request(method, path)
        assert answer.status in (401, 404), (path, answer.status, answer.body[:200])
        assert answer.headers.get("content-type", "").startswith("application/json")


@pytest.mark.parametrize("path", ["/", "/console/console.js", "/console/console.css"])
def test_only_reads_of_the_page_are_exempt(make_host: MakeHost, path: str) -> None:
    with served(make_host, token=TOKEN) as (address, port), connection(address, port) as conn:
        assert conn.request("GET", path + "?/api/plugins").status == 200
        for method in ("POST", "PUT", "DELETE", "OPTIONS"):
            assert conn.request(method, path).status == 401, method
        evil = conn.request("POST", path, headers={"Origin": "http://evil.example"})
        assert evil.status == 401
        rebound = conn.request("GET", path, headers={"Host": "evil.example"})
        assert rebound.status == 400


def test_without_a_token_a_cross_site_page_cannot_drive_the_api(make_host: MakeHost) -> None:
    with served(make_host) as (address, port), connection(address, port) as conn:
        for origin in ("http://evil.example", "null", "http://127.0.0.1.evil.example"):
            answer = conn.request(
                "POST", "/api/chat", {"message": "/call x {}"}, headers={"Origin": origin}
            )
            assert answer.status == 403, origin
        page = conn.request("GET", "/", headers={"Host": "evil.example"})
        assert page.status == 400
