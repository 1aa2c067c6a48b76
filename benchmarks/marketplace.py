"""Section 11: a marketplace night on this machine (issue 39 part 6).

A generated targets file of N targets (200; 10 with --quick), made of this repository's
fixtures in fixed shares: static FengYu and ERP plugins (some from
archives), a working MCP server, servers that crash at start, hang (stopped at the wall limit)
or flood their stderr.
Every target's kit run is `-m not(tools)` (no tool searches: the night's overhead per target,
not a tool's own search, is what is measured). The whole file runs as 2 shards, then as 4,
each shard a `plugin-conformance marketplace` process, all shards at once; then the shards
are merged.

Rows: the wall time of the night in 4 shards against 2 (on 2 cores more shards only queue);
targets per hour per core; the median cost per target of each kind against the static
plugin's; the slowest 1 % against the median; and the merge of 8x as many targets (the
shard reports copied under new ids) against the merge of the night, the slope of what grows
with the count. The planning table of docs/guide/marketplace.md is computed from these.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, Row, Settings

SECTION = "11 marketplace night"
FIXTURES = REPO / "tests" / "fixtures"
MCP_SERVER = FIXTURES / "mcp" / "server.py"
STATIC = ("ERP-TOOL-005-dotdot", "FY-MAN-003-bad-version", "FY-MAN-002-duplicate-key")
WALL = 20.0  # seconds: what stops a hanging target (a working server's run takes about 8 s)
KIT_ARGS = ("--", "-m", "not(tools)")
RUN_TIMEOUT = 3600.0  # a hang guard for a whole shard, not a figure


def targets(count: int, folder: Path) -> Path:
    """count targets in fixed shares; their kinds are in each line's id."""
    archive = shutil.make_archive(str(folder / "plugin"), "zip", FIXTURES / "plugins", STATIC[1])
    python = sys.executable
    kinds: list[tuple[str, dict[str, Any]]] = [
        ("plugin", {"plugin": str(FIXTURES / "plugins" / STATIC[0])}),
        ("plugin", {"plugin": str(FIXTURES / "plugins" / STATIC[2])}),
        ("archive", {"plugin": archive}),
        ("mcp", {"mcpServer": {"command": python, "args": [str(MCP_SERVER)]}}),
        ("plugin", {"plugin": str(FIXTURES / "plugins" / STATIC[0])}),
        ("crash", {"mcpServer": {"command": python, "args": ["-c", "raise SystemExit(3)"]}}),
        ("mcp", {"mcpServer": {"command": python, "args": [str(MCP_SERVER)]}}),
        ("flood", {"mcpServer": {"command": python, "args": ["-c", FLOOD]}}),
        ("plugin", {"plugin": str(FIXTURES / "plugins" / STATIC[2])}),
        (
            "hang",
            {"mcpServer": {"command": python, "args": ["-c", "import time; time.sleep(600)"]}},
        ),
    ]
    lines = []
    for n in range(count):
        kind, entry = kinds[n % len(kinds)]
        lines.append({**entry, "id": f"{kind}-{n:04d}", "name": f"{kind}-{n:04d}"})
    path = folder / "targets.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


FLOOD = "import sys\nfor _ in range(20000): print('x' * 1000, file=sys.stderr)"


def night(targets_file: Path, shards: int, output: Path, wall: float) -> float:
    """All shards at once, each a marketplace process; the wall seconds until the last ends."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    began = time.perf_counter()
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "conformance",
                "marketplace",
                "--targets",
                str(targets_file),
                "--shard",
                f"{index}/{shards}",
                "--output",
                str(output),
                "--wall",
                str(wall),
                *KIT_ARGS,
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for index in range(1, shards + 1)
    ]
    for process in processes:
        _, err = process.communicate(timeout=RUN_TIMEOUT)
        if process.returncode != 0:
            raise RuntimeError(f"a shard exited with {process.returncode}: {err[-2000:]!r}")
    return time.perf_counter() - began


def merge_seconds(reports: list[Path], output: Path) -> float:
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "merge", *map(str, reports), "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"merge failed: {done.stderr[-2000:]}")
    return time.perf_counter() - began


def scaled(report: Path, times: int, into: Path) -> Path:
    """The shard report with its targets copied times over under new ids (for the slope)."""
    document = json.loads(report.read_text())
    ids = [t["id"] for t in document["targets"]]
    grown = {**document, "results": [], "targets": [], "plugins": [], "tools": [], "claims": []}
    for copy in range(times):

        def renamed(value: str, copy: int = copy) -> str:
            return f"{value}~{copy}"

        grown["results"] += [{**r, "plugin": renamed(r["plugin"])} for r in document["results"]]
        grown["targets"] += [{**t, "id": renamed(t["id"])} for t in document["targets"]]
        grown["plugins"] += document["plugins"]
    grown["shard"] = {
        **document["shard"],
        "assigned": [f"{i}~{c}" for c in range(times) for i in ids],
    }
    into.write_text(json.dumps(grown))
    return into


def run(settings: Settings) -> tuple[list[Row], list[str]]:
    count = 10 if settings.quick else 200
    wall = WALL
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="bench-marketplace-") as tmp:
        folder = Path(tmp)
        targets_file = targets(count, folder)
        two = night(targets_file, 2, folder / "two", wall)
        four = night(targets_file, 4, folder / "four", wall)
        shard_reports = sorted((folder / "four").glob("shard-*-of-4.json"))
        once = merge_seconds(shard_reports, folder / "merged")
        grown = [scaled(r, 8, folder / f"grown-{i}.json") for i, r in enumerate(shard_reports)]
        eight = merge_seconds(grown, folder / "merged-8x")
        merged = json.loads((folder / "merged.json").read_text())
    costs: dict[str, list[float]] = defaultdict(list)
    for target in merged["targets"]:
        costs[target["id"].split("-")[0]].append(float(target["seconds"]))
    every = sorted(s for values in costs.values() for s in values)
    p99 = every[min(len(every) - 1, round(0.99 * (len(every) - 1)))]
    typical = statistics.median(every)
    static = statistics.median(costs["plugin"])
    per_hour_core = count / two * 3600 / cores
    rows = [
        Row(
            SECTION,
            f"night of {count} targets, 4 shards",
            four,
            "2 shards",
            two,
            unit="s",
            note=f"{cores} cores; {per_hour_core:.0f} targets per hour per core (2 shards)",
        ),
        Row(
            SECTION,
            "slowest 1 % of targets",
            p99,
            "median target",
            typical,
            unit="s",
            note=f"{len(every)} targets; the hang targets stop at the {wall:g} s wall",
        ),
        Row(
            SECTION,
            "merge of 8x the targets",
            eight,
            f"merge of {count}",
            once,
            unit="s",
            note="the shard reports copied under new ids: the slope of the merge with the count",
        ),
    ]
    for kind in ("archive", "mcp", "crash", "flood", "hang"):
        if costs[kind]:
            rows.append(
                Row(
                    SECTION,
                    f"cost of a {kind} target",
                    statistics.median(costs[kind]),
                    "static plugin",
                    static,
                    unit="s",
                    note=f"{len(costs[kind])} targets",
                )
            )
    statuses = defaultdict(int)
    for target in merged["targets"]:
        statuses[target["status"]] += 1
    counted = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    notes = [
        f"marketplace: {count} targets ({counted}),"
        f" {per_hour_core:.0f} targets per hour per core in 2 shards; merge {once:.2f} s for "
        f"{count}, {eight:.2f} s for {8 * count}"
    ]
    return rows, notes
