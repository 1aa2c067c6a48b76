"""Expected-failures baseline: known failures pass, new ones fail, fixed ones fail as stale.

The file is JSON, so a CI can keep it next to the plugin:

    {"expected_failures": [
      {"plugin": "fan.summer.excel", "requirement": "FY-FILE-001", "reason": "tracked in #12"},
      {"plugin": "fan.summer.excel", "requirement": "FY-TOOL-001", "tool": "excel_query"}
    ]}
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from conformance.sources import JsonLoadError, load_json_file


class BaselineError(Exception):
    """The baseline file is unreadable or malformed; the message names file and pointer."""


@dataclass(frozen=True)
class ExpectedFailure:
    """A known failure; without `tool` it covers every tool of a per-tool requirement."""

    plugin: str
    requirement: str
    reason: str
    tool: str | None = None


@dataclass(frozen=True)
class Baseline:
    path: Path | None
    entries: tuple[ExpectedFailure, ...] = ()

    def expects(
        self, plugin: str, requirement: str, tool: str | None = None
    ) -> ExpectedFailure | None:
        """The first entry (in file order) covering plugin x requirement x tool."""
        hits = [self._index.get((plugin, requirement, tool))]
        if tool is not None:
            hits.append(self._index.get((plugin, requirement, None)))
        found = [hit for hit in hits if hit is not None]
        return min(found)[1] if found else None

    @cached_property
    def _index(self) -> dict[tuple[str, str, str | None], tuple[int, ExpectedFailure]]:
        """Entries by what they cover, with their position: one lookup per item, not a scan
        of the whole baseline (which may list every tool of a large plugin)."""
        index: dict[tuple[str, str, str | None], tuple[int, ExpectedFailure]] = {}
        for position, entry in enumerate(self.entries):
            index.setdefault((entry.plugin, entry.requirement, entry.tool), (position, entry))
        return index

    def unmatched(self, collectable: set[tuple[str, str]]) -> list[ExpectedFailure]:
        """Entries naming no plugin x requirement the kit would check: stale by definition."""
        return [e for e in self.entries if (e.plugin, e.requirement) not in collectable]


def load_baseline(path: Path | None) -> Baseline:
    if path is None:
        return Baseline(None)
    try:
        data = load_json_file(path, str(path)).data
    except JsonLoadError as exc:
        raise BaselineError(f"baseline {exc.message}") from None
    entries = data.get("expected_failures") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise BaselineError(f"baseline {path} /expected_failures: expected a list of entries")
    parsed = []
    for index, entry in enumerate(entries):
        plugin = entry.get("plugin") if isinstance(entry, dict) else None
        requirement = entry.get("requirement") if isinstance(entry, dict) else None
        if not (
            isinstance(entry, dict) and isinstance(plugin, str) and isinstance(requirement, str)
        ):
            raise BaselineError(
                f"baseline {path} /expected_failures/{index}: "
                "expected an object with string 'plugin' and 'requirement'"
            )
        tool = entry.get("tool")
        parsed.append(
            ExpectedFailure(
                plugin,
                requirement,
                str(entry.get("reason", "")),
                tool if isinstance(tool, str) else None,
            )
        )
    return Baseline(path, tuple(parsed))
