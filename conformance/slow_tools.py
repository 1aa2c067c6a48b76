"""The hint a run prints after a slow tool: which option lowers how often it is called.

Each tool property (FY-TOOL-*, ERP endpoint checks) calls the tool --conformance-examples
times, and more while it shrinks a failure, so a tool that takes 4 s a call made a run take
minutes with nothing on the screen saying why, or what to change.
"""

from __future__ import annotations

from collections.abc import Iterable

from conformance.options import SEARCH_SUITES
from plugin_spec.json_types import JsonMapping

SLOW_SECONDS = 60.0  # a tool whose property items took this long in all gets the hint
FEWER = 5  # the examples count the hint suggests (at most the run's own)


def slow_tool_hints(records: Iterable[JsonMapping], examples: int) -> list[str]:
    """One line per tool whose property items took SLOW_SECONDS or more in all, slowest
    first, naming the time and the option that lowers it."""
    spent: dict[tuple[str, str], list[float]] = {}
    for record in records:
        tool, seconds = record.get("tool"), record.get("seconds")
        if record.get("suite") not in SEARCH_SUITES or tool is None:
            continue
        if isinstance(seconds, int | float):
            spent.setdefault((str(record.get("plugin")), str(tool)), []).append(float(seconds))
    fewer = max(1, min(FEWER, examples - 1))
    hints = []
    for (plugin, tool), times in sorted(spent.items(), key=lambda item: -sum(item[1])):
        if sum(times) < SLOW_SECONDS:
            continue
        hints.append(
            f"{plugin} tool {tool!r}: its {len(times)} property items took {sum(times):.0f} s "
            f"in all; each calls it about {examples} times (--conformance-examples {examples}), "
            f"more while shrinking a failure: --conformance-examples {fewer} (or the ini key "
            "conformance_examples) makes each call it fewer times, for a quicker, shallower run"
        )
    return hints
