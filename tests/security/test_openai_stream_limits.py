"""A hostile OpenAI-compatible model server against the streaming model's bounds.

Memory: httpx decompresses a gzip answer chunk by chunk without a bound, so a 64 KiB network
chunk may become 64 MiB before the per-turn byte cap sees it; the model asks for an
uncompressed answer and refuses any other. Time: a server may keep the stream open forever
with keep-alive comments (each resets the read timeout); a turn that goes `timeout` seconds
without an event is an error, as a silent server is. The rest are shapes the model already
refuses, kept as regressions.
"""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc
from collections.abc import AsyncIterator

import httpx
import pytest
import respx

from reference_host.agent.models import ModelError, ModelTurn
from reference_host.agent.openai_model import OpenAICompatibleModel
from tests.reference_host.test_openai_model import DONE, SSE_HEADERS, calls, chunk

URL = "http://127.0.0.1:9"
COMPLETIONS = f"{URL}/v1/chat/completions"


async def drain(model: OpenAICompatibleModel) -> ModelTurn:
    """The turn a stream ends with (its deltas dropped)."""
    last = None
    async for part in model.stream([], []):
        last = part
    assert isinstance(last, ModelTurn)
    return last


async def _pieces(data: bytes, size: int) -> AsyncIterator[bytes]:
    """data in network-sized pieces."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


@respx.mock
async def test_a_gzip_bomb_does_not_inflate_past_the_cap() -> None:
    bomb = gzip.compress(b": " + b"a" * (256 * 1024 * 1024) + b"\n\n", compresslevel=9)
    respx.post(COMPLETIONS).mock(
        side_effect=lambda request: httpx.Response(
            200,
            content=_pieces(bomb, 64 * 1024),
            headers={**SSE_HEADERS, "content-encoding": "gzip"},
        )
    )
    tracemalloc.start()
    try:
        async with OpenAICompatibleModel(URL, "m", max_turn_bytes=1024 * 1024) as model:
            with pytest.raises(ModelError):
                await drain(model)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024, f"{peak} bytes held for a 1 MiB turn"


@respx.mock
async def test_the_model_asks_for_an_uncompressed_answer() -> None:
    route = respx.post(COMPLETIONS).mock(
        return_value=httpx.Response(
            200, content=chunk({"content": "x"}, "stop") + DONE, headers=SSE_HEADERS
        )
    )
    async with OpenAICompatibleModel(URL, "m") as model:
        assert (await drain(model)).text == "x"
    assert route.calls.last.request.headers["accept-encoding"] == "identity"


async def _keep_alives() -> AsyncIterator[bytes]:
    yield chunk({"content": "thinking"})
    for _ in range(2000):  # ends by itself: 20 s or more, never reached with the fix
        yield b": keep-alive\n\n"
        await asyncio.sleep(0.01)
    yield DONE


@respx.mock
async def test_keep_alive_comments_do_not_keep_a_turn_open_forever() -> None:
    respx.post(COMPLETIONS).mock(
        side_effect=lambda request: httpx.Response(200, content=_keep_alives(), headers=SSE_HEADERS)
    )
    async with OpenAICompatibleModel(URL, "m", timeout=0.3) as model:
        with pytest.raises(ModelError, match=r"sent no event for 0\.3s"):
            await drain(model)


@respx.mock
@pytest.mark.parametrize(
    "body",
    [
        calls({"index": -1, "function": {"name": "t"}}),
        calls({"index": True, "function": {"name": "t"}}),
        calls({"index": 1.5, "function": {"name": "t"}}),
        b"data: [DONE]\ndata: {}\n\n",  # [DONE] inside another event's data is no end
        b"data: \xff\xfe{}\n\n",  # invalid UTF-8 is replaced, then not JSON
        b'data: {"choices": [{"delta": {"content": "x"}}]}\n\n',  # no [DONE], no finish_reason
    ],
)
async def test_malformed_streams_are_model_errors(body: bytes) -> None:
    respx.post(COMPLETIONS).mock(
        return_value=httpx.Response(200, content=body, headers=SSE_HEADERS)
    )
    async with OpenAICompatibleModel(URL, "m") as model:
        with pytest.raises(ModelError):
            await drain(model)
