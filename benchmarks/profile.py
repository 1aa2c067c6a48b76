"""Profiles behind the explanations in README.md: `python -m benchmarks.profile rpc|kit`.

rpc: cProfile of N small sequential calls through the floor client and through
     PluginProcessManager.invoke, reduced to what each call costs: Python function calls,
     event-loop iterations, callbacks scheduled, timers, and the functions that differ most.
kit: cProfile of the kit's slowest items on the Excel sample (the FY-HOST pair, which run
     last and on one xdist worker), by cumulative time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import kit, rpc
from benchmarks.common import REPO, WORKERS
from reference_host.process.launch import WorkerSpec
from reference_host.process.manager import PluginProcessManager

CALLS = 3000


def _counts(stats: pstats.Stats, calls: int) -> dict[str, float]:
    table = stats.stats  # type: ignore[attr-defined]
    total = sum(entry[1] for entry in table.values())

    def named(path_end: str, function: str) -> int:
        return sum(
            entry[1]
            for (path, _, name), entry in table.items()
            if path.endswith(path_end) and name == function
        )

    return {
        "Python function calls": total / calls,
        "event-loop iterations (_run_once)": named("base_events.py", "_run_once") / calls,
        "callbacks + timers created (Handle)": named("events.py", "__init__") / calls,
        "timers (call_at)": named("base_events.py", "call_at") / calls,
    }


async def _profile_rpc() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as temp:
        manager = PluginProcessManager()
        argv = (sys.executable, str(WORKERS / "echo_raw.py"))
        manager.register(WorkerSpec("echo.raw", REPO, argv, Path(temp) / "data"))
        floor = rpc.FloorClient(list(argv))
        await floor.start()
        try:
            params = rpc.payload(100)
            clients = {
                "floor": floor.call,
                "manager": lambda p: manager.invoke("echo.raw", "echo", p),
            }
            results = {}
            for name, call in clients.items():
                for _ in range(200):
                    await call(params)
                profile = cProfile.Profile()
                profile.enable()
                for _ in range(CALLS):
                    await call(params)
                profile.disable()
                results[name] = pstats.Stats(profile)
        finally:
            await floor.close()
            await manager.close()
    counts = {name: _counts(stats, CALLS) for name, stats in results.items()}
    print(f"per call, {CALLS} sequential 100 B calls under cProfile:")
    for key in counts["floor"]:
        print(
            f"  {key:40s} floor {counts['floor'][key]:7.1f}   manager {counts['manager'][key]:7.1f}"
        )
    print("\nmanager: functions by own time (tottime), per call:")
    results["manager"].sort_stats("tottime").print_stats(18)


def _profile_kit() -> None:
    with tempfile.NamedTemporaryFile(suffix=".prof", delete=False) as handle:
        output = handle.name
    try:
        argv = [sys.executable, "-m", "cProfile", "-o", output, *kit.command(False)[1:]]
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }
        subprocess.run([*argv, "-k", "FY-HOST"], cwd=REPO, env=env, check=True)
        stats = pstats.Stats(output)
        stats.sort_stats("cumulative").print_stats("conformance|hypothesis/core|engine.py", 25)
    finally:
        os.unlink(output)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__)
    parser.add_argument("what", choices=["rpc", "kit"])
    args = parser.parse_args()
    if args.what == "rpc":
        asyncio.run(_profile_rpc())
    else:
        _profile_kit()


if __name__ == "__main__":
    main()
