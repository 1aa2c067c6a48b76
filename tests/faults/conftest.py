"""Fixtures of the fault suite: a host with a well-behaved plugin, and a process guard."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from reference_host.host import Host
from tests.conftest import MakeHost
from tests.faults.support import descendants, reap, wait_gone, write_worker_plugin

GOOD_ID = "test.faults.good"
GOOD_TOOL = "good_echo"


class ProcessGuard:
    """Remembers the descendants this test process had before the test."""

    def __init__(self) -> None:
        self.before = descendants()
        self.extra: set[int] = set()

    def new(self) -> set[int]:
        return descendants() - self.before

    def assert_none_left(self) -> None:
        left = wait_gone(self.new())
        assert left == [], f"processes left behind: {left}"

    def track(self, pids) -> None:
        """Pids that may not be our descendants any more (orphans): killed at teardown."""
        self.extra.update(pids)


@pytest.fixture
def guard() -> Iterator[ProcessGuard]:
    guard = ProcessGuard()
    yield guard
    reap(guard.new() | guard.extra)
    # Finalise what the test dropped now rather than in the middle of a later test: a
    # future whose exception nobody retrieved logs a traceback from its finaliser, which on
    # Python 3.11 runs ast.parse and can upset a parse pytest has in progress.
    gc.collect()


@pytest.fixture
async def host(tmp_path: Path, guard: ProcessGuard, make_host: MakeHost) -> Host:
    """A host with the well-behaved plugin installed beside the faulty one (made after
    `guard`, so closed before it checks for leftover processes). Unsandboxed: these tests
    follow workers by the pids they report, which a sandbox's PID namespace renumbers; the
    fallback for platforms without a sandbox is what they hold to. Containment inside the
    sandbox has its own tests (tests/security/test_worker_sandbox.py)."""
    host = make_host(sandbox=False)
    await host.install(write_worker_plugin(tmp_path / "src", GOOD_ID, GOOD_TOOL))
    return host
