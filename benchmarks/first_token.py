"""Section 6: the first token of a streamed model answer, through the host and without it.

A fake OpenAI-compatible server (Starlette on uvicorn on 127.0.0.1, in a thread of this
process) streams one answer as chat-completion chunks and records, with time.perf_counter,
the moment just before it hands its first delta to the server. Two clients read it:

- direct (baseline): an httpx streaming POST to the fake's /v1/chat/completions, parsed with
  reference_host.stream.sse_parser, stopping the clock when the first delta's event is parsed;
- host: POST /api/chat to the real app (create_app, a Host whose OpenAICompatibleModel talks
  to the fake) on uvicorn on 127.0.0.1 in another thread, stopping the clock when the first
  `token` frame is parsed.

The figure is the time from the fake's first delta to the client seeing it: what the host
adds is reading the model's stream, the agent loop, the chat stream's pump and a second HTTP
hop. All three parties share one interpreter (and its GIL); perf_counter is one clock for
all of them. Each stream is read to its end before the next starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from benchmarks.common import Row, Settings, median
from reference_host.agent.openai_model import OpenAICompatibleModel
from reference_host.host import Host, HostConfig
from reference_host.http.app import create_app
from reference_host.stream.sse_parser import SSEEvent, SSEParser
from reference_host.support.loopback import serve_on_loopback

SECTION = "6 first token (streamed model)"
START_TIMEOUT = 10.0
STOP_TIMEOUT = 15.0
DELTAS = ("Hello", ", this", " is", " a", " streamed", " answer.")
STREAMS_PER_REP = 5


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    payload = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


class FakeModel:
    """Streams DELTAS as chat-completion chunks; first_delta_at holds, per request, the
    perf_counter just before the first delta went to the server."""

    def __init__(self) -> None:
        self.first_delta_at: list[float] = []

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self._answer, methods=["POST"])])

    async def _answer(self, request: Request) -> Response:
        await request.body()
        return StreamingResponse(self._stream(), media_type="text/event-stream")

    async def _stream(self) -> AsyncIterator[bytes]:
        yield _chunk({"role": "assistant", "content": ""})
        for index, text in enumerate(DELTAS):
            if index == 0:
                self.first_delta_at.append(time.perf_counter())
            yield _chunk({"content": text})
        yield _chunk({}, "stop")
        yield b"data: [DONE]\n\n"


async def direct(client: httpx.AsyncClient, url: str) -> float:
    """perf_counter when the first delta's event is parsed, read straight from the fake."""
    parser = SSEParser()
    seen = 0.0
    body = {"model": "bench", "messages": [{"role": "user", "content": "go"}], "stream": True}
    async with client.stream("POST", url, json=body) as response:
        response.raise_for_status()
        async for raw in response.aiter_bytes():
            for item in parser.feed(raw):
                if seen or not isinstance(item, SSEEvent) or item.data == "[DONE]":
                    continue
                choices = json.loads(item.data)["choices"]
                if choices and choices[0]["delta"].get("content"):
                    seen = time.perf_counter()
    if not seen:
        raise RuntimeError("the fake model's stream had no delta")
    return seen


async def through_host(client: httpx.AsyncClient, url: str) -> float:
    """perf_counter when the first `token` frame of POST /api/chat is parsed."""
    parser = SSEParser()
    seen = 0.0
    async with client.stream("POST", url, json={"message": "go"}) as response:
        response.raise_for_status()
        async for raw in response.aiter_bytes():
            for item in parser.feed(raw):
                if isinstance(item, SSEEvent):
                    if item.type == "error":
                        raise RuntimeError(f"the chat stream ended with an error: {item.data}")
                    if not seen and item.type == "token":
                        seen = time.perf_counter()
    if not seen:
        raise RuntimeError("the chat stream had no token")
    return seen


async def _measure(settings: Settings, model_url: str, host_url: str, fake: FakeModel) -> Row:
    completions = f"{model_url}/v1/chat/completions"
    chat = f"{host_url}/api/chat"
    host_samples: list[float] = []
    direct_samples: list[float] = []
    async with httpx.AsyncClient(timeout=60.0, trust_env=False) as client:
        for rep in range(settings.warmup + settings.reps):
            for _ in range(STREAMS_PER_REP):  # the two clients take turns
                host_seen = await through_host(client, chat)
                host_delay = host_seen - fake.first_delta_at[-1]
                direct_seen = await direct(client, completions)
                direct_delay = direct_seen - fake.first_delta_at[-1]
                if rep >= settings.warmup:
                    host_samples.append(host_delay)
                    direct_samples.append(direct_delay)
    value, baseline = median(host_samples), median(direct_samples)
    return Row(
        SECTION,
        "first delta to first `token` frame: host / direct client",
        value,
        "direct client",
        baseline,
        note=f"the host adds {(value - baseline) * 1e3:.2f} ms; "
        f"{len(host_samples)} streams each way",
    )


def run(settings: Settings) -> tuple[list[Row], list[str]]:
    fake = FakeModel()
    with (
        tempfile.TemporaryDirectory(prefix="bench-first-token-") as temp,
        serve_on_loopback(
            fake.app(),
            name="fake model server",
            start_timeout=START_TIMEOUT,
            stop_timeout=STOP_TIMEOUT,
        ) as model_url,
    ):

        @contextlib.asynccontextmanager
        async def host_app() -> AsyncIterator[Any]:
            host = Host(HostConfig(data_dir=Path(temp) / "host"))
            model = OpenAICompatibleModel(model_url, "bench")
            try:
                yield create_app(host, lambda: model)
            finally:
                await model.aclose()
                await host.close()

        with serve_on_loopback(
            make_app=host_app,
            lifespan="on",
            name="benchmark host",
            start_timeout=START_TIMEOUT,
            stop_timeout=STOP_TIMEOUT,
        ) as host_url:
            row = asyncio.run(_measure(settings, model_url, host_url, fake))
    notes = [
        f"first token: a fake OpenAI-compatible server streams {len(DELTAS)} deltas; the "
        "clock runs from just before its first delta is written to the client parsing that "
        "delta (direct) or the first `token` frame of POST /api/chat (host, its "
        "OpenAICompatibleModel reading the fake); fake, host and client are threads of one "
        f"process on 127.0.0.1; {STREAMS_PER_REP} streams per client per repetition, taking "
        "turns"
    ]
    return [row], notes
