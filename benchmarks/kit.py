"""Section 3: the whole kit on the Excel sample, serial against `-n 2` (pytest-xdist).

Each run is a fresh `python -m pytest --plugin-dir sample_plugins/fan.summer.excel -q
-p no:cacheprovider` subprocess (so interpreter start, imports, collection and the sample's
worker processes are all counted), timed from spawn to exit, without the pytest plugins of
this project's test extra (common.NOT_AN_AUTHORS), as a plugin author runs it, with the
samples' baseline and examples file as CI passes them. Serial and parallel runs alternate,
so a slow spell of the machine hits both; each figure is the median of several runs, shown
with the range of the runs, the range of the speed-ups of each serial and -n 2 pair run one
after the other, and the range of the machine's load average (1 min) when they started.
The default run (25 examples per property) and a thorough one (200) are both measured: -n 2
pays a second interpreter start and plugin worker, which only a long enough run earns back.
"""

from __future__ import annotations

import os
import resource
import sys
from dataclasses import dataclass

from benchmarks.common import NOT_AN_AUTHORS, REPO, Row, Settings, median, run_kit_process

SECTION = "3 kit on the Excel sample"
PLUGIN = REPO / "sample_plugins" / "fan.summer.excel"
# The samples' expected failure (the Excel sample keeps the legacy launch, FY-WRK-012), as CI
# passes it: without it every full run of the sample exits 1 and the section stops.
BASELINE = REPO / "sample_plugins" / "conformance-baseline.json"
# The setup calls the Excel tools need (a workbook analyzed first): without them every call
# of 3 tools is refused, and the baseline's FY-PROV-004 entry, which expects the real
# failure, is stale and fails the run.
EXAMPLES = REPO / "sample_plugins" / "conformance-examples.json"
TARGET_SERIAL = 60.0  # seconds, at most
TARGET_SPEEDUP = 1.3  # serial / parallel, at least, for the default run
TARGET_THOROUGH = 1.5  # and for the thorough one
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
    argv += ["--conformance-baseline", str(BASELINE.relative_to(REPO))]
    argv += ["--examples-file", str(EXAMPLES.relative_to(REPO)), *NOT_AN_AUTHORS, *extra]
    return argv + (["-n", "2"] if parallel else [])


@dataclass(frozen=True)
class Run:
    """One kit run: wall and CPU seconds (all its processes), and the load average (1 min)
    as it started."""

    wall: float
    cpu: float
    load: float


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(parallel: bool, extra: tuple[str, ...] = ()) -> tuple[Run, str]:
    """One kit run (wall seconds, the CPU seconds of its processes: pytest, xdist workers,
    plugin workers; the load average as it started) and its summary line; a failing run is
    an error."""
    load = os.getloadavg()[0]
    cpu = _children_cpu()
    elapsed, lines = run_kit_process(command(parallel, extra), RUN_TIMEOUT)
    return Run(elapsed, _children_cpu() - cpu, load), lines[-1] if lines else ""


def _alternate(runs: int, extra: tuple[str, ...], summaries: set[str]) -> dict[bool, list[Run]]:
    """runs serial and runs -n 2 kit runs, taking turns."""
    taken: dict[bool, list[Run]] = {False: [], True: []}
    for _ in range(runs):
        for is_parallel in (False, True):
            done, summary = run_once(is_parallel, extra)
            taken[is_parallel].append(done)
            summaries.add(summary.split(" in ")[0])
    return taken


def spread(values: list[float], unit: str = "") -> str:
    """The median of values with their range, e.g. `12.1 s (10.3-15.0)`."""
    return f"{median(values):.2f}{unit} ({min(values):.2f}-{max(values):.2f})"


def _walls(runs: list[Run]) -> list[float]:
    return [r.wall for r in runs]


def _speedup(label: str, taken: dict[bool, list[Run]], target: float) -> Row:
    """The speed-up of -n 2: the ratio of the medians, with the range of each pair's."""
    slow, fast = (median(_walls(taken[mode])) for mode in (False, True))
    pairs = [s.wall / p.wall for s, p in zip(taken[False], taken[True], strict=True)]
    loads = [r.load for mode in (False, True) for r in taken[mode]]
    return Row(
        SECTION,
        label,
        slow,
        "-n 2",
        fast,
        unit="s",
        target=f">= {target}x",
        met=slow / fast >= target,
        note=f"serial {spread(_walls(taken[False]), ' s')}, "
        f"-n 2 {spread(_walls(taken[True]), ' s')} over {len(pairs)} runs each; "
        f"speed-up of each pair {min(pairs):.2f}-{max(pairs):.2f}x;"
        f" load average {min(loads):.1f}-{max(loads):.1f}",
    )


def run(settings: Settings) -> tuple[list[Row], list[str]]:
    runs = 1 if settings.quick else 5
    # --quick keeps the smoke test short: only the static suite (no worker, no hypothesis).
    subset = QUICK_SUBSET if settings.quick else ()
    scope = f" [{' '.join(subset)} only]" if subset else ""
    summaries: set[str] = set()
    default = _alternate(runs, subset, summaries)
    startup = [
        run_once(False, (*subset, "--collect-only"))[0] for _ in range(1 if settings.quick else 3)
    ]
    serial_s = median(_walls(default[False]))
    serial_cpu, parallel_cpu = (median([r.cpu for r in default[mode]]) for mode in (False, True))
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
            note=f"{spread(_walls(default[False]), ' s')} over {runs} runs",
        ),
        _speedup(f"serial / -n 2 (speed-up){scope}", default, TARGET_SPEEDUP),
        Row(
            SECTION,
            "CPU time (user + sys, all processes): -n 2 / serial",
            parallel_cpu,
            "serial",
            serial_cpu,
            unit="s",
            note=f"-n 2 {spread([r.cpu for r in default[True]], ' s')}, serial "
            f"{spread([r.cpu for r in default[False]], ' s')}; so on {os.cpu_count()} idle "
            f"cores -n 2 is at most {min(2, os.cpu_count() or 1) * serial_cpu / parallel_cpu:.2f}x"
            " faster (serial CPU / (-n 2 CPU / cores))",
        ),
        Row(
            SECTION,
            "start-up + collection (--collect-only) / serial run",
            median(_walls(startup)),
            "serial",
            serial_s,
            unit="s",
            note=f"CPU {median([r.cpu for r in startup]):.2f} s; every xdist worker pays it "
            "again before its first item",
        ),
    ]
    if not settings.quick:
        thorough = _alternate(3, THOROUGH, summaries)
        rows.append(
            _speedup(
                f"thorough ({' '.join(THOROUGH)}): serial / -n 2 (speed-up)",
                thorough,
                TARGET_THOROUGH,
            )
        )
    notes = [
        f"kit: {' '.join(command(False, subset)[1:])} [-n 2], from {REPO.name}/, "
        f"{runs} run(s) each (thorough: 3), alternating; outcome: {'; '.join(sorted(summaries))}"
    ]
    return rows, notes
