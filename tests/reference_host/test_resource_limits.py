"""Declared resources (backend.resources) enforced on a worker's process tree: real worker
processes over the process manager, and one call over the host's HTTP API."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from plugin_spec.fengyu_decls import ResourceLimits, resource_limits
from reference_host.agent.models import ModelTurn, ScriptedModel, ToolCall
from reference_host.http.app import create_app
from reference_host.process.launch import WorkerSpec
from reference_host.process.limits import LimitPolicy, Overrun, Usage, overruns, tree_usage
from reference_host.process.manager import PluginProcessManager
from reference_host.process.worker_errors import WorkerResourceLimit
from reference_host.stream.sse_parser import parse
from reference_host.support.loopback import serve_on_loopback
from tests.conftest import MakeHost
from tests.faults.support import WORKERS, wait_gone, write_worker_plugin
from tests.reference_host.stream_items import data, kinds

PLUGIN = "fan.summer.greedy"
QUICK = 0.05  # seconds between samples here; FengYu's once a second would only slow the tests


def greedy_spec(tmp_path: Path) -> WorkerSpec:
    return WorkerSpec(
        plugin_id=PLUGIN,
        root=tmp_path,
        argv=(sys.executable, str(WORKERS / "greedy.py")),
        data_dir=tmp_path / "data",
        extra_env={"PYTHONPATH": str(WORKERS / "lib")},
    )


@pytest.fixture
async def manager() -> AsyncIterator[PluginProcessManager]:
    manager = PluginProcessManager(limits=LimitPolicy(interval=QUICK))
    yield manager
    await manager.close()


def children(tmp_path: Path) -> list[int]:
    found = list((tmp_path / "data").rglob("children"))
    return [int(pid) for f in found for pid in f.read_text().split()]


def test_overruns_name_the_limit_what_was_seen_and_what_was_declared() -> None:
    limits = ResourceLimits(memory_mb=64, max_processes=2)
    assert overruns(Usage(2, 64 * 1024 * 1024), limits) == []
    assert overruns(Usage(3, 64 * 1024 * 1024 + 1), limits) == [
        Overrun("processes", 3, 2),
        Overrun("memory", 65, 64),
    ]
    assert Overrun("processes", 3, 2).message == "Worker exceeded its process limit (3/2)"
    assert Overrun("memory", 65, 64).message == "Worker exceeded its memory limit (65/64 MiB)"
    assert overruns(Usage(50, 10**12), ResourceLimits()) == []


@pytest.mark.parametrize(
    ("backend", "expected"),
    [
        ({"resources": {"memoryMb": 256, "maxProcesses": 4}}, ResourceLimits(256, 4)),
        ({"resources": {"maxProcesses": 1}}, ResourceLimits(None, 1)),
        ({"resources": {"memoryMb": 0, "maxProcesses": True}}, ResourceLimits()),  # 0: not set
        ({"resources": "lots"}, ResourceLimits()),
        ({}, ResourceLimits()),
    ],
)
def test_resource_limits_from_the_manifest(
    backend: dict[str, Any], expected: ResourceLimits
) -> None:
    assert resource_limits({"backend": backend}) == expected
    assert bool(expected) == (expected != ResourceLimits())


async def test_a_worker_over_max_processes_fails_its_pending_call_and_its_tree_is_killed(
    manager: PluginProcessManager, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manager.register(greedy_spec(tmp_path), ResourceLimits(max_processes=2))
    caplog.set_level(logging.ERROR, "reference_host.worker")
    with pytest.raises(WorkerResourceLimit) as raised:
        await manager.invoke(PLUGIN, "run", {"children": 3, "seconds": 60}, caller_timeout=60)
    overrun = raised.value.overrun
    assert (overrun.limit, overrun.declared) == ("processes", 2)
    assert overrun.seen > 2
    assert raised.value.message.startswith("RESOURCE_LIMIT: Worker exceeded its process limit")
    assert [r.levelname for r in caplog.records if "process limit" in r.getMessage()] == ["ERROR"]
    spawned = children(tmp_path)
    assert spawned, "the worker recorded no children"
    assert wait_gone(spawned) == []  # the one in a session of its own too
    # the next call starts a fresh worker, which is fine while it stays within the limit
    answer = await manager.invoke(PLUGIN, "run", {"children": 1}, caller_timeout=30)
    assert answer["success"] is True


async def test_a_worker_over_its_memory_fails_its_pending_call(
    manager: PluginProcessManager, tmp_path: Path
) -> None:
    manager.register(greedy_spec(tmp_path), ResourceLimits(memory_mb=64))
    with pytest.raises(WorkerResourceLimit) as raised:
        await manager.invoke(PLUGIN, "run", {"megabytes": 128, "seconds": 60}, caller_timeout=60)
    overrun = raised.value.overrun
    assert (overrun.limit, overrun.declared) == ("memory", 64)
    assert overrun.seen > 64
    assert "Worker exceeded its memory limit" in raised.value.message


async def test_tree_usage_counts_the_worker_its_children_and_those_that_escaped(
    tmp_path: Path,
) -> None:
    manager = PluginProcessManager(limits=LimitPolicy(bounds=False))
    manager.register(greedy_spec(tmp_path))  # nothing declared, no bounds: nothing watched
    try:
        await manager.invoke(PLUGIN, "run", {"children": 3}, caller_timeout=30)
        connection = manager.connection(PLUGIN)
        assert connection is not None and connection._monitor is None
        usage = await asyncio.to_thread(tree_usage, connection.process.pid, connection.lineage)
        assert usage.processes == 4
        assert usage.rss_bytes > 0
        await manager.invoke(PLUGIN, "run", {"escaped": True}, caller_timeout=30)
        pid, lineage = connection.process.pid, connection.lineage
        assert (await asyncio.to_thread(tree_usage, pid, lineage)).processes == 5
        # no descendant any more: only the lineage token finds it
        assert (await asyncio.to_thread(tree_usage, pid)).processes == 4
    finally:
        await manager.close()


async def test_reporting_only_keeps_the_worker_running(tmp_path: Path) -> None:
    """The kit's way: an overrun is reported, and the worker goes on serving."""
    manager = PluginProcessManager(limits=LimitPolicy(interval=QUICK, enforce=False))
    seen: list[tuple[str, Overrun]] = []
    manager.overrun_observers.append(lambda plugin, overrun: seen.append((plugin, overrun)))
    manager.register(greedy_spec(tmp_path), ResourceLimits(max_processes=2))
    try:
        await manager.invoke(PLUGIN, "run", {"children": 2}, caller_timeout=30)
        deadline = time.monotonic() + 30  # a bound on waiting, generous for a loaded machine
        while not seen and time.monotonic() < deadline:
            await asyncio.sleep(QUICK)
        assert [(plugin, o.limit, o.seen, o.declared) for plugin, o in seen] == [
            (PLUGIN, "processes", 3, 2)
        ]
        connection = manager.connection(PLUGIN)
        assert connection is not None and connection.alive
        assert (await manager.invoke(PLUGIN, "run", {}, caller_timeout=30))["success"] is True
    finally:
        await manager.close()


async def test_a_call_over_http_to_a_worker_over_max_processes_gets_resource_limit(
    make_host: MakeHost, tmp_path: Path
) -> None:
    """The host reads backend.resources from the installed manifest: a scripted chat calls
    a tool whose worker starts more processes than maxProcesses, and the tool result the
    stream carries is the RESOURCE_LIMIT error (checked at FengYu's rate: once a second)."""
    root = write_worker_plugin(tmp_path / "src", PLUGIN, "greedy_run", "greedy")
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["backend"]["resources"] = {"maxProcesses": 2}
    (root / "manifest.json").write_text(json.dumps(manifest))
    turns = [
        ModelTurn(tool_calls=(ToolCall("call-1", "greedy_run", '{"children": 3, "seconds": 25}'),)),
        ModelTurn(text="done"),
    ]

    @contextlib.asynccontextmanager
    async def app() -> AsyncIterator[Any]:
        host = make_host(data_dir=tmp_path / "host")
        try:
            yield create_app(host, lambda: ScriptedModel(list(turns)))
        finally:
            await host.close()

    with serve_on_loopback(make_app=app, lifespan="on", name="limits test") as base_url:
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
            installed = await client.post("/api/plugins", json={"path": str(root)})
            assert installed.status_code == 201, installed.text
            response = await client.post("/api/chat", json={"message": "go"})
    items = parse(response.content)
    results = [
        data(item) for item, kind in zip(items, kinds(items), strict=True) if kind == "tool.result"
    ]
    assert len(results) == 1
    assert results[0]["success"] is False
    error = json.loads(results[0]["output"])["error"]
    assert error.startswith("RESOURCE_LIMIT: Worker exceeded its process limit")
    assert "/2)" in error
