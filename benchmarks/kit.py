"""Section 3: the whole kit on the Excel sample, serial against `-n 2` (pytest-xdist).

Each run is a fresh `python -m pytest --plugin-dir sample_plugins/fan.summer.excel -q
-p no:cacheprovider` subprocess (so interpreter start, imports, collection and the sample's
worker processes are all counted), timed from spawn to exit, without the pytest plugins of
this project's test extra (common.NOT_AN_AUTHORS), as a plugin author runs it. Serial and
parallel runs alternate, so a slow spell of the machine hits both; the median of each is
reported. The default run (25 examples per property) and a thorough one (200) are both
measured: -n 2 pays a second interpreter start and plugin worker, which only a long enough
run earns back.
"""

from __future__ import annotations

import os
import resource
import sys

from benchmarks.common import NOT_AN_AUTHORS, REPO, Row, Settings, median, run_kit_process

SECTION = "3 kit on the Excel sample"
PLUGIN = REPO / "sample_plugins" / "fan.summer.excel"
# The samples' expected failure (the Excel sample keeps the legacy launch, FY-WRK-012), as CI
# passes it: without it every full run of the sample exits 1 and the section stops.
BASELINE = REPO / "sample_plugins" / "conformance-baseline.json"
Runs = list[tuple[float, float]]  # (wall seconds, CPU seconds) of each run
TARGET_SERIAL = 60.0  # seconds, at most
TARGET_SPEEDUP = 1.5  # serial / parallel, at least
RUN_TIMEOUT = 300.0
QUICK_SUBSET = ("-m", "manifest")
# A thorough run (what a nightly job would use): enough hypothesis examples that the items'
# own work outweighs a second interpreter's start-up, which is where -n 2 can pay off.
THOROUGH = ("--conformance-examples", "200")


def command(parallel: bool, extra: tuple[str, ...] = ()) -> list[str]:
    argv = [sys.executable, "-m", "pytest", "--plugin-dir", str(PLUGIN.relative_to(REPO))]
    # Derandomized: both modes then run the same examples, and the runs compare (random
    # examples move a thorough run of the Excel sample by +-30 %).
    argv += ["-q", "-p", "no:cacheprovider", "--conformance-derandomize"]
    argv += ["--conformance-baseline", str(BASELINE.relative_to(REPO)), *NOT_AN_AUTHORS, *extra]
    return argv + (["-n", "2"] if parallel else [])


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(parallel: bool, extra: tuple[str, ...] = ()) -> tuple[float, float, str]:
    """Wall seconds of one kit run, the CPU seconds of its processes (pytest, xdist workers,
    plugin workers), and its summary line; a failing run is an error."""
    cpu = _children_cpu()
    elapsed, lines = run_kit_process(command(parallel, extra), RUN_TIMEOUT)
    return elapsed, _children_cpu() - cpu, lines[-1] if lines else ""


def _alternate(runs: int, extra: tuple[str, ...], summaries: set[str]) -> dict[bool, Runs]:
    """runs serial and runs -n 2 kit runs, taking turns: wall and CPU seconds of each."""
    taken: dict[bool, Runs] = {False: [], True: []}
    for _ in range(runs):
        for is_parallel in (False, True):
            elapsed, seconds, summary = run_once(is_parallel, extra)
            taken[is_parallel].append((elapsed, seconds))
            summaries.add(summary.split(" in ")[0])
    return taken


def _speedup(label: str, taken: dict[bool, Runs]) -> Row:
    slow, fast = (median([wall for wall, _ in taken[mode]]) for mode in (False, True))
    return Row(
        SECTION,
        label,
        slow,
        "-n 2",
        fast,
        unit="s",
        target=f">= {TARGET_SPEEDUP}x",
        met=slow / fast >= TARGET_SPEEDUP,
        note="serial runs: "
        + ", ".join(f"{wall:.1f}" for wall, _ in taken[False])
        + "; -n 2 runs: "
        + ", ".join(f"{wall:.1f}" for wall, _ in taken[True]),
    )


def run(settings: Settings) -> tuple[list[Row], list[str]]:
    runs = 1 if settings.quick else 3
    # --quick keeps the smoke test short: only the static suite (no worker, no hypothesis).
    subset = QUICK_SUBSET if settings.quick else ()
    scope = f" [{' '.join(subset)} only]" if subset else ""
    summaries: set[str] = set()
    default = _alternate(runs, subset, summaries)
    startup = [
        run_once(False, (*subset, "--collect-only")) for _ in range(1 if settings.quick else 2)
    ]
    serial_s = median([wall for wall, _ in default[False]])
    serial_cpu, parallel_cpu = (median([cpu for _, cpu in default[mode]]) for mode in (False, True))
    rows = [
        Row(
            SECTION,
            f"serial wall time (absolute){scope}",
            serial_s,
            "limit",
            TARGET_SERIAL,
            unit="s",
            target=f"<= {TARGET_SERIAL:g} s",
            met=serial_s <= TARGET_SERIAL,
            note="runs: " + ", ".join(f"{wall:.1f}" for wall, _ in default[False]),
        ),
        _speedup(f"serial / -n 2 (speed-up){scope}", default),
        Row(
            SECTION,
            "CPU time (user + sys, all processes): -n 2 / serial",
            parallel_cpu,
            "serial",
            serial_cpu,
            unit="s",
            note=f"so on {os.cpu_count()} idle cores -n 2 is at most "
            f"{min(2, os.cpu_count() or 1) * serial_cpu / parallel_cpu:.2f}x faster "
            "(serial CPU / (-n 2 CPU / cores))",
        ),
        Row(
            SECTION,
            "start-up + collection (--collect-only) / serial run",
            median([s[0] for s in startup]),
            "serial",
            serial_s,
            unit="s",
            note=f"CPU {median([s[1] for s in startup]):.1f} s; every xdist worker pays it "
            "again before its first item",
        ),
    ]
    if not settings.quick:
        thorough = _alternate(2, THOROUGH, summaries)
        rows.append(
            _speedup(f"thorough ({' '.join(THOROUGH)}): serial / -n 2 (speed-up)", thorough)
        )
    notes = [
        f"kit: {' '.join(command(False, subset)[1:])} [-n 2], from {REPO.name}/, "
        f"{runs} run(s) each, alternating; outcome: {'; '.join(sorted(summaries))}"
    ]
    return rows, notes
