"""Shard reports joined into one report of the same shape as a single run's.

A shard's report is a kit JSON report with a `shard` object (`index`, `count`, and the ids of
the targets it was `assigned`) and, from a marketplace run, a `targets` list (each target's
id, kind, status, reason and cost). Merging refuses a set that is not exactly one run split
in pieces: a shard missing or given twice, counts that differ, a target that ran in two
shards, or one its shard was assigned and did not run; with the targets file, also a target
of the file that no shard was assigned. The merged report holds every shard's results,
tools, claims and targets, its summary counted again, its run from the first start to the
last end."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from conformance.findings import shown
from conformance.shards import shard_of
from plugin_spec.json_types import JsonObject, JsonValue, as_array, objects_in


class MergeError(ValueError):
    """The reports are not one run split into shards; the message names the file and why."""


@dataclass(frozen=True)
class ShardOf:
    """A report's `shard`: which of how many, and the ids of the targets it was assigned."""

    index: int
    count: int
    assigned: list[str]


@dataclass(frozen=True)
class ShardReport:
    path: Path
    document: JsonObject

    @property
    def shard(self) -> ShardOf:
        shard = self.document.get("shard")
        if not isinstance(shard, dict) or not {"index", "count", "assigned"} <= shard.keys():
            raise MergeError(
                f"{self.path} /shard: not a shard report (run with --shard I/N, or "
                "`plugin-conformance marketplace`)"
            )
        index, count, assigned = shard["index"], shard["count"], shard["assigned"]
        if not isinstance(index, int) or not isinstance(count, int):
            raise MergeError(
                f"{self.path} /shard: index and count must be integers: {shown(shard)}"
            )
        if not isinstance(assigned, list):
            raise MergeError(f"{self.path} /shard/assigned: not a list: {shown(assigned)}")
        return ShardOf(index, count, [str(target) for target in assigned])


def merge(reports: list[ShardReport], expected: list[str] | None = None) -> JsonObject:
    """One report of every shard's; expected: every target id of the run (--targets)."""
    if not reports:
        raise MergeError("no shard reports to merge")
    counts = {r.shard.count for r in reports}
    if len(counts) != 1:
        raise MergeError(f"the reports split the run in different counts: {sorted(counts)}")
    (count,) = counts
    indices = Counter(r.shard.index for r in reports)
    twice = sorted(i for i, n in indices.items() if n > 1)
    missing = sorted(set(range(1, count + 1)) - set(indices))
    if twice or missing:
        raise MergeError(
            f"shards of {count}: "
            + "; ".join(
                part
                for part in (
                    f"given twice: {', '.join(map(str, twice))}" if twice else "",
                    f"missing: {', '.join(map(str, missing))}" if missing else "",
                )
                if part
            )
        )
    ran_in: dict[str, Path] = {}
    for report in reports:
        assigned = set(report.shard.assigned)
        ran = _ran(report)
        for target in sorted(ran):
            if target in ran_in:
                raise MergeError(f"{target} ran twice: in {ran_in[target]} and in {report.path}")
            ran_in[target] = report.path
        if not_run := sorted(assigned - ran):
            raise MergeError(
                f"{report.path}: shard {report.shard.index}/{count} did not run "
                f"{', '.join(not_run)}"
            )
    if expected is not None:
        if unassigned := sorted(set(expected) - set(ran_in)):
            raise MergeError(f"no shard ran {', '.join(unassigned)} (of the targets file)")
        misplaced = sorted(
            t for t in expected if shard_of(t, count) != _index_of(reports, ran_in[t])
        )
        if misplaced:
            raise MergeError(f"ran in another shard than its own: {', '.join(misplaced)}")
    return _joined([r.document for r in reports], count)


def _ran(report: ShardReport) -> set[str]:
    """The targets a shard report ran: its targets list, else the plugins of its results."""
    targets = report.document.get("targets")
    if isinstance(targets, list):
        return {str(t["id"]) for t in objects_in(targets)}
    return {str(r["plugin"]) for r in objects_in(report.document.get("results"))}


def _index_of(reports: list[ShardReport], path: Path) -> int:
    return next(r.shard.index for r in reports if r.path == path)


def _joined(documents: list[JsonObject], count: int) -> JsonObject:
    results = [r for d in documents for r in objects_in(d.get("results"))]
    results.sort(key=lambda r: (str(r["plugin"]), str(r["requirement"]), str(r.get("tool") or "")))
    runs = [run for d in documents if isinstance(run := d.get("run"), dict)]
    summary: JsonObject = {str(s): n for s, n in Counter(r["status"] for r in results).items()}
    merged: JsonObject = {
        "kit": documents[0]["kit"],
        "run": _span(runs),
        "summary": summary,
        "plugins": [p for d in documents for p in as_array(d.get("plugins"))],
        "results": [*results],
        "tools": [t for d in documents for t in as_array(d.get("tools"))],
        "claims": [c for d in documents for c in as_array(d.get("claims"))],
        "shards": count,
    }
    targets = [t for d in documents for t in objects_in(d.get("targets"))]
    if targets:
        merged["targets"] = [*sorted(targets, key=lambda t: str(t["id"]))]
    return merged


def _seconds(value: JsonValue) -> float:
    """A run's seconds (a number in every report the kit writes)."""
    return float(value) if isinstance(value, int | float) else float(str(value))


def _span(runs: list[JsonObject]) -> JsonObject:
    """From the first shard's start to the last shard's end, and the seconds all took."""
    if not runs:
        return {}
    starts = [datetime.fromisoformat(str(r["started"])) for r in runs]
    ends = [
        s + timedelta(seconds=_seconds(r["seconds"])) for s, r in zip(starts, runs, strict=True)
    ]
    first = min(starts)
    return {
        "started": first.isoformat(timespec="seconds"),
        "seconds": round((max(ends) - first).total_seconds(), 3),
        "shard_seconds": round(sum(_seconds(r["seconds"]) for r in runs), 3),
        "dir": runs[0].get("dir", ""),
    }
