"""Section 5: the kit on a 1,000-tool plugin, time per tool against a 100-tool one.

Both plugins are generated on the fly into a temporary folder (benchmarks/many_tools.py:
one method per tool, an SDK worker that answers at once), so nothing large is committed.
Each run is a fresh `python -m pytest --plugin-dir ...` subprocess; the figure is the sum of
its item durations (from the JSON report: the checks themselves) divided by the tool count,
and the wall time from spawn to exit is in the note (interpreter start and collection are a
constant that would flatter the large size). The 100-tool plugin is the baseline of the same
run: a kit that scales linearly costs the same per tool at both sizes, so the ratio is held
near 1x.
The static suite (`-m manifest`) and a full run (worker, tools, host) are measured; the full
run uses few hypothesis examples per property (EXAMPLES), since the per-tool figure at the
default 25 examples is that constant times about 5 and says nothing more about scaling.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import Row, Settings, median, run_kit_process
from benchmarks.many_tools import write_plugin

SECTION = "5 kit on a 1,000-tool plugin"
EXAMPLES = 3
TARGET_RATIO = 1.5  # per-tool time at the large size / at the baseline size, at most
RUN_TIMEOUT = 900.0
SUITES = ("manifest", "worker", "tools", "host")


@dataclass(frozen=True)
class KitTime:
    """One kit run: wall seconds from spawn to exit, and item seconds per suite (from the
    JSON report: the checks themselves, without interpreter start and collection)."""

    wall: float
    suites: dict[str, float]
    summary: str


def run_kit(root: Path, extra: tuple[str, ...]) -> KitTime:
    """One kit run on root, timed; a failing run is an error."""
    report = root.parent / f"{root.name}-report"
    argv = [sys.executable, "-m", "pytest", "--plugin-dir", str(root), "-q"]
    argv += ["-p", "no:cacheprovider", "-p", "no:asyncio", "--conformance-derandomize"]
    argv += ["--conformance-report", str(report), *extra]
    elapsed, lines = run_kit_process(argv, RUN_TIMEOUT)
    suites: dict[str, float] = {}
    for record in json.loads(report.with_suffix(".json").read_text("utf-8"))["results"]:
        suites[record["suite"]] = suites.get(record["suite"], 0.0) + record["seconds"]
    return KitTime(elapsed, suites, lines[-1] if lines else "")


def _row(label: str, sizes: tuple[int, int], times: dict[int, list[KitTime]]) -> Row:
    small, large = sizes
    per_tool = {n: median([sum(t.suites.values()) for t in times[n]]) / n for n in sizes}
    ratio = per_tool[large] / per_tool[small]
    suites = {
        n: {suite: median([t.suites.get(suite, 0.0) for t in times[n]]) / n for suite in SUITES}
        for n in sizes
    }
    wall = {n: median([t.wall for t in times[n]]) / n for n in sizes}
    return Row(
        SECTION,
        f"{label}: {large} tools per tool / {small} tools per tool",
        per_tool[large],
        f"{small} tools",
        per_tool[small],
        unit="ms",
        target=f"<= {TARGET_RATIO:g}x",
        met=ratio <= TARGET_RATIO,
        note="; ".join(
            f"{n} tools: runs "
            + ", ".join(f"{t.wall:.1f}" for t in times[n])
            + f" s wall ({wall[n] * 1e3:.1f} ms per tool with start-up), item ms per tool "
            + ", ".join(f"{suite} {ms * 1e3:.2f}" for suite, ms in suites[n].items() if ms)
            for n in sizes
        ),
    )


def run(settings: Settings) -> tuple[list[Row], list[str]]:
    sizes = (10, 100) if settings.quick else (100, 1000)
    runs = 1 if settings.quick else 2
    kinds = {
        "static (-m manifest)": ("-m", "manifest"),
        f"full run ({EXAMPLES} examples per property)": ("--conformance-examples", str(EXAMPLES)),
    }
    rows: list[Row] = []
    summaries: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-kit-tools-") as temp:
        roots = {n: write_plugin(Path(temp), n) for n in sizes}
        for label, extra in kinds.items():
            times: dict[int, list[KitTime]] = {n: [] for n in sizes}
            for _ in range(runs):
                for n in sizes:  # the sizes take turns, so a slow spell hits both
                    taken = run_kit(roots[n], extra)
                    times[n].append(taken)
                    summaries.append(f"{label}, {n} tools: {taken.summary}")
            rows.append(_row(label, sizes, times))
    notes = [
        "kit on generated plugins (benchmarks/many_tools.py), "
        f"{runs} run(s) per size, sizes alternating; outcomes: " + "; ".join(summaries)
    ]
    return rows, notes
