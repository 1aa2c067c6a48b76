"""Section 9: plugin lifecycle changes while chats call the plugin (issue 35 item 14).

A Host with the sandbox policy on (as a host starts by default) and one FengYu plugin of one
tool (many_tools.py: an SDK worker that answers at once). N chat loops run, each in a
conversation of its own; the scripted model of each waits TURN_IDLE (0.025 s) per turn, asks
for one call, then answers, and the loop starts its next chat. A sandboxed worker serves one
conversation's grants, so nearly every call restarts it and the calls queue to start it.

- idle (the baseline): `host.disable` of the plugin with its worker running and no chat;
  then `host.install` of the plugin's other version (an upgrade, or a downgrade asked for).
- under N chats: the same, while the loops run, once the queue of starts is at least N/2
  long (the note gives its length at each change). The disable and the upgrade take turns;
  after a disable the plugin is enabled again (untimed) and the queue builds again.

Rows: disable under load / disable idle; upgrade under load / upgrade idle; and disable
under the larger load / under the smaller one, target at most 2x: a change waits for the
start under way and for the old worker to stop, never for the queue of starts, so the
length of the queue must not show (before issue 35 item 14 it grew with it: 35 s behind
50 chats). Where no sandbox can be made the workers run unconfined, and still restart per
conversation (the spec carries the policy).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import Row, Settings, median
from benchmarks.many_tools import write_plugin
from plugin_spec.tool_definition import ToolDefinition
from reference_host.agent.models import Message, ModelTurn, ScriptedModel, ToolCall
from reference_host.host import Host, HostConfig
from reference_host.process.sandbox import support

SECTION = "9 lifecycle under chat load"
TURN_IDLE = 0.025
PLUGIN, TOOL = "bench.tools1", "bench_tool_0"
QUEUE_WAIT = 20.0  # a bound on waiting for the queue to build, not a figure
TARGET_LOAD_RATIO = 2.0


class IdleModel(ScriptedModel):
    """A scripted model that takes TURN_IDLE per turn, as a model's answer would."""

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> ModelTurn:
        await asyncio.sleep(TURN_IDLE)
        return await super().complete(messages, tools)


@dataclass
class Load:
    """N chat loops calling the plugin's tool until stopped."""

    host: Host
    chats: int
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    turns: int = 0
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tasks = [asyncio.create_task(self._loop(n)) for n in range(self.chats)]

    async def _loop(self, number: int) -> None:
        while not self.stop.is_set():
            script = [
                ModelTurn(
                    tool_calls=(ToolCall(f"call-{number}-{self.turns}", TOOL, '{"text": "x"}'),)
                ),
                ModelTurn(text="done"),
            ]
            model = IdleModel(script)
            async for _ in self.host.chat("go", model=model, conversation_id=f"bench-{number}"):
                pass
            self.turns += 1

    async def queued(self) -> int:
        """Wait until at least half the chats wait to start the worker; their number."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + QUEUE_WAIT
        while self.host.manager.waiting_starts(PLUGIN) < self.chats // 2:
            if loop.time() > deadline:
                break
            await asyncio.sleep(0.01)
        return self.host.manager.waiting_starts(PLUGIN)

    async def close(self) -> None:
        self.stop.set()
        await asyncio.gather(*self.tasks)


@dataclass
class Samples:
    disable: list[float] = field(default_factory=list)
    upgrade: list[float] = field(default_factory=list)
    queues: list[int] = field(default_factory=list)


async def timed(change: Awaitable[object]) -> float:
    start = time.perf_counter()
    await change
    return time.perf_counter() - start


async def measure(host: Host, versions: list[Path], chats: int, reps: int, warmup: int) -> Samples:
    """reps rounds of a disable and an upgrade, under chats loops (0: idle)."""
    samples = Samples()
    load = Load(host, chats) if chats else None
    current = 0
    try:
        for rep in range(warmup + reps):
            for kind in ("disable", "upgrade"):
                if load is not None:
                    queue = await load.queued()
                else:  # the worker runs, as it does under load
                    await host.manager.start(PLUGIN)
                    queue = 0
                if kind == "disable":
                    took = await timed(host.disable(PLUGIN))
                    await host.enable(PLUGIN)
                else:
                    current = 1 - current
                    took = await timed(host.install(versions[current], downgrade=True))
                if rep >= warmup:
                    getattr(samples, kind).append(took)
                    samples.queues.append(queue)
    finally:
        if load is not None:
            await load.close()
    return samples


@contextlib.contextmanager
def python_workers() -> Iterator[None]:
    """Python workers run this interpreter (FengYu's FENGYU_PYTHON), which has the SDK."""
    before = os.environ.get("FENGYU_PYTHON")
    os.environ["FENGYU_PYTHON"] = sys.executable
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("FENGYU_PYTHON", None)
        else:
            os.environ["FENGYU_PYTHON"] = before


async def _run(settings: Settings, temp: Path) -> tuple[list[Row], list[str]]:
    loads = (5, 20) if settings.quick else (10, 50)
    reps = 2 if settings.quick else 5
    warmup = 0 if settings.quick else 1  # under load: the queue built is warm-up enough
    versions = []
    for version in ("1.0.0", "1.0.1"):
        root = write_plugin(temp / version, 1)
        manifest = root / "manifest.json"
        manifest.write_text(manifest.read_text().replace('"1.0.0"', f'"{version}"'))
        versions.append(root)
    host = Host(HostConfig(data_dir=temp / "host"))
    try:
        await host.install(versions[0])
        idle = await measure(host, versions, 0, reps, settings.warmup)
        loaded = {n: await measure(host, versions, n, reps, warmup) for n in loads}
    finally:
        await host.close()
    small, large = loads
    idle_disable, idle_upgrade = median(idle.disable), median(idle.upgrade)
    rows = []
    for n in loads:
        queues = ", ".join(str(q) for q in loaded[n].queues)
        rows.append(
            Row(
                SECTION,
                f"disable under {n} chats / idle",
                median(loaded[n].disable),
                "disable idle",
                idle_disable,
                note=f"starts queued at each change: {queues}",
            )
        )
        rows.append(
            Row(
                SECTION,
                f"upgrade under {n} chats / idle",
                median(loaded[n].upgrade),
                "upgrade idle",
                idle_upgrade,
            )
        )
    ratio = median(loaded[large].disable) / median(loaded[small].disable)
    rows.append(
        Row(
            SECTION,
            f"disable under {large} chats / under {small}",
            median(loaded[large].disable),
            f"disable under {small} chats",
            median(loaded[small].disable),
            target=f"<= {TARGET_LOAD_RATIO:g}x",
            met=ratio <= TARGET_LOAD_RATIO,
            note="the queue of starts must not show",
        )
    )
    sandbox = support()
    notes = [
        f"one chat turn idles {TURN_IDLE * 1000:g} ms; {reps} changes of each kind per load",
        "workers sandboxed"
        if sandbox.available
        else f"no sandbox here ({sandbox.reason}): workers unconfined, restarted per conversation",
    ]
    return rows, notes


def run(settings: Settings) -> tuple[list[Row], list[str]]:
    with tempfile.TemporaryDirectory(prefix="bench-lifecycle-") as name, python_workers():
        temp = Path(name)
        temp.chmod(0o755)  # where the host runs as root, the sandbox enters it as nobody
        return asyncio.run(_run(settings, temp))
