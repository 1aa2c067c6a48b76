"""`plugin-conformance diff OLD.json NEW.json`: what changed between two runs, per target.

An item is a target, a requirement and a tool (none for a plugin-level item). Its status has a
rank: failed and stale baseline entries 3, warned 2, not-exercised 1, everything else 0
(passed, accepted by the baseline, skipped, not applicable). A higher rank in the new run is a
regression, a lower one a fix; an item only in the new run appeared (a regression when it
ranks above 0), one only in the old run disappeared. A setup failure says so, since everything
behind it then disappears too. Exit status 1 when anything regressed."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from plugin_spec.json_types import JsonObject, loads, objects_in

RANK = {"failed": 3, "stale-baseline-entry": 3, "warned": 2, "not-exercised": 1}


class ReportError(Exception):
    """A file that is not a conformance JSON report; the message names it and why."""


@dataclass(frozen=True)
class Change:
    target: str
    requirement: str
    tool: str | None
    old: str | None  # None: not in the old run
    new: str | None  # None: not in the new run
    setup: bool = False

    @property
    def item(self) -> str:
        return f"{self.requirement}{f' [{self.tool}]' if self.tool else ''}"

    def to_json(self) -> JsonObject:
        """Every field by its name: all are JSON values already."""
        return asdict(self)


@dataclass
class Comparison:
    regressed: list[Change] = field(default_factory=list)
    fixed: list[Change] = field(default_factory=list)
    appeared: list[Change] = field(default_factory=list)
    disappeared: list[Change] = field(default_factory=list)
    targets_added: list[str] = field(default_factory=list)
    targets_removed: list[str] = field(default_factory=list)

    def to_json(self) -> JsonObject:
        kinds = ("regressed", "fixed", "appeared", "disappeared")
        document: JsonObject = {k: [c.to_json() for c in getattr(self, k)] for k in kinds}
        document["targets_added"] = list(self.targets_added)
        document["targets_removed"] = list(self.targets_removed)
        return document


def load_report(path: Path) -> JsonObject:
    """A JSON report written by --conformance-report, or ReportError naming what is wrong."""
    try:
        document = loads(path.read_text("utf-8"))
    except OSError as exc:
        raise ReportError(f"{path}: cannot be read: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: not a JSON report: {exc}") from None
    if not isinstance(document, dict):
        raise ReportError(f"{path}: not a JSON report: expected an object")
    results = document.get("results")
    if not isinstance(results, list) or not all(
        isinstance(r, dict) and {"plugin", "requirement", "status"} <= r.keys() for r in results
    ):
        raise ReportError(
            f"{path} /results: expected the list of records a --conformance-report JSON "
            "file holds (each with plugin, requirement and status)"
        )
    return document


def compare(old: JsonObject, new: JsonObject) -> Comparison:
    """The changes from the old report to the new one, in the new report's order."""
    before = _items(old)
    after = _items(new)
    comparison = Comparison()
    old_targets = {key[0] for key in before}
    new_targets = {key[0] for key in after}
    comparison.targets_added = sorted(new_targets - old_targets)
    comparison.targets_removed = sorted(old_targets - new_targets)
    for key, record in after.items():
        change = _change(key, before.get(key), record)
        was = RANK.get(change.old or "", 0)
        now = RANK.get(change.new or "", 0)
        if change.old is None:
            comparison.appeared.append(change)
            if now > 0:
                comparison.regressed.append(change)
        elif now > was:
            comparison.regressed.append(change)
        elif now < was:
            comparison.fixed.append(change)
    for key, record in before.items():
        if key not in after:
            comparison.disappeared.append(_change(key, record, None))
    return comparison


Item = tuple[str, str, str | None]  # target, requirement, tool


def _items(document: JsonObject) -> dict[Item, JsonObject]:
    return {_item(r): r for r in objects_in(document["results"])}


def _item(record: JsonObject) -> Item:
    tool = record.get("tool")
    return str(record["plugin"]), str(record["requirement"]), None if tool is None else str(tool)


def _change(key: Item, old: JsonObject | None, new: JsonObject | None) -> Change:
    either = new or old or {}
    return Change(
        key[0],
        key[1],
        key[2],
        str(old["status"]) if old else None,
        str(new["status"]) if new else None,
        bool(either.get("setup")),
    )


def format_comparison(comparison: Comparison) -> str:
    """The changes as text, by kind and target."""
    lines: list[str] = []
    for target in comparison.targets_added:
        lines.append(f"new target: {target}")
    for target in comparison.targets_removed:
        lines.append(f"target gone: {target}")
    sections = (
        ("regressed", comparison.regressed),
        ("fixed", comparison.fixed),
        ("appeared", comparison.appeared),
        ("disappeared", comparison.disappeared),
    )
    for title, changes in sections:
        if not changes:
            continue
        lines.append(f"{title} ({len(changes)}):")
        for change in changes:
            setup = " (setup: the target did not load or start)" if change.setup else ""
            lines.append(
                f"  {change.target} {change.item}: {change.old or '-'} -> {change.new or '-'}"
                f"{setup}"
            )
    counts = ", ".join(f"{len(changes)} {title}" for title, changes in sections)
    lines.append(counts)
    return "\n".join(lines) + "\n"
