"""Section 1: a worker round trip, against the floor of a bare newline-JSON echo.

Four clients each keep one echo process running, warmed up before timing:

- floor: a minimal asyncio client (integer ids, one reader task, a dict of futures, the
  host's JSON codec) talking to benchmarks/workers/echo_raw.py: what any stdio JSON-RPC
  host must pay at least;
- manager: PluginProcessManager.invoke against the same echo_raw.py;
- manager + SDK worker: PluginProcessManager.invoke against echo_sdk.py (fengyu_worker);
- MCP SDK: mcp's stdio_client + ClientSession.call_tool against echo_mcp.py (the SDK's
  high-level server).

Each case (payload x sequential/concurrent) measures one batch of N calls per client per
repetition, the clients taking turns within a repetition (in a rotating order), so slow drifts
of the machine hit all of them alike. Per-call time = batch time / N; the median over
repetitions is reported, and beside it the spread: the lowest and highest ratio of one
repetition's batches (manager and floor batches of one repetition run back to back, so a
busy moment of the machine hits both).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, WORKERS, Row, Settings, median
from plugin_spec.framing import MAX_FRAME_BYTES
from reference_host.process.launch import WorkerSpec
from reference_host.process.manager import PluginProcessManager

SECTION = "1 worker round trip"
SMALL_TEXT = "lorem ipsum dolor sit amet, consectetur adipiscing elit; sed do eiusmod temp"
MIB = 1024 * 1024
FLOOR, MANAGER, SDK = "floor", "manager", "manager + SDK worker"
MCP, MCP_STRUCTURED = "MCP SDK", "MCP SDK, default structured output"
TARGET_FLOOR = 1.3  # manager / floor at most, in wall time and in the host's CPU
TARGET_MCP = 15.0  # MCP / manager at least, 100 B sequential (at 1 MiB both carry the bytes)


def payload(size: int) -> dict[str, str]:
    """Echo params of about size bytes of JSON: {"text": "..."}."""
    if size <= len(SMALL_TEXT) + 20:
        return {"text": SMALL_TEXT}  # 88 bytes as params, ~130 as a whole request
    words = "lorem ipsum dolor sit amet "
    return {"text": (words * (size // len(words) + 1))[:size]}


Call = Callable[[dict[str, Any]], Awaitable[Any]]


def _codec() -> tuple[str, Callable[[Any], bytes], Callable[[bytes], Any]]:
    """The floor's JSON codec: orjson where the manager uses it too (the fast extra), so the
    floor stays the least a host could pay with the same codec, else the stdlib's json."""
    try:
        import orjson
    except ImportError:
        return "json", lambda value: json.dumps(value, separators=(",", ":")).encode(), json.loads
    return "orjson", orjson.dumps, orjson.loads


CODEC, _dumps, _loads = _codec()


class FloorClient:
    """The least a host can do: write a frame, read frames, match replies by id."""

    def __init__(self, argv: list[str]) -> None:
        self._argv = argv
        self._next = 0
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            *self._argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=MAX_FRAME_BYTES + 1,
        )
        self._reader = asyncio.create_task(self._read())

    async def call(self, params: dict[str, Any]) -> Any:
        assert self._process is not None and self._process.stdin is not None
        self._next += 1
        request_id = self._next
        future = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        frame = {"jsonrpc": "2.0", "id": request_id, "method": "echo", "params": params}
        self._process.stdin.write(_dumps(frame) + b"\n")
        await self._process.stdin.drain()
        return (await future)["result"]

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        while line := await stdout.readline():
            message = _loads(line)
            self._pending.pop(message["id"]).set_result(message)

    async def close(self) -> None:
        if self._process is None:
            return
        assert self._process.stdin is not None
        self._process.stdin.close()
        await self._process.wait()
        if self._reader is not None:
            await self._reader


@dataclass
class Client:
    name: str
    call: Call


async def _mcp_clients(stack: contextlib.AsyncExitStack, errlog: Any) -> list[Client]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    server = StdioServerParameters(
        command=sys.executable, args=[str(WORKERS / "echo_mcp.py")], cwd=str(REPO)
    )
    read, write = await stack.enter_async_context(stdio_client(server, errlog=errlog))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()

    def tool(name: str) -> Call:
        async def call(params: dict[str, Any]) -> Any:
            result = await session.call_tool(name, params)
            return {"text": result.content[0].text}

        return call

    return [Client(MCP, tool("echo")), Client(MCP_STRUCTURED, tool("echo_structured"))]


def _mcp_version() -> str | None:
    """The installed MCP Python SDK's version, or None when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp")
    except PackageNotFoundError:
        return None


async def _batch(
    call: Call, params: dict[str, Any], n: int, concurrent: bool
) -> tuple[float, float]:
    """Wall seconds of the batch, and the CPU seconds this (the host's) process spent on it:
    the echo processes are children, so only the client side counts, without the
    scheduling latency of waking them up that makes the wall time of small calls noisy."""
    start, cpu = time.perf_counter(), time.process_time()
    if concurrent:
        await asyncio.gather(*(call(params) for _ in range(n)))
    else:
        for _ in range(n):
            await call(params)
    return time.perf_counter() - start, time.process_time() - cpu


async def _measure(settings: Settings) -> tuple[list[Row], list[str]]:
    with tempfile.TemporaryDirectory(prefix="bench-rpc-") as temp:
        return await _measure_in(settings, Path(temp))


async def _measure_in(settings: Settings, temp: Path) -> tuple[list[Row], list[str]]:
    env = {"PYTHONPATH": str(REPO)}
    manager = PluginProcessManager()
    for plugin_id, script in (("echo.raw", "echo_raw.py"), ("echo.sdk", "echo_sdk.py")):
        manager.register(
            WorkerSpec(
                plugin_id=plugin_id,
                root=REPO,
                argv=(sys.executable, str(WORKERS / script)),
                data_dir=temp / plugin_id,
                extra_env=env,
            )
        )
    floor = FloorClient([sys.executable, str(WORKERS / "echo_raw.py")])

    def via_manager(plugin_id: str) -> Call:
        return lambda params: manager.invoke(plugin_id, "echo", params)

    clients = [
        Client(FLOOR, floor.call),
        Client(MANAGER, via_manager("echo.raw")),
        Client(SDK, via_manager("echo.sdk")),
    ]
    rows: list[Row] = []
    with open(os.devnull, "w") as devnull:
        async with contextlib.AsyncExitStack() as stack:
            stack.push_async_callback(manager.close)
            stack.push_async_callback(floor.close)
            await floor.start()
            if _mcp_version() is not None:
                clients.extend(await _mcp_clients(stack, devnull))
            for client in clients:  # start the processes, check the echo once
                params = payload(MIB)
                assert await client.call(params) == params, client.name
            cases = _cases(settings)
            for size, concurrent, n in cases:
                params = payload(size)
                for client in clients:  # warm-up rounds
                    for _ in range(settings.warmup):
                        await _batch(client.call, params, max(2, n // 4), concurrent)
                samples: dict[str, list[float]] = {c.name: [] for c in clients}
                cpu: dict[str, list[float]] = {c.name: [] for c in clients}
                for rep in range(_reps(settings, size)):
                    # Each repetition starts with the next client: no one is always first.
                    for client in clients[rep % len(clients) :] + clients[: rep % len(clients)]:
                        wall, spent = await _batch(client.call, params, n, concurrent)
                        samples[client.name].append(wall / n)
                        cpu[client.name].append(spent / n)
                spread = _spread(samples[MANAGER], samples[FLOOR])
                rows.extend(
                    _rows(size, concurrent, n, {k: median(v) for k, v in samples.items()}, spread)
                )
                per_call = {k: median(v) for k, v in cpu.items()}
                rows.append(
                    _cpu_row(size, concurrent, n, per_call, _spread(cpu[MANAGER], cpu[FLOOR]))
                )
    notes = [
        f"mcp {_mcp_version()} (MCP Python SDK), server: echo_mcp.py, unstructured text reply"
        if _mcp_version()
        else "MCP rows skipped: the MCP Python SDK is not installed (pip install mcp)",
        f"calls per batch: {', '.join(_case_name(s, c, n) for s, c, n in _cases(settings))}; "
        f"{_reps(settings, 100)} batches per client and 100 B case, {_reps(settings, MIB)} per "
        "1 MiB case; median per-call time",
        f"JSON codec of the floor and the manager: {CODEC} (the echo workers use json)",
    ]
    return rows, notes


def _cases(settings: Settings) -> list[tuple[int, bool, int]]:
    small, big = (100, 4) if settings.quick else (300, 12)
    return [
        (100, False, small),
        (100, True, small),
        (MIB, False, big),
        (MIB, True, big),
    ]


def _reps(settings: Settings, size: int) -> int:
    """Batches per client: twice the usual for 100 B, whose batches last milliseconds, so a
    moment of a busy machine moves the median less (a 1 MiB batch is long enough as is)."""
    return settings.reps * 2 + 1 if size < MIB else settings.reps


def _case_name(size: int, concurrent: bool, n: int) -> str:
    label = "1 MiB" if size >= MIB else "100 B"
    return f"{label} {'concurrent' if concurrent else 'sequential'} N={n}"


def _spread(values: list[float], baselines: list[float]) -> str:
    """The range of the per-repetition ratios values[i] / baselines[i]."""
    ratios = [value / base for value, base in zip(values, baselines, strict=True) if base > 0]
    return f"{min(ratios):.2f}-{max(ratios):.2f}x" if ratios else "n/a"


def _cpu_row(size: int, concurrent: bool, n: int, per_call: dict[str, float], spread: str) -> Row:
    floor, manager = per_call[FLOOR], per_call[MANAGER]
    return Row(
        SECTION,
        f"{_case_name(size, concurrent, n)}: host CPU per call, manager / floor",
        manager,
        FLOOR,
        floor,
        target=f"<= {TARGET_FLOOR}x",
        met=manager / floor <= TARGET_FLOOR,
        note=f"what the manager itself costs: {(manager - floor) * 1e6:+.0f} µs of CPU per "
        f"call; spread {spread}",
    )


def _rows(
    size: int, concurrent: bool, n: int, per_call: dict[str, float], spread: str
) -> list[Row]:
    case = _case_name(size, concurrent, n)
    floor, manager, sdk = per_call[FLOOR], per_call[MANAGER], per_call[SDK]
    rows = [
        Row(
            SECTION,
            f"{case}: manager / floor",
            manager,
            FLOOR,
            floor,
            target=f"<= {TARGET_FLOOR}x",
            met=manager / floor <= TARGET_FLOOR,
            note=f"above floor: {(manager - floor) * 1e6:+.0f} µs; spread {spread}",
        ),
        Row(
            SECTION,
            f"{case}: manager + SDK worker / floor",
            sdk,
            FLOOR,
            floor,
            note=f"above floor: {(sdk - floor) * 1e6:+.0f} µs",
        ),
    ]
    if MCP not in per_call:
        return rows
    mcp, structured = per_call[MCP], per_call[MCP_STRUCTURED]

    def overhead(value: float, base: float) -> str:
        """The part of a call above the floor, compared: what each stack adds to the bytes."""
        over, base_over = value - floor, base - floor
        ratio = f" ({over / base_over:.1f}x)" if base_over > 0 else ""
        return f"above floor: {over * 1e6:+.0f} µs vs {base_over * 1e6:+.0f} µs{ratio}"

    held = size < MIB and not concurrent
    return [
        *rows,
        Row(
            SECTION,
            f"{case}: MCP SDK / manager",
            mcp,
            MANAGER,
            manager,
            target=f">= {TARGET_MCP:g}x" if held else "",
            met=mcp / manager >= TARGET_MCP if held else None,
            note=overhead(mcp, manager),
        ),
        Row(
            SECTION,
            f"{case}: MCP SDK / manager + SDK worker",
            mcp,
            SDK,
            sdk,
            note=overhead(mcp, sdk),
        ),
        Row(
            SECTION,
            f"{case}: MCP SDK default structured output / manager",
            structured,
            MANAGER,
            manager,
            note="reference: the reply carries the text twice",
        ),
    ]


def run(settings: Settings) -> tuple[list[Row], list[str]]:
    return asyncio.run(_measure(settings))
