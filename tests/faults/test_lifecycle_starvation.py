"""A lifecycle change while chats are queued to start the plugin's worker (issue 35 item 14).

A sandboxed worker serves one conversation's grants, so under many chats nearly every call
restarts it and the calls queue to start it one after another (the host's worker specs carry
the sandbox policy, so this holds where no sandbox can be made too). A disable waited behind
that whole queue (35 s behind 50 chats). Here the starts are held by the test, one permit
each, so the queue stays put and only the order of events is checked, never a duration: the
change may wait for the start under way, whose worker it then stops, but no chat queued
behind it may start a worker from the old spec before the change has swapped it, and the
change completes while the queued chats are still held.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from reference_host.agent.models import ModelTurn, ScriptedModel, ToolCall
from reference_host.host import Host
from reference_host.process.connection import WorkerConnection
from reference_host.process.launch import WorkerSpec
from reference_host.stream.events import Event
from tests.conftest import MakeHost
from tests.faults.conftest import ProcessGuard
from tests.faults.support import write_worker_plugin

PLUGIN = "test.faults.starved"
TOOL = "starved_probe"
CHATS = 12
OPERATIONS = ["disable", "uninstall", "upgrade"]


class HeldStarts:
    """Worker starts that wait for the test's permission, one permit each; records the spec
    each start came from, in order."""

    def __init__(self, start: Callable[..., Awaitable[WorkerConnection]]) -> None:
        self._start = start
        self._permits = asyncio.Semaphore(0)
        self._entered = asyncio.Condition()
        self.specs: list[WorkerSpec] = []

    async def __call__(self, spec: WorkerSpec, *args: Any, **kwargs: Any) -> WorkerConnection:
        async with self._entered:
            self.specs.append(spec)
            self._entered.notify_all()
        await self._permits.acquire()
        return await self._start(spec, *args, **kwargs)

    def allow(self, count: int) -> None:
        for _ in range(count):
            self._permits.release()

    async def entered(self, count: int) -> None:
        """Return once count starts have entered."""
        async with self._entered:
            await self._entered.wait_for(lambda: len(self.specs) >= count)


def script(chat: int) -> list[ModelTurn]:
    return [
        ModelTurn(tool_calls=(ToolCall(f"call-{chat}", TOOL, json.dumps({"chat": chat})),)),
        ModelTurn(text=f"chat {chat} done"),
    ]


async def chat(host: Host, number: int) -> list[Event]:
    model = ScriptedModel(script(number))
    return [event async for event in host.chat("go", model=model, conversation_id=f"c{number}")]


async def until(condition: Callable[[], bool]) -> None:
    """Yield to the loop until condition holds (the test's ordering, not a timing)."""
    while not condition():
        await asyncio.sleep(0.005)


def changed(host: Host, operation: str) -> bool:
    """Whether the change is committed; from there to the start gate it does not yield."""
    row = host.store.plugin(PLUGIN)
    if operation == "disable":
        return row is not None and not row.enabled
    if operation == "uninstall":
        return row is None
    return row is not None and row.version == "2.0.0"


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_a_lifecycle_change_goes_before_the_chats_queued_to_start_the_worker(
    tmp_path: Path,
    guard: ProcessGuard,
    make_host: MakeHost,
    monkeypatch: pytest.MonkeyPatch,
    operation: str,
) -> None:
    host = make_host()
    versions = [
        write_worker_plugin(tmp_path / "src", PLUGIN, TOOL, version=v) for v in ("1.0.0", "2.0.0")
    ]
    old = await host.install(versions[0])
    starts = HeldStarts(WorkerConnection.start)
    monkeypatch.setattr(WorkerConnection, "start", starts)
    chats = [asyncio.create_task(chat(host, number)) for number in range(CHATS)]
    try:
        # the first chat's call is starting the worker; every other one waits to start it
        await starts.entered(1)
        await until(lambda: host.manager.waiting_starts(PLUGIN) == CHATS - 1)
        operations = {
            "disable": lambda: host.disable(PLUGIN),
            "uninstall": lambda: host.uninstall(PLUGIN),
            "upgrade": lambda: host.install(versions[1]),
        }
        change = asyncio.create_task(operations[operation]())
        await until(lambda: changed(host, operation))
        starts.allow(1)  # the start under way ends; its worker is the change's to stop
        while not change.done():
            entry = asyncio.create_task(starts.entered(len(starts.specs) + 1))
            await asyncio.wait({change, entry}, return_when=asyncio.FIRST_COMPLETED)
            entry.cancel()
            assert all(spec.root != Path(old.root) for spec in starts.specs[1:]), (
                "a chat queued before the change started a worker from the old version"
            )
        await change
        # done while the queue was held: at most one start (from the new spec) went on
        assert len(starts.specs) <= 2, f"the change waited for {len(starts.specs) - 1} starts"
        if operation != "upgrade":  # the worker of the start under way is stopped already
            assert host.manager.connection(PLUGIN) is None
    finally:
        starts.allow(CHATS)
        runs = await asyncio.gather(*chats)
    for number, events in enumerate(runs):  # every chat ends, no event lost
        kinds = [event.type for event in events]
        assert kinds == ["tool", "tool", "token", "done"], (number, kinds)
        if operation == "upgrade":  # answered by the old worker or the new one
            assert events[1].data["success"] is True, events[1].data
    await host.close()
    guard.assert_none_left()
