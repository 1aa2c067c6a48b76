"""Ended workers leave no zombie under the host (spec: host.md#worker-processes-and-cleanup).

The host is a child subreaper, so what a worker started comes back to it when the worker
ends (unconfined), and so do a sandbox's processes when its PID namespace collapses. Each
ended worker with two SIGTERM-ignoring children left two zombies before the orphan reaper.
"""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from reference_host.process.sandbox import support
from tests.conftest import MakeHost
from tests.faults.support import call_tool, write_worker_plugin

PLUGIN, TOOL = "test.zombies", "zombies"


def zombies() -> list[int]:
    return [
        child.pid for child in psutil.Process().children() if child.status() == psutil.STATUS_ZOMBIE
    ]


@pytest.mark.parametrize("sandbox", [False, True], ids=["unconfined", "sandbox"])
async def test_ended_workers_leave_no_zombie(
    tmp_path: Path, make_host: MakeHost, sandbox: bool
) -> None:
    if sandbox and not support().available:
        pytest.skip(support().reason)
    host = make_host(sandbox=sandbox)
    await host.install(
        write_worker_plugin(tmp_path / "src", PLUGIN, TOOL, "term_ignoring_children")
    )
    before = set(zombies())
    for _ in range(3):
        assert (await call_tool(host, TOOL, {"spawn": True}))["success"] is True
        await host.manager.stop(PLUGIN, grace=1.0)
    assert set(zombies()) - before == set()
