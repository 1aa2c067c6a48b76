"""The built-in `web_search` tool and the search providers behind it
(spec: host.md#tool-snapshots-and-built-in-names)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Protocol

import httpx

from plugin_spec.builtin_names import WEB_SEARCH
from plugin_spec.json_types import JsonArray
from plugin_spec.tool_definition import Effect, ToolDefinition
from reference_host.builtins._args import optional_integer, required_string
from reference_host.tools.callbacks import CallContext, CallPlan, SentAsIs, ToolResult, failure

DEFAULT_LIMIT = 5
MAX_LIMIT = 10
SNIPPET_CHARS = 500
NO_PROVIDER = "web_search has no search provider configured"


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str


class SearchError(Exception):
    """A provider could not answer; the message goes to the model in the failure envelope."""


class SearchProvider(Protocol):
    """Where web_search gets results; `limit` is already within 1..MAX_LIMIT."""

    async def search(self, query: str, limit: int) -> list[SearchResult]: ...


class SearxngProvider:
    """A SearXNG-compatible JSON API: `GET {base_url}/search?q=...&format=json`.

    The instance must allow the json format (SearXNG's `search.formats` setting).
    """

    def __init__(self, base_url: str, client: httpx.AsyncClient, *, timeout: float = 15.0):
        self._endpoint = base_url.rstrip("/") + "/search"
        self._client = client
        self._timeout = timeout

    async def search(self, query: str, limit: int) -> list[SearchResult]:
        try:
            response = await self._client.get(
                self._endpoint,
                params={"q": query, "format": "json"},
                headers={"Accept": "application/json"},
                timeout=self._timeout,
            )
        except httpx.TimeoutException:
            raise SearchError(f"search provider timed out after {self._timeout:g}s") from None
        except httpx.HTTPError as exc:
            raise SearchError(f"search provider unreachable: {type(exc).__name__}") from None
        if not response.is_success:
            raise SearchError(
                f"search provider answered HTTP {response.status_code}: {_excerpt(response.text)}"
            )
        try:
            payload = response.json()
        except ValueError:
            raise SearchError(
                f"search provider answered with non-JSON: {_excerpt(response.text)}"
            ) from None
        items = payload.get("results") if isinstance(payload, dict) else None
        if not isinstance(items, list):
            raise SearchError("search provider reply has no 'results' list")
        results: list[SearchResult] = []
        for item in items:
            if len(results) >= limit:
                break
            if not isinstance(item, dict):
                continue
            url = item.get("url")
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                continue
            results.append(
                SearchResult(
                    title=_text(item.get("title")),
                    url=url,
                    snippet=_text(item.get("content"))[:SNIPPET_CHARS],
                )
            )
        return results


WEB_SEARCH_DEFINITION = ToolDefinition(
    name=WEB_SEARCH,
    description=(
        "Search the public web. Returns a list of results, each with title, url and a short "
        "snippet. Use web_fetch to read a result's page."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to search for."},
            "limit": {
                "type": "integer",
                "description": (
                    f"Most results to return (default {DEFAULT_LIMIT}, at most {MAX_LIMIT})."
                ),
                "minimum": 1,
                "maximum": MAX_LIMIT,
            },
        },
        "required": ["query"],
    },
)


class WebSearchTool(SentAsIs):
    """`web_search` over a SearchProvider; without one it answers a clear failure."""

    def __init__(self, provider: SearchProvider | None) -> None:
        self._provider = provider

    definition = WEB_SEARCH_DEFINITION
    effect = Effect.READ
    owner = "builtin"

    async def call(self, plan: CallPlan, context: CallContext) -> ToolResult:
        if self._provider is None:
            return failure(NO_PROVIDER)
        try:
            arguments = plan.arguments.object()
            query = required_string(arguments, "query")
            limit = optional_integer(
                arguments, "limit", default=DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT
            )
        except ValueError as exc:
            return failure(f"web_search: {exc}")
        try:
            found = await self._provider.search(query, limit)
        except SearchError as exc:
            return failure(f"web_search: {exc}")
        except Exception as exc:  # a tool never raises to the model layer (spec: host.md)
            return failure(f"web_search: search failed: {type(exc).__name__}: {exc}")
        results: JsonArray = [asdict(result) for result in found[:limit]]
        return ToolResult.of({"success": True, "query": query, "results": results})


def _text(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _excerpt(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."
