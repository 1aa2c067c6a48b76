"""Nothing a worker starts outlives it (spec: host.md#worker-processes-and-cleanup): not a
child that ignores SIGTERM and stays in the worker's group, not a daemon that double-forked and
called setsid(); after a kit run, after each lifecycle operation of the host, and after a host
that was SIGKILLed (its successor on the same data folder ends what it left). Each fixture
process carries a marker in its command line, so it is found wherever it was re-parented."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from reference_host.process.sandbox import support
from tests.conftest import REPO, MakeHost
from tests.faults.conftest import ProcessGuard
from tests.faults.support import call_tool, write_worker_plugin

PLUGIN_ID = "test.faults.lineage"
TOOL = "lineage_probe"
KIT_TIMEOUT = 300.0  # a hang guard: the kit on these workers takes seconds
WAIT = 30.0  # a bound on waiting for processes to appear or end, generous for a loaded machine

# The workers (tests/fixtures/workers) leave sleepers that carry the test's marker.
FAULTS = {"group-child": "group_child", "daemon": "daemon", "both": "group_child_and_daemon"}


def marked(marker: str) -> list[int]:
    """Running (not zombie) processes whose command line holds the marker."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        with contextlib.suppress(psutil.Error):
            if proc.info["status"] != psutil.STATUS_ZOMBIE and marker in (
                proc.info["cmdline"] or []
            ):
                found.append(proc.pid)
    return found


def wait_marked(marker: str, count: int, timeout: float = WAIT) -> list[int]:
    """The marked processes once there are count of them, or after timeout."""
    deadline = time.monotonic() + timeout
    while len(found := marked(marker)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def left(marker: str, timeout: float = WAIT) -> list[int]:
    """The marked processes still running after waiting up to timeout for them to end."""
    deadline = time.monotonic() + timeout
    while (found := marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


@pytest.fixture
def marker() -> Iterator[str]:
    """A fresh marker; whatever still carries it at teardown is killed (a failed test)."""
    value = f"lineage-marker-{uuid.uuid4().hex}"
    yield value
    for pid in marked(value):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def plugin(parent: Path, marker: str, fault: str, version: str = "1.0.0") -> Path:
    return write_worker_plugin(
        parent, PLUGIN_ID, TOOL, FAULTS[fault], settings={"marker": marker}, version=version
    )


@pytest.mark.long
@pytest.mark.parametrize(
    ("fault", "suites"),
    [("group-child", ["-m", "worker"]), ("daemon", ["-m", "worker"]), ("both", [])],
)
def test_a_kit_run_leaves_no_process_of_the_worker(
    tmp_path: Path, marker: str, fault: str, suites: list[str]
) -> None:
    """`pytest --plugin-dir` in a process of its own: once it exits, nothing its workers
    started runs (it started several: the probe restarts the worker)."""
    root = plugin(tmp_path / "src", marker, fault)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    run = subprocess.run(
        [*command, "--plugin-dir", str(root), *suites],
        cwd=tmp_path,
        env={**os.environ, "PYTEST_ADDOPTS": "-p no:asyncio"},
        capture_output=True,
        timeout=KIT_TIMEOUT,
        check=False,
    )
    assert "passed" in run.stdout.decode() or "failed" in run.stdout.decode(), run.stdout
    assert left(marker) == [], "processes of the kit's workers outlived the run"


@pytest.mark.parametrize("fault", ["group-child", "daemon"])
@pytest.mark.parametrize("operation", ["disable", "uninstall", "upgrade", "close"])
async def test_a_lifecycle_operation_ends_what_the_worker_started(
    tmp_path: Path,
    guard: ProcessGuard,
    marker: str,
    fault: str,
    operation: str,
    make_host: MakeHost,
) -> None:
    host = make_host()
    await host.install(plugin(tmp_path / "src", marker, fault))
    assert (await call_tool(host, TOOL))["success"] is True
    assert len(wait_marked(marker, 1)) == 1
    if operation == "disable":
        await host.disable(PLUGIN_ID)
    elif operation == "uninstall":
        await host.uninstall(PLUGIN_ID)
    elif operation == "upgrade":
        await host.install(plugin(tmp_path / "src", marker, fault, version="1.0.1"))
    else:
        await host.close()
    assert left(marker) == [], f"the worker's process outlived {operation}"


HOST_CHILD = """
import asyncio, sys
from pathlib import Path
from reference_host.host import Host, HostConfig
from tests.faults.support import call_tool

async def main():
    host = Host(HostConfig(data_dir=Path(sys.argv[1]), sandbox=sys.argv[5] == "sandbox"))
    await host.install(Path(sys.argv[2]))
    result = await call_tool(host, sys.argv[3])
    written = Path(sys.argv[4] + ".part")  # renamed whole: the test never reads it half-written
    written.write_text(str(result["success"]))
    written.rename(sys.argv[4])
    await asyncio.sleep(600)

asyncio.run(main())
"""


@pytest.mark.parametrize("mode", ["unconfined", "sandbox"])
async def test_a_host_ends_at_start_what_a_killed_host_left(
    tmp_path: Path, guard: ProcessGuard, marker: str, make_host: MakeHost, mode: str
) -> None:
    """A host process is SIGKILLed after its worker started a group child and a daemon.
    Unconfined, both survive it and the next host on the same data folder ends them as it
    starts; in the sandbox (die-with-parent, its own PID namespace) they die with it."""
    if mode == "sandbox" and not support().available:
        pytest.skip(support().reason)
    data_dir, ready = tmp_path / "host", tmp_path / "ready"
    root = plugin(tmp_path / "src", marker, "both")
    child = subprocess.Popen(
        [sys.executable, "-c", HOST_CHILD, str(data_dir), str(root), TOOL, str(ready), mode],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ["PYTHONPATH"]])},
    )
    try:
        deadline = time.monotonic() + WAIT
        while not ready.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists() and ready.read_text() == "True"
        assert len(wait_marked(marker, 2)) == 2
    finally:
        child.kill()
        child.wait(10)
    if mode == "sandbox":
        assert left(marker) == [], "a sandboxed worker's processes outlived a killed host"
        return
    time.sleep(0.5)  # the worker sees stdin EOF and exits; what it started stays
    survivors = marked(marker)
    guard.track(survivors)
    assert len(survivors) == 2, "the fixture's processes should outlive a killed host"
    make_host(data_dir=data_dir, sandbox=False)  # ends what it finds as it starts
    assert left(marker) == [], "the new host left the killed host's worker processes"
