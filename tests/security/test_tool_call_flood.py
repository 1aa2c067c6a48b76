"""A model turn asking for more tool calls than any real turn does is refused, not run.

Why: nothing else bounds a turn's calls. A 1 MiB chat message of `/call x {}` lines is some
95 000 calls for the scripted model, and a hostile OpenAI-compatible server fits a quarter of
a million tool-call pieces into its 16 MiB turn: each would be run (and maybe asked for
approval) one after the other, its result kept in the conversation and sent back to the
model. The agent loop ends such a run with an `error` before it runs any of them, and the
streaming model stops reading once the turn holds more calls than the loop would run.
"""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from reference_host.agent.call_commands import CallCommandModel
from reference_host.agent.loop import MAX_CALLS_PER_TURN
from reference_host.agent.models import ModelError
from reference_host.agent.openai_model import OpenAICompatibleModel
from tests.conftest import MakeHost
from tests.reference_host.test_openai_model import DONE, SSE_HEADERS, calls, piece
from tests.security.test_openai_stream_limits import drain

URL = "http://127.0.0.1:9"


async def test_a_megabyte_of_call_lines_runs_no_call(make_host: MakeHost) -> None:
    host = make_host()
    message = "\n".join(["/call web_fetch {}"] * 50_000)
    assert len(message) < 1024 * 1024  # what one chat request may carry
    events = [e async for e in host.chat(message, model=CallCommandModel())]
    assert [e.type for e in events] == ["error"]
    assert f"at most {MAX_CALLS_PER_TURN} run" in events[0].data["message"]


async def test_as_many_calls_as_the_limit_still_run(make_host: MakeHost) -> None:
    host = make_host()
    message = "\n".join(["/call no_such_tool {}"] * MAX_CALLS_PER_TURN)
    events = [e async for e in host.chat(message, model=CallCommandModel())]
    results = [e for e in events if e.type == "tool" and e.data["phase"] == "result"]
    assert len(results) == MAX_CALLS_PER_TURN
    assert events[-1].type == "done"


@respx.mock
async def test_a_stream_of_thousands_of_calls_stops_early() -> None:
    pieces = [calls(piece(i, id=f"c{i}", name="t", arguments="{}")) for i in range(5000)]
    respx.post(f"{URL}/v1/chat/completions").mock(
        return_value=httpx.Response(200, content=b"".join([*pieces, DONE]), headers=SSE_HEADERS)
    )
    async with OpenAICompatibleModel(URL, "m") as model:
        with pytest.raises(ModelError, match=f"more than {MAX_CALLS_PER_TURN} tool calls"):
            await drain(model)


@respx.mock
async def test_a_huge_index_is_one_call_not_a_table() -> None:
    """Indexes are keys, not positions: 10**30 and 0 are two calls, nothing is preallocated."""
    frames = [calls(piece(10**30, name="t", arguments="{}"), piece(0, name="u"))]
    respx.post(f"{URL}/v1/chat/completions").mock(
        return_value=httpx.Response(200, content=b"".join([*frames, DONE]), headers=SSE_HEADERS)
    )
    async with OpenAICompatibleModel(URL, "m") as model:
        turn = await drain(model)
    assert [(c.name, json.loads(c.arguments)) for c in turn.tool_calls] == [("u", {}), ("t", {})]
