"""Concurrent agent runs while plugins are enabled, disabled and upgraded.

Several scripted chats run at once; their tools are cheap (an in-process built-in, ERP
tools on loopback, a raw worker). Meanwhile another task disables, enables and upgrades the
plugins. Every run must see one snapshot from its first turn to its last (and a snapshot the
host was actually in, never a mix of two plugin versions), and every run's events must be
complete: each tool call has exactly one result with its id, and done or error comes last,
exactly once.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import reference_host.plugins.lifecycle
from plugin_spec.tool_definition import Effect, ToolDefinition
from reference_host.agent.models import ModelTurn, ScriptedModel, ToolCall
from reference_host.host import Host
from reference_host.stream.events import Event
from reference_host.tools.callbacks import CallContext, CallPlan, SentAsIs, ToolResult
from sample_plugins.erp_backends import serve_backends
from tests.conftest import MakeHost
from tests.faults.conftest import GOOD_TOOL, ProcessGuard
from tests.faults.erp import PREFIX, erp_host, write_erp_plugin
from tests.faults.support import call_tool, write_worker_plugin

ERP_ID = "faults-app"
V1_TOOLS = {"faults.ping.get": f"{PREFIX}/ping"}
V2_TOOLS = {**V1_TOOLS, "faults.extra.get": f"{PREFIX}/extra"}
BUILTIN = "builtin_echo"
PING, EXTRA = "faults_ping_get", "faults_extra_get"
# The tool lists a run may be shown: the ERP plugin disabled, at v1, or at v2.
STATES = [
    sorted([BUILTIN, GOOD_TOOL]),
    sorted([BUILTIN, GOOD_TOOL, PING]),
    sorted([BUILTIN, GOOD_TOOL, PING, EXTRA]),
]
RUNS = 16
TURNS = 4


class EchoTool(SentAsIs):
    """A cheap in-process built-in that yields to the loop once."""

    definition = ToolDefinition(BUILTIN, "Echo the arguments back.")
    effect = Effect.READ
    owner = "builtin"

    async def call(self, plan: CallPlan, context: CallContext) -> ToolResult:
        await asyncio.sleep(0)
        return ToolResult.of({"success": True, "echo": plan.arguments.object()})


class RecordingModel(ScriptedModel):
    """A scripted model that takes a little time per turn, so runs overlap lifecycle
    changes."""

    async def complete(self, messages, tools):
        await asyncio.sleep(random.uniform(0, 0.01))
        return await super().complete(messages, tools)


async def ok(request: Request) -> JSONResponse:
    return JSONResponse({"success": True, "path": request.url.path})


@pytest.fixture(scope="module")
def erp_url() -> Iterator[str]:
    app = Starlette(routes=[Route(f"{PREFIX}/ping", ok), Route(f"{PREFIX}/extra", ok)])
    with serve_backends(app) as url:
        yield url


def script(run: int) -> list[ModelTurn]:
    turns = [
        ModelTurn(
            tool_calls=(
                ToolCall(f"r{run}-t{turn}-a", BUILTIN, json.dumps({"run": run, "turn": turn})),
                ToolCall(f"r{run}-t{turn}-b", PING, "{}"),
                ToolCall(f"r{run}-t{turn}-c", EXTRA, "{}"),
                ToolCall(f"r{run}-t{turn}-d", GOOD_TOOL, json.dumps({"turn": turn})),
            )
        )
        for turn in range(TURNS)
    ]
    return [*turns, ModelTurn(text=f"run {run} done")]


async def one_run(host: Host, run: int) -> tuple[RecordingModel, list[Event]]:
    await asyncio.sleep(run * 0.01)
    model = RecordingModel(script(run))
    chat = host.chat("go", model=model, conversation_id=f"c{run}", tenant="acme", actor="alice")
    return model, [event async for event in chat]


async def flip(host: Host, sources: dict[str, Path], worker: dict[str, Path], stop) -> int:
    """Disable, enable and upgrade/downgrade the plugins until stop is set."""
    changes = 0
    steps = [
        lambda: host.disable(ERP_ID),
        lambda: host.enable(ERP_ID),
        lambda: host.install(sources["v2"]),
        lambda: host.install(worker["v2"]),
        lambda: host.disable(ERP_ID),
        lambda: host.install(sources["v1"], downgrade=True),
        lambda: host.enable(ERP_ID),
        lambda: host.install(worker["v1"], downgrade=True),
    ]
    while not stop.is_set():
        await steps[changes % len(steps)]()
        changes += 1
        await asyncio.sleep(0.003)
    return changes


def check_events(run: int, events: list[Event]) -> None:
    kinds = [event.type for event in events]
    assert kinds[-1] in ("done", "error"), kinds
    assert kinds.count("done") + kinds.count("error") == 1, kinds
    assert kinds[-1] == "done", events[-1].data
    calls = [e.data for e in events if e.type == "tool" and e.data["phase"] == "call"]
    results = [e.data for e in events if e.type == "tool" and e.data["phase"] == "result"]
    expected = [f"r{run}-t{turn}-{c}" for turn in range(TURNS) for c in "abcd"]
    assert [c["id"] for c in calls] == expected
    assert [r["id"] for r in results] == expected
    tool_events = [e.data for e in events if e.type == "tool"]
    for call, result in zip(tool_events[::2], tool_events[1::2], strict=True):
        assert (call["phase"], result["phase"]) == ("call", "result")
        assert call["id"] == result["id"] and call["name"] == result["name"]
    for result in results:
        output = json.loads(result["output"])
        assert result["success"] is (output.get("success") is not False)
        if result["name"] == BUILTIN:
            assert result["success"] is True, result
        elif result["name"] in (PING, EXTRA) and not result["success"]:
            # not in the run's snapshot, or disabled since the snapshot was taken
            assert output["error"] in (
                f"unknown tool: {result['name']}",
                f"Plugin tool is no longer available: {ERP_ID}",
            )
        elif not result["success"]:  # the worker tool: see the upgrade race test below
            assert set(output) == {"success", "error"} and output["error"]


async def test_runs_see_one_snapshot_and_lose_no_event_while_plugins_change(
    tmp_path: Path, erp_url: str, guard: ProcessGuard, make_host: MakeHost
) -> None:
    host = erp_host(make_host, erp_url, builtins=[EchoTool()])
    sources = {
        "v1": write_erp_plugin(tmp_path / "erp-v1", V1_TOOLS),
        "v2": write_erp_plugin(tmp_path / "erp-v2", V2_TOOLS),
    }
    worker = {
        version: write_worker_plugin(
            tmp_path / "src", "test.faults.good", GOOD_TOOL, version=number
        )
        for version, number in (("v1", "1.0.0"), ("v2", "1.1.0"))
    }
    try:
        await host.install(sources["v1"])
        await host.install(worker["v1"])
        stop = asyncio.Event()
        flipper = asyncio.create_task(flip(host, sources, worker, stop))
        try:
            runs = await asyncio.gather(*(one_run(host, run) for run in range(RUNS)))
        finally:
            stop.set()
            changes = await flipper
        assert changes >= 8, f"only {changes} lifecycle changes happened during the runs"
        shown = set()
        for run, (model, events) in enumerate(runs):
            lists = [sorted(t.name for t in tools) for _, tools in model.seen]
            assert len(lists) == TURNS + 1
            assert all(names == lists[0] for names in lists), f"run {run} saw {lists}"
            assert lists[0] in STATES, f"run {run} saw a mixed snapshot: {lists[0]}"
            shown.add(tuple(lists[0]))
            check_events(run, events)
            for result in (e.data for e in events if e.data.get("phase") == "result"):
                unknown = {"success": False, "error": f"unknown tool: {result['name']}"}
                if result["name"] not in lists[0]:
                    assert json.loads(result["output"]) == unknown
                else:
                    assert json.loads(result["output"]) != unknown
        assert len(shown) >= 2, f"every run saw the same snapshot: {shown}"
    finally:
        await host.close()
    guard.assert_none_left()


async def test_calls_during_a_worker_upgrade_reach_the_old_or_the_new_worker(
    tmp_path: Path, guard: ProcessGuard, make_host: MakeHost
) -> None:
    host = make_host()
    versions = [
        write_worker_plugin(
            tmp_path / "src", "test.faults.upgrade", "upgrade_probe", "slow_exit", version=v
        )
        for v in ("1.0.0", "2.0.0")
    ]
    try:
        await host.install(versions[0])
        first = await call_tool(host, "upgrade_probe", {})
        upgrade = asyncio.create_task(host.install(versions[1]))
        results = []
        while not upgrade.done():
            results.append(await call_tool(host, "upgrade_probe", {}))
            await asyncio.sleep(0.005)
        info = await upgrade
        last = await call_tool(host, "upgrade_probe", {})
    finally:
        await host.close()
    guard.assert_none_left()
    assert last["success"] is True and last["root"] == info.root != first["root"]
    failures = [r["error"] for r in results if r["success"] is not True]
    assert failures == [], f"{len(failures)} of {len(results)} calls failed: {failures[0]}"


async def test_a_disable_during_an_upgrade_is_not_undone(
    tmp_path: Path, erp_url: str, monkeypatch: pytest.MonkeyPatch, make_host: MakeHost
) -> None:
    host = erp_host(make_host, erp_url)
    entered, release = threading.Event(), threading.Event()

    copy = reference_host.plugins.lifecycle.copy_plain_tree

    def paused_copy(source: Path, target: Path) -> None:
        entered.set()
        release.wait(10)
        copy(source, target)

    monkeypatch.setattr(reference_host.plugins.lifecycle, "copy_plain_tree", paused_copy)
    try:
        release.set()
        await host.install(write_erp_plugin(tmp_path / "erp-v1", V1_TOOLS))
        entered.clear()
        release.clear()
        upgrade = asyncio.create_task(host.install(write_erp_plugin(tmp_path / "erp-v2", V2_TOOLS)))
        assert await asyncio.to_thread(entered.wait, 5)
        disabled = await host.disable(ERP_ID)
        assert disabled.enabled is False
        release.set()
        upgraded = await upgrade
        assert upgraded.tools == [EXTRA, PING]
        assert upgraded.enabled is False, "the upgrade re-enabled a disabled plugin"
        assert EXTRA not in host.registry.snapshot().names()
    finally:
        release.set()
