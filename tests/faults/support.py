"""Helpers of the fault suite: small FengYu plugins whose raw worker misbehaves in one way,
an ERP plugin written to a folder, and process checks with psutil."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import psutil

from reference_host.host import Host
from reference_host.tools.callbacks import CallContext, plan_and_call

CONTEXT = CallContext("conv-faults", "run-faults", "acme", "alice")

# Fault workers are files: a worker script (tests/fixtures/workers/<name>.py) becomes
# backend/worker, and the modules it imports (tests/fixtures/workers/lib) sit beside it.
WORKERS = Path(__file__).parents[1] / "fixtures" / "workers"


def write_worker_plugin(
    parent: Path,
    plugin_id: str,
    tool: str,
    worker: str = "well_behaved",
    *,
    settings: dict[str, Any] | None = None,
    version: str = "1.0.0",
    tool_timeout: int | None = None,
    extra_files: dict[str, bytes] | None = None,
) -> Path:
    """A FengYu v2 plugin folder with one read tool (method `run`) served by the named
    fault worker; settings are what that copy of the worker reads from settings.json."""
    root = parent / f"{plugin_id}-{version}"
    (root / "backend").mkdir(parents=True)
    method: dict[str, Any] = {
        "description": "Run the fault probe.",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": True},
        "outputSchema": {
            "type": "object",
            "properties": {"success": {"type": "boolean"}, "summary": {"type": "string"}},
            "required": ["success", "summary"],
        },
    }
    ai_tool: dict[str, Any] = {
        "name": tool,
        "method": "run",
        "effect": "read",
        "description": f"The {tool} probe of the fault suite.",
    }
    if tool_timeout is not None:
        ai_tool["timeoutSeconds"] = tool_timeout
    manifest = {
        "schemaVersion": 2,
        "id": plugin_id,
        "name": plugin_id,
        "description": "A plugin of the fault suite.",
        "version": version,
        "author": "fault-suite",
        "backend": {"callTimeoutSeconds": 30},
        "permissions": [],
        "rpc": {"methods": {"run": method}},
        "aiTools": [ai_tool],
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2))
    for module in (WORKERS / "lib").glob("*.py"):
        shutil.copyfile(module, root / "backend" / module.name)
    script = root / "backend" / "worker"
    shutil.copyfile(WORKERS / f"{worker}.py", script)
    script.chmod(0o755)
    if settings is not None:
        (root / "backend" / "settings.json").write_text(json.dumps(settings))
    for name, content in (extra_files or {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return root


async def call_tool(host: Host, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    """Call a tool through a fresh snapshot's callback, as the agent loop does; the
    output parsed."""
    callback = host.registry.snapshot().get(tool)
    assert callback is not None, f"{tool} is not in the snapshot"
    return (await plan_and_call(callback, arguments or {}, CONTEXT)).output


def is_failure_envelope(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"success", "error"}
        and value["success"] is False
        and isinstance(value["error"], str)
        and value["error"] != ""
    )


def descendants() -> set[int]:
    """Live (non-zombie and zombie alike) descendants of this test process."""
    found = set()
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            found.add(child.pid)
    return found


def alive(pid: int) -> bool:
    """Whether pid runs (a zombie waiting to be reaped counts as gone)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# How long a wait for something that should happen soon may last before the test fails: a
# bound on waiting (generous, so that a loaded machine does not trip it), not a speed claim.
WAIT = 30.0


def wait_gone(pids: Iterable[int], timeout: float = WAIT) -> list[int]:
    """The pids still running after waiting up to timeout for them to die."""
    deadline = time.monotonic() + timeout
    left = [pid for pid in pids if alive(pid)]
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = [pid for pid in left if alive(pid)]
    return left


async def settled(condition: Callable[[], bool], timeout: float = WAIT) -> None:
    """Wait until condition holds (what the host reads from a worker's pipes arrives a
    moment after the call's answer); fails once timeout has passed without it."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.02)


def reap(pids: Iterable[int]) -> None:
    """SIGKILL what a failed test may have left running (its own recorded pids only)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def read_pids(path: Path) -> list[int]:
    if not path.exists():
        return []
    return [int(p) for p in path.read_text().split()]
