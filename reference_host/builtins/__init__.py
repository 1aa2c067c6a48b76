"""The tools every host offers besides plugin tools: `web_search` and `web_fetch`
(spec: host.md#tool-snapshots-and-built-in-names).

Both are read tools owned by "builtin"; they are ToolCallbacks like any plugin tool.
`web_fetch` reaches public addresses only, and the hosts given in `web_fetch_allow`.
"""

from __future__ import annotations

from collections.abc import Iterable

from plugin_spec.builtin_names import BUILTIN_TOOL_NAMES, WEB_FETCH, WEB_SEARCH
from reference_host.builtins.html_text import html_to_text
from reference_host.builtins.web_fetch import WEB_FETCH_DEFINITION, WebFetchTool
from reference_host.builtins.web_search import (
    WEB_SEARCH_DEFINITION,
    SearchError,
    SearchProvider,
    SearchResult,
    SearxngProvider,
    WebSearchTool,
)
from reference_host.tools.callbacks import ToolCallback

# What the model is offered besides plugin tools; the kit counts them into each request.
BUILTIN_DEFINITIONS = (WEB_SEARCH_DEFINITION, WEB_FETCH_DEFINITION)

__all__ = [
    "BUILTIN_DEFINITIONS",
    "BUILTIN_TOOL_NAMES",
    "WEB_FETCH",
    "WEB_FETCH_DEFINITION",
    "WEB_SEARCH",
    "WEB_SEARCH_DEFINITION",
    "SearchError",
    "SearchProvider",
    "SearchResult",
    "SearxngProvider",
    "WebFetchTool",
    "WebSearchTool",
    "builtin_tools",
    "html_to_text",
]


def builtin_tools(
    search: SearchProvider | None, *, web_fetch_allow: Iterable[str] = ()
) -> list[ToolCallback]:
    """The built-in tools, in name order; `web_fetch_allow` holds `HOST` or `HOST:PORT`
    entries `web_fetch` may reach though they are not public (ValueError for a bad one)."""
    return [WebFetchTool(allow=web_fetch_allow), WebSearchTool(search)]
