"""What every section shares: settings, timing with medians, result rows, the machine."""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = Path(__file__).resolve().parent
WORKERS = BENCHMARKS / "workers"


def run_kit_process(argv: list[str], timeout: float) -> tuple[float, list[str]]:
    """Run a kit command from the repository, timed from spawn to exit; returns the wall
    seconds and the non-blank stdout lines. A failing run is an error. The sample workers
    start with `#!/usr/bin/env python3`, so this interpreter leads PATH, as in CI."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    start = time.perf_counter()
    done = subprocess.run(
        argv,
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    elapsed = time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} exited with {done.returncode}:\n"
            + "\n".join(lines[-20:])
            + done.stderr[-2000:]
        )
    return elapsed, lines


# The pytest plugins only this project's test extra installs, left out of kit runs as a
# plugin author's environment has them: schemathesis alone imports hypothesis whole (half a
# second) at every pytest start, in the run and in each xdist worker, which no change to the
# kit can move.
NOT_AN_AUTHORS = ("-p", "no:schemathesis", "-p", "no:respx", "-p", "no:anyio")


@dataclass(frozen=True)
class Settings:
    """Sizes of one run; `quick` shrinks everything for a smoke test (< 60 s in all)."""

    quick: bool = False

    @property
    def reps(self) -> int:
        """Timed repetitions of each measurement (the median is reported)."""
        return 3 if self.quick else 7

    @property
    def warmup(self) -> int:
        """Untimed rounds before the timed ones."""
        return 1 if self.quick else 2


@dataclass
class Row:
    """One line of the results table: a measurement, its baseline and their ratio.

    value and baseline are medians in seconds (per call, per snapshot, per run...) unless
    `unit` says otherwise; ratio is value / baseline.
    """

    section: str
    label: str
    value: float
    baseline_label: str
    baseline: float
    unit: str = "ms"
    target: str = ""
    met: bool | None = None
    note: str = ""
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.value / self.baseline if self.baseline else float("inf")


def median(values: list[float]) -> float:
    return statistics.median(values)


def timed(fn: Callable[[], object], reps: int, warmup: int) -> list[float]:
    """Seconds of each of reps calls of fn, after warmup untimed calls."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


async def atimed(fn: Callable[[], Awaitable[object]], reps: int, warmup: int) -> list[float]:
    """timed() for a coroutine function."""
    for _ in range(warmup):
        await fn()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - start)
    return samples


def fmt_value(seconds: float, unit: str) -> str:
    """A median for the table: seconds shown in the row's unit."""
    if unit == "ms":
        return f"{seconds * 1e3:.3f} ms" if seconds < 0.01 else f"{seconds * 1e3:.1f} ms"
    if unit == "us":
        return f"{seconds * 1e6:.1f} µs"
    if unit == "s":
        return f"{seconds:.2f} s"
    return f"{seconds:g} {unit}"


def fmt_ratio(ratio: float) -> str:
    if ratio >= 100:
        return f"{ratio:.0f}x"
    if ratio >= 0.1:
        return f"{ratio:.2f}x"
    return f"1/{1 / ratio:.0f}" if ratio > 0 else "0"


def machine() -> dict[str, str]:
    return {
        "platform": platform.platform(),
        "cpus": str(os.cpu_count()),
        "python": f"{platform.python_implementation()} {sys.version.split()[0]}",
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "packages": ", ".join(f"{name} {_version(name)}" for name in PACKAGES),
    }


PACKAGES = ("mcp", "uvicorn", "httpx", "fastapi", "pytest", "pytest-xdist", "hypothesis")


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"
