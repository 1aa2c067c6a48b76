"""The built-in web_search and web_fetch tools against a real HTTP server on 127.0.0.1.

A Starlette app served by uvicorn in a background thread plays the web and a SearXNG
instance. The search client refuses to be pointed anywhere else: every request it makes is
recorded and checked to target 127.0.0.1. web_fetch reaches public addresses only, so here it
is allowed 127.0.0.1 (any port) as an operator would allow an intranet host; the fake web
records the paths it is asked for. What web_fetch refuses is in test_web_fetch_ssrf.py.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from conformance.schema_validation import schema_uri, validate
from plugin_spec.builtin_names import BUILTIN_TOOL_NAMES
from plugin_spec.tool_definition import Effect
from reference_host.builtins import (
    SearchError,
    SearchResult,
    SearxngProvider,
    WebFetchTool,
    WebSearchTool,
    builtin_tools,
    html_to_text,
)
from reference_host.builtins import web_fetch as web_fetch_module
from reference_host.support.loopback import serve_on_loopback
from reference_host.tools.callbacks import Arguments, CallContext, plan_and_call

CONTEXT = CallContext(conversation_id="c1", run_id="r1")
MIB = 1024 * 1024

PAGE = """<!doctype html>
<html><head>
  <title>  The   Test
  Page </title>
  <style>body { color: red }</style>
  <script>var secret = "do not show";</script>
</head>
<body>
  <noscript>Please enable JavaScript</noscript>
  <h1>Heading &amp; more</h1>
  <p>First    paragraph
     spans lines.</p>
  <div>Second<br>line <b>bold</b> text</div>
  <ul><li>one</li><li>two</li></ul>
  <script type="application/json">{"hidden": true}</script>
</body></html>
"""

# --------------------------------------------------------------------------- the fake web


def answers(make: Callable[[], Response]) -> Callable[[Request], Awaitable[Response]]:
    """An endpoint that answers every request with a fresh make()."""

    async def endpoint(request: Request) -> Response:
        return make()

    return endpoint


LATIN1 = "<title>Caf\u00e9</title><p>na\u00efve r\u00e9sum\u00e9</p>".encode("latin-1")
CP1252 = '<meta charset="windows-1252"><title>x</title><p>\u20ac 5</p>'.encode("cp1252")

# The pages that always answer the same: path -> how the answer is made.
FIXED: dict[str, Callable[[], Response]] = {
    "/page": lambda: HTMLResponse(PAGE),
    "/plain": lambda: PlainTextResponse("  Just   plain <b>text</b>\nsecond line  \n"),
    "/long": lambda: PlainTextResponse("abcdefghij" * 15_000),  # 150,000 characters
    "/latin1": lambda: Response(LATIN1, media_type="text/html; charset=iso-8859-1"),
    "/meta-charset": lambda: Response(CP1252, headers={"content-type": "text/html"}),
    "/redirect": lambda: RedirectResponse("/redirect-2", status_code=302),
    "/redirect-2": lambda: RedirectResponse("/page", status_code=301),
    "/redirect-loop": lambda: RedirectResponse("/redirect-loop", status_code=302),
    "/redirect-ftp": lambda: RedirectResponse("ftp://127.0.0.1/file.txt", status_code=302),
    "/missing": lambda: HTMLResponse("<h1>Not here</h1>", status_code=404),
    "/broken": lambda: PlainTextResponse("internal", status_code=500),
    "/huge-declared": lambda: Response(b"y" * (5 * MIB), media_type="text/plain"),
    "/binary": lambda: Response(b"\x89PNG\r\n\x1a\n" + bytes(64), media_type="image/png"),
    "/untyped": lambda: Response(b"who knows"),
}


async def huge_streamed(request: Request) -> Response:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(6 * 16):  # 6 MiB, no Content-Length
            yield b"x" * (64 * 1024)

    return StreamingResponse(chunks(), media_type="text/plain")


async def slow(request: Request) -> Response:
    await asyncio.sleep(1.0)
    return PlainTextResponse("too late")


SEARCH_HITS = [
    {"title": "Result  one", "url": "https://example.org/1", "content": "first  snippet"},
    {"title": "No URL", "content": "skipped"},
    {"title": "Bad scheme", "url": "javascript:alert(1)", "content": "skipped"},
    "not an object",
    {"url": "https://example.org/2"},
] + [
    {"title": f"Hit {n}", "url": f"https://example.org/hit/{n}", "content": "s" * 800}
    for n in range(3, 15)
]


async def searx(request: Request) -> Response:
    if request.query_params.get("format") != "json":
        return PlainTextResponse("format not allowed", status_code=403)
    query = request.query_params.get("q", "")
    if query == "boom":
        return JSONResponse({"detail": "search engine exploded"}, status_code=502)
    if query == "not json":
        return HTMLResponse("<html>oops</html>")
    if query == "no results":
        return JSONResponse({"query": query, "answers": []})
    if query == "slow":
        await asyncio.sleep(1.0)
    return JSONResponse({"query": query, "number_of_results": 17, "results": SEARCH_HITS})


APP = Starlette(
    routes=[
        *(Route(path, answers(make)) for path, make in FIXED.items()),
        Route("/huge-streamed", huge_streamed),
        Route("/slow", slow),
        Route("/searx/search", searx),
    ]
)


# The paths the fake web was asked for, in order (appended in the server's thread).
SERVED: list[str] = []


async def recording_app(scope: Any, receive: Any, send: Any) -> None:
    """The fake web, noting each path: web_fetch's requests come from its own client."""
    if scope["type"] == "http":
        SERVED.append(scope["path"])
    await APP(scope, receive, send)


@dataclass
class Web:
    base: str
    requested: list[str] = field(default_factory=list)
    served: list[str] = field(default_factory=lambda: SERVED)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The fake web on 127.0.0.1 and a free port, in a background thread; yields its base URL."""
    with serve_on_loopback(recording_app, name="fake web") as base:
        yield base


@pytest.fixture
async def web(server: str) -> AsyncIterator[tuple[Web, httpx.AsyncClient]]:
    """A client that records every request (redirect hops included); all must hit 127.0.0.1."""
    SERVED.clear()
    record = Web(server)

    async def remember(request: httpx.Request) -> None:
        record.requested.append(str(request.url))

    async with httpx.AsyncClient(trust_env=False, event_hooks={"request": [remember]}) as client:
        yield record, client
    for url in record.requested:
        assert httpx.URL(url).host == "127.0.0.1", url


@pytest.fixture
def record(web: tuple[Web, httpx.AsyncClient]) -> Web:
    """The fake web's record alone: web_fetch makes its own client."""
    return web[0]


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 nobody listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def fetch(arguments: Any, **options: Any) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    tool = WebFetchTool(allow=["127.0.0.1"], **options)
    return (await plan_and_call(tool, Arguments.read(raw), CONTEXT)).output


async def search_with(provider: Any, arguments: Any) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return (await plan_and_call(WebSearchTool(provider), Arguments.read(raw), CONTEXT)).output


# --------------------------------------------------------------------------- the tool set


async def test_builtin_tools_are_the_named_read_tools() -> None:
    tools = builtin_tools(None)
    assert {tool.definition.name for tool in tools} == BUILTIN_TOOL_NAMES
    assert [tool.definition.name for tool in tools] == ["web_fetch", "web_search"]
    for tool in tools:
        assert tool.effect is Effect.READ
        assert tool.owner == "builtin"
        assert tool.definition.description.strip()
        openai = tool.definition.to_openai()
        assert openai["function"]["name"] == tool.definition.name
        assert openai["function"]["parameters"]["type"] == "object"


@pytest.mark.parametrize("tool", [WebFetchTool, WebSearchTool])
def test_input_schemas_are_in_the_manifest_subset(tool: Any) -> None:
    schema = dict(tool.definition.input_schema)
    assert validate(schema, schema_uri("fengyu-manifest-v2.schema.json#/$defs/methodSchema")) == []
    assert set(schema["required"]) <= set(schema["properties"])
    for prop in schema["properties"].values():
        assert prop["description"]


def test_schema_required_fields() -> None:
    assert WebFetchTool.definition.input_schema["required"] == ["url"]
    assert WebSearchTool(None).definition.input_schema["required"] == ["query"]


# --------------------------------------------------------------------------- html_to_text


def test_html_to_text_keeps_title_drops_scripts_and_collapses_whitespace() -> None:
    title, text = html_to_text(PAGE)
    assert title == "The Test Page"
    assert text.splitlines() == [
        "Heading & more",
        "First paragraph spans lines.",
        "Second",
        "line bold text",
        "one",
        "two",
    ]
    for hidden in ("secret", "color", "JavaScript", "hidden", "The Test"):
        assert hidden not in text


def test_html_to_text_tolerates_broken_markup() -> None:
    title, text = html_to_text("<p>open <i>never closed</b></script> <svg><title>t</title></svg>")
    assert title == ""
    assert text == "open never closed"
    assert html_to_text("") == ("", "")
    assert html_to_text("<title>only</title><title>second</title>") == ("only", "")


# --------------------------------------------------------------------------- web_fetch


async def test_fetch_html_page(record: Web) -> None:
    result = await fetch({"url": f"{record.base}/page"})
    assert result == {
        "success": True,
        "url": f"{record.base}/page",
        "title": "The Test Page",
        "text": "Heading & more\nFirst paragraph spans lines.\nSecond\nline bold text\none\ntwo",
        "truncated": False,
    }


async def test_fetch_plain_text_passes_through(record: Web) -> None:
    result = await fetch({"url": f"{record.base}/plain"})
    assert result["success"] is True
    assert result["title"] == ""
    assert result["text"] == "Just   plain <b>text</b>\nsecond line"
    assert result["truncated"] is False


async def test_fetch_follows_redirects_and_reports_final_url(record: Web) -> None:
    result = await fetch({"url": f"{record.base}/redirect"})
    assert result["success"] is True
    assert result["url"] == f"{record.base}/page"
    assert result["title"] == "The Test Page"
    assert record.served == [
        "/redirect",
        "/redirect-2",
        "/page",
    ]


async def test_fetch_decodes_declared_and_sniffed_charsets(record: Web) -> None:
    latin = await fetch({"url": f"{record.base}/latin1"})
    assert (latin["title"], latin["text"]) == ("Caf\u00e9", "na\u00efve r\u00e9sum\u00e9")
    sniffed = await fetch({"url": f"{record.base}/meta-charset"})
    assert sniffed["text"] == "\u20ac 5"


async def test_fetch_bounds_text_default_requested_and_hard_cap(record: Web) -> None:
    url = f"{record.base}/long"
    default = await fetch({"url": url})
    assert (len(default["text"]), default["truncated"]) == (20_000, True)
    small = await fetch({"url": url, "maxChars": 25})
    assert (small["text"], small["truncated"]) == ("abcdefghij" * 2 + "abcde", True)
    capped = await fetch({"url": url, "maxChars": 1_000_000})
    assert (len(capped["text"]), capped["truncated"]) == (100_000, True)
    whole = await fetch({"url": f"{record.base}/plain", "maxChars": 100})
    assert whole["truncated"] is False


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/missing", "HTTP 404"),
        ("/broken", "HTTP 500"),
        ("/binary", "unsupported content type (image/png)"),
        ("/untyped", "unsupported content type (none given)"),
        ("/huge-streamed", "larger than 4194304 bytes"),
        ("/huge-declared", "larger than 4194304 bytes"),
        ("/redirect-loop", "more than 10 redirects"),
        ("/redirect-ftp", "redirected to a non-http(s) URL: ftp://127.0.0.1/file.txt"),
    ],
)
async def test_fetch_failures_come_back_as_envelope(record: Web, path: str, expected: str) -> None:
    result = await fetch({"url": f"{record.base}{path}"})
    assert result["success"] is False
    assert expected in result["error"]
    assert set(result) == {"success", "error"}


@pytest.mark.parametrize(
    ("path", "limit", "error"),
    [
        ("/page", {"max_bytes": 100}, "response from {url} is larger than 100 bytes"),
        ("/slow", {"timeout": 0.2}, "timed out after 0.2s fetching {url}"),
    ],
    ids=["size-cap", "timeout"],
)
async def test_fetch_limits_are_configurable(
    record: Web, path: str, limit: dict[str, Any], error: str
) -> None:
    url = f"{record.base}{path}"
    result = await fetch({"url": url}, **limit)
    assert result == {"success": False, "error": f"web_fetch: {error.format(url=url)}"}


async def test_fetch_network_error(closed_port: int) -> None:
    result = await fetch({"url": f"http://127.0.0.1:{closed_port}/page"})
    assert result["success"] is False
    assert "could not fetch" in result["error"]
    assert "ConnectError" in result["error"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "'url' is required"),
        ({"url": "  "}, "'url' is required"),
        ({"url": 42}, "'url' is required"),
        ({"url": "ftp://127.0.0.1/file"}, "only http and https"),
        ({"url": "file:///etc/passwd"}, "only http and https"),
        ({"url": "127.0.0.1/page"}, "only http and https"),
        ({"url": "http://"}, "no host"),
        ({"url": "http://[::1"}, "invalid URL"),
        ({"url": "http://127.0.0.1/", "maxChars": 0}, "'maxChars' must be at least 1"),
        ({"url": "http://127.0.0.1/", "maxChars": "10"}, "'maxChars' must be an integer"),
        ({"url": "http://127.0.0.1/", "maxChars": True}, "'maxChars' must be an integer"),
        ({"url": "http://127.0.0.1/", "maxChars": 2.5}, "'maxChars' must be an integer"),
        ("[1, 2]", "arguments must be a JSON object"),
        ("{not json", "arguments are not valid JSON"),
    ],
)
async def test_fetch_rejects_bad_arguments_without_a_request(
    record: Web, arguments: Any, expected: str
) -> None:
    result = await fetch(arguments)
    assert result["success"] is False
    assert result["error"].startswith("web_fetch: ")
    assert expected in result["error"]
    assert record.served == []


async def test_fetch_accepts_integral_float_and_empty_arguments_fail(record: Web) -> None:
    result = await fetch({"url": f"{record.base}/plain", "maxChars": 4.0})
    assert result["text"] == "Just"
    assert (await fetch(""))["success"] is False


async def test_fetch_never_raises_on_unexpected_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    class Exploding(httpx.AsyncBaseTransport):
        def __init__(self, *args: Any) -> None:
            pass

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            raise RuntimeError("kaboom")

    monkeypatch.setattr(web_fetch_module, "PublicOnlyTransport", Exploding)
    output = await plan_and_call(WebFetchTool(), {"url": "http://127.0.0.1/x"}, CONTEXT)
    assert not output.ok
    assert "RuntimeError: kaboom" in output.output["error"]


# --------------------------------------------------------------------------- web_search


def searxng(record: Web, client: httpx.AsyncClient, **options: Any) -> SearxngProvider:
    return SearxngProvider(f"{record.base}/searx/", client, **options)


async def test_search_through_searxng(web: tuple[Web, httpx.AsyncClient]) -> None:
    record, client = web
    result = await search_with(searxng(record, client), {"query": " cats & dogs ", "limit": 3})
    assert result == {
        "success": True,
        "query": "cats & dogs",
        "results": [
            {"title": "Result one", "url": "https://example.org/1", "snippet": "first snippet"},
            {"title": "", "url": "https://example.org/2", "snippet": ""},
            {"title": "Hit 3", "url": "https://example.org/hit/3", "snippet": "s" * 500},
        ],
    }
    (sent,) = record.requested
    url = httpx.URL(sent)
    assert url.path == "/searx/search"
    assert dict(url.params) == {"q": "cats & dogs", "format": "json"}


async def test_search_limit_default_and_clamp(web: tuple[Web, httpx.AsyncClient]) -> None:
    record, client = web
    provider = searxng(record, client)
    assert len((await search_with(provider, {"query": "q"}))["results"]) == 5
    assert len((await search_with(provider, {"query": "q", "limit": 99}))["results"]) == 10
    assert len((await search_with(provider, {"query": "q", "limit": 1}))["results"]) == 1


async def test_search_without_provider() -> None:
    assert await search_with(None, {"query": "anything"}) == {
        "success": False,
        "error": "web_search has no search provider configured",
    }


async def test_search_empty_results_is_success(web: tuple[Web, httpx.AsyncClient]) -> None:
    class Nothing:
        async def search(self, query: str, limit: int) -> list[SearchResult]:
            return []

    assert await search_with(Nothing(), {"query": "q"}) == {
        "success": True,
        "query": "q",
        "results": [],
    }


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("boom", 'search provider answered HTTP 502: {"detail":"search engine exploded"}'),
        ("not json", "search provider answered with non-JSON: <html>oops</html>"),
        ("no results", "search provider reply has no 'results' list"),
    ],
)
async def test_search_provider_failures(
    web: tuple[Web, httpx.AsyncClient], query: str, expected: str
) -> None:
    record, client = web
    result = await search_with(searxng(record, client), {"query": query})
    assert result == {"success": False, "error": f"web_search: {expected}"}


async def test_searxng_wrong_base_is_an_http_error(web: tuple[Web, httpx.AsyncClient]) -> None:
    record, client = web
    provider = SearxngProvider(record.base, client)  # no /searx prefix: 404
    with pytest.raises(SearchError, match="HTTP 404"):
        await provider.search("q", 3)


async def test_search_timeout_and_network_error(
    web: tuple[Web, httpx.AsyncClient], closed_port: int
) -> None:
    record, client = web
    slow = await search_with(searxng(record, client, timeout=0.2), {"query": "slow"})
    assert slow == {"success": False, "error": "web_search: search provider timed out after 0.2s"}
    down = SearxngProvider(f"http://127.0.0.1:{closed_port}", client)
    result = await search_with(down, {"query": "q"})
    assert result == {
        "success": False,
        "error": "web_search: search provider unreachable: ConnectError",
    }


async def test_search_provider_exception_becomes_failure() -> None:
    class Broken:
        async def search(self, query: str, limit: int) -> list[SearchResult]:
            raise RuntimeError("index corrupted")

    class Greedy:
        async def search(self, query: str, limit: int) -> list[SearchResult]:
            return [SearchResult(f"t{n}", f"https://e.org/{n}", "") for n in range(20)]

    result = await search_with(Broken(), {"query": "q"})
    assert result == {
        "success": False,
        "error": "web_search: search failed: RuntimeError: index corrupted",
    }
    assert len((await search_with(Greedy(), {"query": "q", "limit": 2}))["results"]) == 2


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "'query' is required"),
        ({"query": ""}, "'query' is required"),
        ({"query": ["a"]}, "'query' is required"),
        ({"query": "q", "limit": 0}, "'limit' must be at least 1"),
        ({"query": "q", "limit": "3"}, "'limit' must be an integer"),
        ("null", "arguments must be a JSON object"),
        ("{", "arguments are not valid JSON"),
    ],
)
async def test_search_rejects_bad_arguments(arguments: Any, expected: str) -> None:
    class MustNotBeCalled:
        async def search(self, query: str, limit: int) -> list[SearchResult]:
            raise AssertionError("provider called")

    result = await search_with(MustNotBeCalled(), arguments)
    assert result["success"] is False
    assert result["error"].startswith("web_search: ")
    assert expected in result["error"]
