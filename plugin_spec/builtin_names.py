"""Names of the tools every host offers besides plugin tools
(spec: host.md#tool-snapshots-and-built-in-names).

Plugin tool names must not clash with these: a host offers one tool per name. This module
stays free of third-party imports (the kit imports it); the tools themselves live in
`reference_host.builtins`.
"""

from __future__ import annotations

WEB_SEARCH = "web_search"
WEB_FETCH = "web_fetch"

BUILTIN_TOOL_NAMES: frozenset[str] = frozenset({WEB_SEARCH, WEB_FETCH})
