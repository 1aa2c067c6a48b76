"""`python -m benchmarks [--quick] [--only SECTION ...] [--output PATH]`.

Runs the sections, prints one table (each figure beside its baseline, measured in the same
run, and the target it is held to), and writes it as Markdown to benchmarks/results.md
(full runs only, unless --output says where). --strict exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from benchmarks import (
    codec,
    first_token,
    kit,
    kit_tools,
    lifecycle,
    marketplace,
    minimal_input,
    provider_fit,
    rpc,
    sse,
    startup,
    tool_snapshot,
)
from benchmarks.common import BENCHMARKS, Row, Settings, fmt_ratio, fmt_value, machine

SECTIONS: dict[str, Callable[[Settings], tuple[list[Row], list[str]]]] = {
    "rpc": rpc.run,
    "registry": tool_snapshot.run,
    "sse": sse.run,
    "kit": kit.run,
    "kit-tools": kit_tools.run,
    "first-token": first_token.run,
    "provider-fit": provider_fit.run,
    "startup": startup.run,
    "lifecycle": lifecycle.run,
    "minimal-input": minimal_input.run,
    "marketplace": marketplace.run,
    "codec": codec.run,
}
HEADER = ["Benchmark", "Median", "Baseline (median)", "Ratio", "Target", "Met", "Notes"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a reduced run (smoke test)")
    parser.add_argument("--only", nargs="+", choices=list(SECTIONS), help="run only these sections")
    parser.add_argument(
        "--output",
        type=Path,
        help="where to write the Markdown table (default: benchmarks/results.md on a full "
        "run of every section, nowhere otherwise)",
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    return parser


def cells(row: Row) -> list[str]:
    met = "" if row.met is None else ("yes" if row.met else "**no**")
    return [
        f"{row.section.split()[0]}. {row.label}",
        fmt_value(row.value, row.unit),
        f"{fmt_value(row.baseline, row.unit)} ({row.baseline_label})",
        fmt_ratio(row.ratio),
        row.target,
        met,
        row.note,
    ]


def text_table(rows: list[Row]) -> str:
    table = [HEADER, *(cells(row) for row in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADER))]
    lines = []
    for index, line in enumerate(table):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(line.rstrip() for line in lines)


def markdown(
    rows: list[Row], notes: list[str], info: dict[str, str], settings: Settings, seconds: float
) -> str:
    out = ["# Benchmark results", ""]
    out.append(
        "Written by `python -m benchmarks`"
        + (" --quick" if settings.quick else "")
        + "; every ratio is against a baseline measured in the same run (see README.md)."
    )
    out += ["", "| Machine | |", "| --- | --- |"]
    out += [f"| {key} | {value} |" for key, value in info.items()]
    out.append(f"| run time | {seconds:.0f} s |")
    out += ["", "| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in cells(row)) + " |" for row in rows]
    out += ["", "Notes:", ""] + [f"- {note}" for note in notes]
    return "\n".join(out) + "\n"


def leaks() -> list[str]:
    """Processes or threads this run left behind (there should be none)."""
    found = [
        f"process {child.pid} ({' '.join(child.cmdline()[:3])})"
        for child in psutil.Process().children(recursive=True)
        if child.is_running() and child.status() != psutil.STATUS_ZOMBIE
    ]
    found += [
        f"thread {thread.name}"
        for thread in threading.enumerate()
        if thread is not threading.main_thread() and not thread.daemon
    ]
    return found


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = Settings(quick=args.quick)
    chosen = args.only or list(SECTIONS)
    info = machine()
    info["load average (1 min) at start"] = f"{os.getloadavg()[0]:.2f}"
    print(f"benchmarks ({'quick' if settings.quick else 'full'}): {', '.join(chosen)}")
    print(", ".join(f"{k}: {v}" for k, v in info.items()), flush=True)
    rows: list[Row] = []
    notes: list[str] = []
    started = time.perf_counter()
    for name in chosen:
        section_start = time.perf_counter()
        print(f"running {name}...", end=" ", flush=True)
        section_rows, section_notes = SECTIONS[name](settings)
        rows += section_rows
        notes += section_notes
        print(f"{time.perf_counter() - section_start:.1f} s", flush=True)
    seconds = time.perf_counter() - started
    info["load average (1 min) at end"] = f"{os.getloadavg()[0]:.2f}"
    left = leaks()
    notes.append(f"left running after the run: {', '.join(left) if left else 'nothing'}")
    print()
    print(text_table(rows))
    print()
    for note in notes:
        print(f"- {note}")
    missed = [row for row in rows if row.met is False]
    print(f"\n{len(missed)} target(s) missed; {seconds:.0f} s in all")
    output = args.output
    if output is None and not settings.quick and args.only is None:
        output = BENCHMARKS / "results.md"
    if output is not None:
        output.write_text(markdown(rows, notes, info, settings, seconds), encoding="utf-8")
        print(f"wrote {output}")
    if left:
        return 2
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
