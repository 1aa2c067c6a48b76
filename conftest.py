"""The project's own test runs are parallel by default: `pytest` means `pytest -n auto`.

Most of the suite waits on processes (sandboxed workers, MCP servers, runs of the kit), so
`auto` starts two xdist workers per core; `-n N` or `-n 0` chooses otherwise. Each test goes
to whichever worker is free, but a tutorial's code blocks (docs/tutorials, run by Sybil) share
a folder and a shell's state, so one worker runs all of a tutorial's blocks, in order.
Tests marked `long` (most of a minute each) are handed out first: started last, one would
run on alone while the other workers sit idle at the end.

A kit run (`--plugin-dir`, `--mcp-*`) never reads this file: the kit turns conftest files
off for its runs (conformance/pytest_plugin.py), so a plugin's CI is not made parallel here.

Every process the tests start keeps hypothesis' files in the checkout's .hypothesis: a kit
run in a process of its own starts in a fresh folder, where hypothesis would find none of
its cached Unicode tables and build them again (1.5 s of CPU for the utf-8 codec, a third of
a small kit run); the kit's own searches keep no example database.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

WORKERS_PER_CORE = 2
IN_ORDER = "docs/tutorials/"  # node ids under it run on one worker per file
LONG = "long"

os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(Path(__file__).parent / ".hypothesis"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{LONG}: takes most of a minute; a parallel run starts it first"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long tests first, each group in its collected order (the sort is stable): every
    xdist worker collects, and sorts, the same list."""
    items.sort(key=lambda item: item.get_closest_marker(LONG) is None)


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the option
def pytest_cmdline_main(config: pytest.Config) -> None:
    option = config.option
    if getattr(option, "numprocesses", 0) is None and not hasattr(config, "workerinput"):
        option.numprocesses = "auto"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    return WORKERS_PER_CORE * len(os.sched_getaffinity(0))


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's scope scheduling with one scope per test, but per file under IN_ORDER (its
    `--dist loadgroup` groups by rewriting node ids, which Sybil's items here do not show)."""
    from xdist.scheduler import LoadScopeScheduling

    class TestsAndTutorials(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if path.startswith(IN_ORDER) else nodeid

    return TestsAndTutorials(config, log)
