"""Section 4: the chat stream over HTTP (uvicorn + SSE) against the same run in-process.

The host has one cheap in-process tool (a ToolCallback passed as a builtin, effect read, so
no approval) and a ScriptedModel that asks for CALLS tool calls, spread over as few turns as
the host allows (at most MAX_CALLS_PER_TURN calls in one turn, as a real model's parallel
calls would be); its last turn answers, which ends the run: 2 x CALLS `tool` events, a
`token` and `done`.

- in-process (baseline): `async for event in host.chat(...)`, each event encoded to its SSE
  bytes (what the server would send), no HTTP;
- HTTP: the real app (reference_host.http.app.create_app) on uvicorn on 127.0.0.1, in a thread of
  this process with its own event loop (as tests/reference_host/test_app.py serves it), read
  with an httpx streaming POST /api/chat on a kept-alive connection, parsed line by line.

Reported: time to `: connected` and to the first complete `tool` frame after sending the
request, and the whole stream's duration (as events per second). The client shares the
interpreter (and the GIL) with the server, so the HTTP figure includes reading the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import REPO, Row, Settings, median
from plugin_spec.tool_definition import Effect, ToolDefinition
from reference_host.agent.loop import MAX_CALLS_PER_TURN, MAX_STEPS
from reference_host.agent.models import ModelTurn, ScriptedModel, ToolCall
from reference_host.host import Host, HostConfig
from reference_host.http.app import create_app
from reference_host.support.loopback import serve_on_loopback
from reference_host.tools.callbacks import CallContext, CallPlan, SentAsIs, ToolResult

SECTION = "4 chat stream (SSE)"
START_TIMEOUT = 10.0
STOP_TIMEOUT = 15.0


class FakeTool(SentAsIs):
    """A cheap built-in: answers at once, in-process."""

    definition = ToolDefinition(
        "bench_echo", "Echo i.", {"type": "object", "properties": {"i": {"type": "integer"}}}
    )
    effect = Effect.READ
    owner = "builtin"

    async def call(self, plan: CallPlan, context: CallContext) -> ToolResult:
        return ToolResult({"success": True, "summary": "ok"})


def model(calls: int) -> ScriptedModel:
    """calls tool calls in turns of at most MAX_CALLS_PER_TURN (the host refuses a larger
    turn), then the answer; within MAX_STEPS turns, the host's bound on one chat."""
    ids = range(calls)
    batches = [ids[i : i + MAX_CALLS_PER_TURN] for i in range(0, calls, MAX_CALLS_PER_TURN)]
    if len(batches) + 1 > MAX_STEPS:
        raise ValueError(f"{calls} calls need more than the host's {MAX_STEPS} model turns")
    turns = [
        ModelTurn(tool_calls=tuple(ToolCall(f"call_{i}", "bench_echo", f'{{"i":{i}}}') for i in b))
        for b in batches
    ]
    return ScriptedModel([*turns, ModelTurn(text="all done")])


def new_host(data: Path) -> Host:
    return Host(HostConfig(data_dir=data), builtins=[FakeTool()])


@dataclass
class Timing:
    connected: float  # to `: connected` (HTTP only; 0 in-process)
    first_tool: float  # to the first complete tool frame / event
    total: float  # to the end of the stream
    events: int


class ProcessServer:
    """benchmarks/sse_server.py in a child process; stop() closes its stdin and reaps it."""

    def __init__(self, data: Path, calls: int) -> None:
        self._argv = [sys.executable, "-m", "benchmarks.sse_server", str(data), str(calls)]
        self._process: subprocess.Popen[bytes] | None = None
        self.base_url = ""

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self._process = subprocess.Popen(
            self._argv, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert self._process.stdout is not None
        ready = threading.Event()
        line: list[bytes] = []

        def read() -> None:
            assert self._process is not None and self._process.stdout is not None
            line.append(self._process.stdout.readline())
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(START_TIMEOUT) or not line[0].startswith(b"PORT "):
            self.stop()
            raise RuntimeError(f"the benchmark server did not start: {line!r}")
        self.base_url = f"http://127.0.0.1:{int(line[0].split()[1])}"

    def stop(self) -> None:
        if self._process is None:
            return
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.close()
        try:
            self._process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process.stdout.close()


class ThreadServer:
    """create_app on uvicorn on 127.0.0.1:<free port>, in a thread of this process (as the
    tests serve it, reference_host.support.loopback); stop() ends it."""

    def __init__(self, data: Path, calls: int) -> None:
        self._data = data
        self._calls = calls
        self._serving: contextlib.AbstractContextManager[str] | None = None
        self.base_url = ""

    def start(self) -> None:
        self._serving = serve_on_loopback(
            make_app=self._app,
            lifespan="on",
            name="benchmark server",
            start_timeout=START_TIMEOUT,
            stop_timeout=STOP_TIMEOUT,
        )
        self.base_url = self._serving.__enter__()

    def stop(self) -> None:
        if self._serving is not None:
            serving, self._serving = self._serving, None
            serving.__exit__(None, None, None)

    @contextlib.asynccontextmanager
    async def _app(self) -> AsyncIterator[Any]:
        host = new_host(self._data)
        try:
            yield create_app(host, lambda: model(self._calls))
        finally:
            await host.close()


async def in_process(host: Host, calls: int) -> Timing:
    start = time.perf_counter()
    first = 0.0
    count = 0
    async for event in host.chat("go", model=model(calls)):
        event.encode()
        count += 1
        if event.type == "error":
            raise RuntimeError(f"the chat stream ended with an error event: {event.data}")
        if not first and event.type == "tool":
            first = time.perf_counter() - start
    return Timing(0.0, first, time.perf_counter() - start, count)


async def over_http(client: httpx.AsyncClient, url: str) -> Timing:
    start = time.perf_counter()
    connected = first = 0.0
    count = 0
    kind = ""
    data: str | None = None
    async with client.stream("POST", url, json={"message": "go"}) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith(":"):
                if not connected and line == ": connected":
                    connected = time.perf_counter() - start
            elif line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                data = line[5:].strip()
            elif not line and data is not None:  # a complete frame
                count += 1
                if not first and kind == "tool":
                    first = time.perf_counter() - start
                if kind == "error":
                    raise RuntimeError(f"the chat stream ended with an error event: {data}")
                kind, data = "", None
    return Timing(connected, first, time.perf_counter() - start, count)


async def _stream_over_http(
    settings: Settings, server: ProcessServer | ThreadServer
) -> list[Timing]:
    server.start()
    try:
        async with httpx.AsyncClient(timeout=60.0) as client:
            url = f"{server.base_url}/api/chat"
            for _ in range(settings.warmup):
                await over_http(client, url)
            return [await over_http(client, url) for _ in range(settings.reps)]
    finally:
        server.stop()


async def _measure(settings: Settings, calls: int, temp: Path) -> tuple[list[Row], list[str]]:
    host = new_host(temp / "in-process")
    try:
        for _ in range(settings.warmup):
            await in_process(host, calls)
        local = [await in_process(host, calls) for _ in range(settings.reps)]
    finally:
        await host.close()
    remote = await _stream_over_http(settings, ProcessServer(temp / "process", calls))
    threaded = await _stream_over_http(settings, ThreadServer(temp / "thread", calls))
    expected = 2 * calls + 2  # call and result per tool call, the answer's token, done
    for timing in local + remote + threaded:
        if timing.events != expected:
            raise AssertionError(f"expected {expected} events, got {timing.events}")

    def med(samples: list[Timing], attribute: str) -> float:
        return median([getattr(t, attribute) for t in samples])

    local_first, local_total = med(local, "first_tool"), med(local, "total")
    rows = []
    for where, samples in (("server process", remote), ("server thread", threaded)):
        total = med(samples, "total")
        rows += [
            Row(
                SECTION,
                f"{where}: time to `: connected` / first event in-process",
                med(samples, "connected"),
                "in-process",
                local_first,
            ),
            Row(
                SECTION,
                f"{where}: time to first tool frame / in-process",
                med(samples, "first_tool"),
                "in-process",
                local_first,
            ),
            Row(
                SECTION,
                f"{where}: whole stream, {expected} events / in-process",
                total,
                "in-process",
                local_total,
                note=f"{expected / total:,.0f} events/s vs {expected / local_total:,.0f} "
                "in-process",
            ),
        ]
    notes = [
        f"SSE: {calls} tool calls in model turns of at most {MAX_CALLS_PER_TURN} (the host's "
        f"limit per turn), then the answer ({expected} events); {settings.reps} "
        f"streams each way after {settings.warmup} warm-up, back to back on one kept-alive "
        "connection; server process = benchmarks/sse_server.py, server thread = as in "
        "tests/reference_host/test_app.py (shares the client's interpreter and GIL)"
    ]
    return rows, notes


def run(settings: Settings) -> tuple[list[Row], list[str]]:
    calls = 1000
    with tempfile.TemporaryDirectory(prefix="bench-sse-") as temp:
        return asyncio.run(_measure(settings, calls, Path(temp)))
