"""How `-n N` spreads a kit run over pytest-xdist workers: by the state its items share.

Items of one plugin and suite share what their process built for them: the worker suite one
probe transcript, the host suite one host, the manifest suite the plugin's schema findings;
xdist's scope scheduling keeps each such group in one worker. The per-tool items of the tools
and endpoints suites are dealt out by tool into one group per xdist worker: a tool's items
share its input space, and its effect items (FY-EFF) judge the calls made in their own
process once the worker has lingered and been ended. Dealt out this way, each xdist worker
calls its own tools, ends their worker once, after the last of them, and judges what it saw;
dealt out item by item, each effect item would call its tool again and wait out the linger.
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

PER_TOOL_SUITES = ("tools", "endpoints")


class KitScheduling(LoadScopeScheduling):
    """xdist's scope scheduling, with the kit's scopes (node id
    `conformance.<plugin>.<suite>::<ID> <title>[<tool>]`)."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        self._tools: dict[str, dict[str, int]] = {}  # each plugin-suite's tools, numbered

    def _split_scope(self, nodeid: str) -> str:
        scope, _, name = nodeid.partition("::")
        suite = scope.rpartition(".")[2]
        if suite not in PER_TOOL_SUITES or not name.endswith("]"):
            return scope
        tool = name[name.rindex("[") + 1 : -1]
        tools = self._tools.setdefault(scope, {})
        number = tools.setdefault(tool, len(tools))
        return f"{scope}#{number % max(1, self.numnodes)}"
