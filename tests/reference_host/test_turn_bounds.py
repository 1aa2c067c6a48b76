"""A chat turn is bounded (spec: host.md#limits): it ends at its overall time limit, with the
worker call it was waiting for cancelled, and a batch of tool calls that repeats a call id is
refused before any of it runs (tool events are paired by id).

The attacks these stop: 64 calls of 20 s each kept one turn going for some 21 minutes, a model
streamed tokens forever, and two calls with one id both ran with events no client could pair.
No assertion here is about time: a limit test sets a small limit and checks the event.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from plugin_spec.tool_definition import Effect, ToolDefinition
from reference_host.agent.models import Delta, Message, ModelTurn, ScriptedModel, ToolCall, TurnPart
from reference_host.agent.turn_limit import DEFAULT_TURN_TIME_LIMIT
from reference_host.host import Host, HostConfig
from reference_host.options import build_parser, positive_seconds
from reference_host.stream.events import Event
from reference_host.tools.callbacks import CallContext, CallPlan, SentAsIs, ToolResult
from tests.conftest import MakeHost
from tests.reference_host.test_fengyu4_host import slow_package
from tests.security.conftest import Dispatched

GREET_ADA = json.dumps({"name": "Ada"})
LIMIT_SAID = "the turn reached its time limit of {limit:g} s and was stopped after"


class Endless:
    """A model that streams text and never ends its turn (bounded here: 3000 pieces, some
    30 s, so that a host without a limit fails this test instead of hanging it)."""

    def __init__(self) -> None:
        self.pieces = 0

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[TurnPart]:
        for _ in range(3000):
            self.pieces += 1
            yield Delta("la ")
            await asyncio.sleep(0.01)
        yield ModelTurn(text="la " * 3000)


class Counted(SentAsIs):
    """A built-in that counts its calls."""

    definition = ToolDefinition("count", "Count a call.", {"type": "object"})
    effect = Effect.READ
    owner = "builtin"

    def __init__(self) -> None:
        self.calls = 0

    async def call(self, plan: CallPlan, context: CallContext) -> ToolResult:
        self.calls += 1
        return ToolResult.of({"success": True, "calls": self.calls})


def calls(*ids: str) -> ModelTurn:
    return ModelTurn(tool_calls=tuple(ToolCall(i, "count", "{}") for i in ids))


async def chat(host: Host, model: object) -> list[Event]:
    return [e async for e in host.chat("hi", model=model)]  # type: ignore[arg-type]


# -- the turn's time limit ---------------------------------------------------------------------


async def test_a_model_streaming_forever_is_stopped_at_the_turn_limit(make_host: MakeHost) -> None:
    host = make_host(turn_time_limit=0.2)
    model = Endless()
    events = await chat(host, model)
    assert events[-1].type == "error"
    assert events[-1].data["message"].startswith(LIMIT_SAID.format(limit=0.2))
    assert {e.type for e in events[:-1]} <= {"token"}
    assert model.pieces < 3000


async def test_the_worker_call_a_turn_waits_for_is_cancelled_at_the_limit(
    make_host: MakeHost, tmp_path: Path
) -> None:
    """A worker whose call answers only when cancelled: the turn's end cancels it, the
    worker answers the cancel (so it is neither killed nor left with the call)."""
    host = make_host(turn_time_limit=1.0)
    sent = Dispatched()
    host.manager.observers.append(sent)
    await host.install(slow_package(tmp_path, honour=True))
    await host.manager.notify("fixture.fengyu4", "warm/up", {})  # started before the turn
    model = ScriptedModel([ModelTurn(tool_calls=(ToolCall("c1", "fixture_greet", GREET_ADA),))])
    events = await chat(host, model)
    assert [(e.type, e.data.get("phase")) for e in events] == [("tool", "call"), ("error", None)]
    assert events[-1].data["message"].startswith(LIMIT_SAID.format(limit=1.0))
    assert [method for _, method, _ in sent.calls] == ["greet"]
    connection = host.manager.connection("fixture.fengyu4")
    assert connection is not None
    await connection.settled()
    assert not connection.pending and not connection.unanswered_cancels and connection.alive


def test_the_limit_is_a_host_setting_and_a_command_line_option() -> None:
    assert HostConfig(Path("unused")).turn_time_limit == DEFAULT_TURN_TIME_LIMIT == 600.0
    parser = build_parser()
    assert parser.parse_args(["serve"]).turn_time_limit == DEFAULT_TURN_TIME_LIMIT
    assert parser.parse_args(["serve", "--turn-time-limit", "90"]).turn_time_limit == 90.0
    for bad in ("0", "-1", "nan", "inf", "soon"):
        with pytest.raises(argparse.ArgumentTypeError):
            positive_seconds(bad)


# -- call ids ------------------------------------------------------------------------------------


async def test_a_batch_repeating_a_call_id_runs_none_of_its_calls(make_host: MakeHost) -> None:
    counted = Counted()
    host = make_host(builtins=[counted])
    events = await chat(host, ScriptedModel([calls("a", "b", "a"), ModelTurn(text="done")]))
    assert [e.type for e in events] == ["error"]
    assert "tool call id 'a' more than once" in events[0].data["message"]
    assert counted.calls == 0


async def test_an_id_used_by_an_earlier_batch_of_the_turn_is_refused(make_host: MakeHost) -> None:
    """Ids are unique across the whole turn: its events are paired by id."""
    counted = Counted()
    host = make_host(builtins=[counted])
    model = ScriptedModel([calls("a"), calls("b", "a"), ModelTurn(text="done")])
    events = await chat(host, model)
    assert [(e.type, e.data.get("id")) for e in events] == [
        ("tool", "a"),
        ("tool", "a"),
        ("error", None),
    ]
    assert "tool call id 'a' more than once" in events[-1].data["message"]
    assert counted.calls == 1  # the first batch's; nothing of the second


async def test_distinct_ids_across_batches_all_run(make_host: MakeHost) -> None:
    counted = Counted()
    host = make_host(builtins=[counted])
    model = ScriptedModel([calls("a", "b"), calls("c"), ModelTurn(text="done")])
    events = await chat(host, model)
    assert events[-1].type == "done" and counted.calls == 3
