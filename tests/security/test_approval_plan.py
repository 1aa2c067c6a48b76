"""What the user approves is what runs (spec: host.md#approval-by-effect).

The approval event shows the arguments after route B injection, with each granted file's
resolved path and whether the host filled it in; the call then sends exactly those
arguments, and a denied call sends nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from plugin_spec.tool_definition import Effect, ToolDefinition
from reference_host.agent.approval import Decision
from reference_host.agent.models import ModelTurn, ScriptedModel
from reference_host.host import Host
from reference_host.stream.events import Event
from reference_host.tools.callbacks import Arguments, CallContext, CallPlan, ToolResult
from tests.conftest import MakeHost
from tests.security.conftest import (
    EXCEL,
    Dispatched,
    copy_sample,
    results,
    turn,
    watched_host,
)

XL = "fan.summer.excel"


async def chat_answering(host: Host, *turns: ModelTurn, approve: bool) -> list[Event]:
    """One chat run that answers every approval event as it arrives."""
    model = ScriptedModel([*turns, ModelTurn(text="done")])
    seen = []
    async for event in host.chat("hi", model=model, conversation_id="c1"):
        seen.append(event)
        if event.type == "approval":
            assert host.approvals.decide(event.data["id"], approve)
    return seen


def approvals(events: list[Event]) -> list[dict[str, Any]]:
    return [e.data for e in events if e.type == "approval"]


@pytest.fixture
async def excel(tmp_path: Path, make_host: MakeHost) -> tuple[Host, Path, Dispatched]:
    files = tmp_path / "files"
    (files / "out").mkdir(parents=True)
    host, sent = watched_host(make_host, files, Decision.ASK)
    await host.install(copy_sample(EXCEL, tmp_path))
    return host, files / "out", sent


async def test_the_approval_shows_the_injected_folder_and_that_is_what_runs(
    excel: tuple[Host, Path, Dispatched],
) -> None:
    host, out, sent = excel
    ref = host.grants.attach("c1", XL, out, "write")
    model_sent = {"outputDir": "/tmp/somewhere-else", "filePrefix": "s_"}
    events = await chat_answering(host, turn("excel_execute", model_sent), approve=True)
    (asked,) = approvals(events)
    assert asked["name"] == "excel_execute" and asked["effect"] == "write"
    assert json.loads(asked["arguments"]) == {"outputDir": ref, "filePrefix": "s_"}
    assert asked["injected"] == ["outputDir"]
    assert asked["files"] == [
        {
            "parameter": "outputDir",
            "id": ref["id"],
            "name": "out",
            "kind": "directory",
            "access": "write",
            "path": str(out.resolve()),
            "injected": True,
        }
    ]
    staging = host.grants.copy_path(XL, ref, write=True)
    assert sent.calls == [(XL, "excel_execute", {"outputDir": staging, "filePrefix": "s_"})]
    # the tool call event still shows what the model asked for
    call = next(e.data for e in events if e.type == "tool" and e.data["phase"] == "call")
    assert json.loads(call["arguments"]) == model_sent


async def test_without_a_grant_the_approval_shows_the_arguments_as_the_model_sent_them(
    excel: tuple[Host, Path, Dispatched],
) -> None:
    host, _, sent = excel
    arguments = '{"outputDir": "/tmp/x"}'
    events = await chat_answering(host, turn("excel_execute", arguments), approve=True)
    (asked,) = approvals(events)
    assert (asked["arguments"], asked["injected"], asked["files"]) == (arguments, [], [])
    (output,) = results(events)
    assert "takes a FileRef granted in this conversation" in output["error"]
    assert sent.calls == []


async def test_a_denied_call_sends_nothing(excel: tuple[Host, Path, Dispatched]) -> None:
    host, out, sent = excel
    host.grants.attach("c1", XL, out, "write")
    events = await chat_answering(host, turn("excel_execute", {}), approve=False)
    (asked,) = approvals(events)
    assert asked["injected"] == ["outputDir"]
    (output,) = results(events)
    assert output == {"success": False, "error": "the call to excel_execute was not approved"}
    assert sent.calls == []


class Planned:
    """A write tool whose plan differs from what the model sent, recording what it ran."""

    definition = ToolDefinition("planned_write", "Write.")
    effect = Effect.WRITE
    owner = "builtin"

    def __init__(self) -> None:
        self.ran: list[tuple[str, bool]] = []
        self.plans = 0
        self.made: list[CallPlan] = []

    def plan(self, arguments: Arguments, context: CallContext) -> CallPlan:
        self.plans += 1
        self.made.append(CallPlan(Arguments.read(f'{{"plan": {self.plans}}}'), ("plan",)))
        return self.made[-1]

    async def call(self, plan: CallPlan, context: CallContext) -> ToolResult:
        # what ran, and whether it is the plan made (and approved), not one made anew
        self.ran.append((plan.arguments.text, plan is self.made[-1]))
        return ToolResult.of({"success": True})


async def test_the_call_runs_the_approved_plan_not_a_new_one(make_host: MakeHost) -> None:
    tool = Planned()
    host = make_host(builtins=[tool])
    events = await chat_answering(host, turn("planned_write", {"plan": 0}), approve=True)
    (asked,) = approvals(events)
    assert asked["arguments"] == '{"plan": 1}'
    assert tool.ran == [('{"plan": 1}', True)]
