"""How `-n N` spreads a kit run over pytest-xdist workers: by the state its items share.

Items of one plugin and suite share what their process built for them: the worker suite one
probe transcript, the host suite one host, the manifest suite the plugin's schema findings;
each such group is one xdist scope, run by one worker. The per-tool items of the tools and
endpoints suites are one scope per tool: a tool's items share its input space, and the
workers take tools one at a time as they finish the last, so that a few slow tools do not
leave one worker running long after the other (dealt out into one fixed group per worker,
the Excel sample's slow tools made one group take 1.6 times the other). A tool's effect
items (FY-EFF) judge the calls made in their own process, once the tool worker has lingered
after its latest call and been ended. So they go to the worker that called the tool, and
only when it has nothing else to run: the linger then passes while it runs other scopes, and
each worker ends its tool worker once. Dealt out item by item, each effect item called its
tool again and waited out the linger.

The other items that end the tool worker (the worker suite's stdout items, FY-WRK-007 and
FY-WRK-021, and the tools suite's items that name no tool, FY-EFF-004) would wait out the
same linger if they came right after a tool: their scopes go after every scope that ends no
worker (manifest, host, upgrade, ...), and the tools go first. So a worker's linger passes
while it runs the static and host items, not at the end of the run.
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

PER_TOOL_SUITES = ("tools", "endpoints")
EFFECTS = "FY-EFF-"  # the requirements that judge the calls of their own process
AFTER = "!effects"  # the suffix of a tool's effect scope
# Suites whose whole-suite scope holds items that end the process's tool worker.
ENDING_SUITES = ("worker", "tools")


class KitScheduling(LoadScopeScheduling):
    """xdist's scope scheduling, with the kit's scopes (node id
    `conformance.<plugin>.<suite>::<ID> <title>[<tool>]`) and effect scopes kept for the
    worker that ran their tool."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        self._tools: dict[str, dict[str, int]] = {}  # each plugin-suite's tools, numbered
        self._ran: dict[str, Any] = {}  # tool scope -> the xdist worker given it

    def _split_scope(self, nodeid: str) -> str:
        scope, _, name = nodeid.partition("::")
        suite = scope.rpartition(".")[2]
        if suite not in PER_TOOL_SUITES or not name.endswith("]"):
            return scope
        tool = name[name.rindex("[") + 1 : -1]
        tools = self._tools.setdefault(scope, {})
        group = f"{scope}#{tools.setdefault(tool, len(tools))}"
        return group + AFTER if name.startswith(EFFECTS) else group

    def _assign_work_unit(self, node: Any) -> None:
        """Give node the first scope it may run: a tool's, else a scope that ends no
        worker, else one that does, else the effect scope of a tool it ran (or whose
        worker is gone); none while neither is left."""
        others = sorted(
            (scope for scope in self.workqueue if not scope.endswith(AFTER)), key=scope_rank
        )
        own = [
            scope for scope in self.workqueue if scope.endswith(AFTER) and self._may(node, scope)
        ]
        chosen = (others or own or [None])[0]
        if chosen is None:
            return
        work_unit = self.workqueue.pop(chosen)
        self._ran.setdefault(chosen, node)
        self.assigned_work.setdefault(node, {})[chosen] = work_unit
        collection = self.registered_collections[node]
        node.send_runtest_some(
            [collection.index(nodeid) for nodeid, done in work_unit.items() if not done]
        )

    def _may(self, node: Any, effects: str) -> bool:
        ran = self._ran.get(effects.removesuffix(AFTER))
        return ran is node or ran is None or ran not in self.assigned_work

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        """Also look again at idle workers: an effect scope one could not take may now be
        the last scope left, and a worker with nothing left is shut down."""
        super().mark_test_complete(node, item_index, duration)
        for other in self.nodes:
            if other is not node and not self._pending_of(self.assigned_work.get(other, {})):
                self._reschedule(other)


def scope_rank(scope: str) -> int:
    """0 for a tool's scope, 2 for a scope whose items end the tool worker (ENDING_SUITES),
    1 for the rest; sorted() keeps xdist's order (most items first) within each."""
    suite = scope.rpartition(".")[2]
    if "#" in suite:
        return 0
    return 2 if suite in ENDING_SUITES else 1
