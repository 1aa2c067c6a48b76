"""The dev console's routes without a browser: what they serve, with which headers, and that
they stay out of the API (its document, its token); test_console_browser.py runs the page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from reference_host.agent.models import ModelTurn, ScriptedModel
from reference_host.http.app import create_app
from reference_host.http.console import CONTENT_SECURITY_POLICY
from tests.conftest import MakeHost

TOKEN = "console-test-token-0123456789"
Client = Callable[..., httpx.AsyncClient]


@pytest.fixture
async def client(make_host: MakeHost) -> AsyncIterator[Client]:
    """httpx over the app of a host made with the given HostConfig fields."""
    opened: list[httpx.AsyncClient] = []

    def open_client(**config: object) -> httpx.AsyncClient:
        app = create_app(make_host(**config), lambda: ScriptedModel([ModelTurn(text="hi")]))
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765"
        )
        opened.append(client)
        return client

    yield open_client
    for client in opened:
        await client.aclose()


async def test_the_page_and_its_assets_are_served_with_a_strict_policy(client: Client) -> None:
    api = client()
    for path, media_type, marker in [
        ("/", "text/html", '<script type="module" src="/console/console.js">'),
        ("/console/console.js", "text/javascript", "class SSEParser"),
        ("/console/console.css", "text/css", ".approval"),
    ]:
        response = await api.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith(media_type), path
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert response.headers["x-content-type-options"] == "nosniff"
        assert marker in response.text, path
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY
    assert "default-src 'self'" in CONTENT_SECURITY_POLICY


async def test_nothing_else_is_served_from_the_console_folder(client: Client) -> None:
    api = client()
    for name in ("__init__.py", "index.html", "..%2F__init__.py", "missing.js"):
        response = await api.get(f"/console/{name}")
        assert response.status_code == 404, name
        assert set(response.json()) == {"error", "problems"}


async def test_the_page_is_no_part_of_the_api_document_and_the_cdn_pages_are_off(
    client: Client,
) -> None:
    api = client()
    paths = (await api.get("/openapi.json")).json()["paths"]
    assert "/" not in paths and not any(p.startswith("/console") for p in paths)
    for path in ("/docs", "/redoc"):
        assert (await api.get(path)).status_code == 404, path


async def test_with_a_token_the_page_loads_and_the_api_still_needs_it(client: Client) -> None:
    api = client(token=TOKEN)
    for path in ("/", "/console/console.js", "/console/console.css"):
        assert (await api.get(path)).status_code == 200, path
    assert (await api.post("/")).status_code == 401
    assert (await api.get("/console/missing.js")).status_code == 401
    assert (await api.get("/api/plugins")).status_code == 401
    authorized = {"Authorization": f"Bearer {TOKEN}"}
    assert (await api.get("/api/plugins", headers=authorized)).status_code == 200


async def test_the_page_keeps_the_host_check(client: Client) -> None:
    response = await client().get("/", headers={"Host": "evil.example"})
    assert response.status_code == 400
