"""Every tool call of a run's process, counted per target and tool (exercised.py reads the
counts back from the items' records), and why a tool counts as not exercised.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.findings import cut

ERROR_CHARS = 300  # of a call's last error, as the reports quote it


@dataclass
class ToolCalls:
    """The calls of one tool: how many, how many succeeded, and how the latest failure
    was answered."""

    calls: int = 0
    successful: int = 0
    last_error: str = ""


class CallLog:
    """Every tool call of this process, by (target label, tool)."""

    def __init__(self) -> None:
        self._tools: dict[tuple[str, str], ToolCalls] = {}

    def add(self, target: str, tool: str, succeeded: bool, answer: str) -> None:
        """One call of tool on target; answer: how it was answered (kept when it failed)."""
        counted = self._tools.setdefault((target, tool), ToolCalls())
        counted.calls += 1
        if succeeded:
            counted.successful += 1
        else:
            counted.last_error = cut(answer, ERROR_CHARS)

    def snapshot(self) -> dict[tuple[str, str], tuple[int, int]]:
        return {key: (c.calls, c.successful) for key, c in self._tools.items()}

    def since(self, before: Mapping[tuple[str, str], tuple[int, int]]) -> list[dict[str, Any]]:
        """The calls made since snapshot `before`, one object per target and tool, as an
        item's record carries them."""
        made = []
        for (target, tool), counted in self._tools.items():
            calls, successful = before.get((target, tool), (0, 0))
            if counted.calls == calls:
                continue
            entry: dict[str, Any] = {
                "target": target,
                "tool": tool,
                "calls": counted.calls - calls,
                "successful_calls": counted.successful - successful,
            }
            if counted.last_error and counted.successful - successful < counted.calls - calls:
                entry["last_error"] = counted.last_error
            made.append(entry)
        return made


def unexercised(
    tool: str, calls: int, dropped: Iterable[str] = (), setup: Iterable[str] = ()
) -> str:
    """Why a tool counts as not exercised: its calls, every one refused, and what of the
    examples file did not help (inputs the schema refused, setup calls that failed)."""
    lines = [
        f"every call of {tool!r} with valid arguments was refused or answered with an error "
        f"({calls} answers), so nothing the tool does was examined; give arguments it accepts "
        "with "
        "--examples-file (and the calls it needs first as `setup`), or accept it in the "
        "baseline"
    ]
    lines += [f"the examples file's {why}" for why in dropped]
    lines += list(setup)
    return "; ".join(lines)
