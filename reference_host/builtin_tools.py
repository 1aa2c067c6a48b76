"""Names of the tools every host offers besides plugin tools (SPEC F7).

Plugin tool names must not clash with these: a host offers one tool per name.
"""

from __future__ import annotations

BUILTIN_TOOL_NAMES: frozenset[str] = frozenset({"web_search", "web_fetch"})
