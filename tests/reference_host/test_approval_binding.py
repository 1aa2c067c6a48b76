"""An approval holds for what it showed (spec: host.md#approval-by-effect): the plugin version,
the install and the tool definition it was asked for. A change while it waits (upgrade,
uninstall, reinstall, a changed definition, disable) means the call is not run: checked when
the decision arrives and again right before the call goes out, in chat and in workflow runs,
with real workers and the real SQLite store.

The attack these stop: an approval pending for plugin version 3.0.0, the plugin upgraded to
4.0.0, then approved, and the 4.0.0 code ran with no new approval.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from plugin_spec.tool_definition import ToolDefinition
from reference_host.agent.approval import ApprovalPolicy
from reference_host.agent.models import Message, ModelTurn, ScriptedModel, TurnModel
from reference_host.host import Host
from reference_host.stream.events import Event
from reference_host.stream.sse_parser import SSEEvent
from reference_host.workflow.canvas import Canvas
from reference_host.workflow.runner import run_saved
from tests.conftest import MakeHost
from tests.reference_host.stream_items import data, stream_deciding
from tests.reference_host.test_app import Server, client, install, serve, server
from tests.reference_host.test_fengyu4_host import package
from tests.security.conftest import Dispatched, the_failure, turn

__all__ = ["client", "serve", "server"]  # the fixtures of test_app, used here too

PLUGIN = "fan.summer.x"
TOOL = "fixture_greet"
GREET = turn(TOOL, {"name": "Ada"})
UPGRADED = f"{PLUGIN} was upgraded from 3.0.0 to 4.0.0"
Asked = dict[str, Any]


def greeter(
    tmp_path: Path, folder: str, version: str = "3.0.0", description: str = "Greet someone."
) -> Path:
    """fan.summer.x at version: a FengYu 4 package whose one tool, fixture_greet, is a write
    tool answered by a real worker process."""
    root = package(tmp_path, folder, version=version)
    manifest = json.loads((root / "manifest.json").read_text("utf-8"))
    manifest["id"] = PLUGIN
    (tool,) = manifest["aiTools"]
    tool.update(effect="write", description=description)
    (root / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    return root


@pytest.fixture
async def host(tmp_path: Path, make_host: MakeHost) -> tuple[Host, Dispatched]:
    """A host that asks before write calls, with fan.summer.x 3.0.0 installed; and what its
    workers were sent."""
    host = make_host(approval=ApprovalPolicy(timeout=30))
    sent = Dispatched()
    host.manager.observers.append(sent)
    await host.install(greeter(tmp_path, "v3"))
    return host, sent


async def chat(
    host: Host, at_approval: Callable[[Asked], Awaitable[None]], model: Any = None
) -> list[Event]:
    """One chat turn calling fixture_greet; at_approval gets each approval event's data."""
    seen = []
    model = model or ScriptedModel([GREET, ModelTurn(text="done")])
    async for event in host.chat("hi", model=model, conversation_id="c1"):
        seen.append(event)
        if event.type == "approval":
            await at_approval(event.data)
    return seen


def not_run(reason: str) -> str:
    return f"not run: {reason} while the approval waited; ask again"


class Approver:
    """An at_approval for chat(): approves every approval it is shown, after awaiting
    before() and then after(), the changes a test makes around the decision; it keeps what
    it was shown (asked) and the verdicts of its decisions."""

    def __init__(
        self,
        host: Host,
        before: Callable[[], Awaitable[None]] | None = None,
        after: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.host, self.before, self.after = host, before, after
        self.asked: list[Asked] = []
        self.verdicts: list[Any] = []

    async def __call__(self, asked: Asked) -> None:
        self.asked.append(asked)
        if self.before is not None:
            await self.before()
        self.verdicts.append(self.host.approvals.decide(asked["id"], True))
        if self.after is not None:
            await self.after()


async def upgrade(host: Host, tmp_path: Path) -> None:
    await host.install(greeter(tmp_path, "v4", "4.0.0"))


@pytest.mark.parametrize(
    ("moment", "told"),
    [("before", UPGRADED), ("after", None)],
    ids=["while-the-approval-waits", "between-the-decision-and-the-call"],
)
async def test_an_upgrade_around_the_decision_is_not_run(
    host: tuple[Host, Dispatched], tmp_path: Path, moment: str, told: str | None
) -> None:
    """The upgrade lands before the decision (the verdict tells of it) or after it, while
    nothing had changed yet (caught before the call): either way the call is not run."""
    the_host, sent = host
    approver = Approver(the_host, **{moment: lambda: upgrade(the_host, tmp_path)})
    events = await chat(the_host, approver)
    (verdict,) = approver.verdicts
    assert verdict.approved and verdict.changed == told
    assert the_failure(events) == not_run(UPGRADED)
    assert sent.calls == []  # neither version's worker got the call


Change = Callable[[Host, Path], Awaitable[None]]


async def uninstall(host: Host, tmp_path: Path) -> None:
    await host.uninstall(PLUGIN)


async def disable(host: Host, tmp_path: Path) -> None:
    await host.disable(PLUGIN)


async def reinstall(host: Host, tmp_path: Path) -> None:
    await host.install(greeter(tmp_path, "again"))


async def redefine(host: Host, tmp_path: Path) -> None:
    await host.install(greeter(tmp_path, "redefined", description="Greet, and more."))


async def toggle(host: Host, tmp_path: Path) -> None:
    await host.disable(PLUGIN)
    await host.enable(PLUGIN)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (uninstall, f"{PLUGIN} was uninstalled"),
        (disable, f"{PLUGIN} was disabled"),
        (reinstall, f"{PLUGIN} 3.0.0 was installed again"),
        (redefine, f"the definition of {TOOL} ({PLUGIN} 3.0.0) changed"),
        (toggle, f"{PLUGIN} 3.0.0 was disabled and enabled again"),
    ],
    ids=lambda value: getattr(value, "__name__", "reason"),
)
async def test_any_change_of_the_plugin_while_the_approval_waits_is_named_and_not_run(
    host: tuple[Host, Dispatched], tmp_path: Path, change: Change, reason: str
) -> None:
    the_host, sent = host
    events = await chat(the_host, Approver(the_host, before=lambda: change(the_host, tmp_path)))
    assert the_failure(events) == not_run(reason)
    assert sent.calls == []


async def test_an_unchanged_approval_names_what_it_holds_for_and_runs(
    host: tuple[Host, Dispatched],
) -> None:
    the_host, sent = host
    approver = Approver(the_host)
    events = await chat(the_host, approver)
    (shown,) = approver.asked
    assert (shown["plugin"], shown["version"]) == (PLUGIN, "3.0.0")
    assert re.fullmatch(r"[0-9a-f]{64}", shown["digest"])
    result = [e.data for e in events if e.type == "tool" and e.data["phase"] == "result"]
    assert result[0]["success"] is True, result
    assert [(plugin, method) for plugin, method, _ in sent.calls] == [(PLUGIN, "greet")]


class UpgradingModel(TurnModel):
    """Upgrades the plugin while it thinks, after the turn's snapshot was taken, then asks
    for the call."""

    def __init__(self, host: Host, newer: Path) -> None:
        self.host, self.newer, self.turns = host, newer, [GREET, ModelTurn(text="done")]

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> ModelTurn:
        if len(self.turns) == 2:
            await self.host.install(self.newer)
        return self.turns.pop(0)


async def test_a_tool_that_changed_after_the_turn_began_is_not_even_asked_for(
    host: tuple[Host, Dispatched], tmp_path: Path
) -> None:
    the_host, sent = host
    approver = Approver(the_host)
    model = UpgradingModel(the_host, greeter(tmp_path, "v4", "4.0.0"))
    events = await chat(the_host, approver, model)
    assert approver.asked == []
    assert the_failure(events) == f"not run: {PLUGIN} changed after this turn began; ask again"
    assert sent.calls == []


async def test_a_workflow_node_whose_plugin_was_upgraded_while_asking_is_not_run(
    host: tuple[Host, Dispatched], tmp_path: Path
) -> None:
    the_host, sent = host
    canvas = Canvas.for_host(the_host)
    node = {"id": "g", "identity": f"{PLUGIN}:{TOOL}", "inputs": {"name": "Ada"}, "bindings": {}}
    canvas.save({"id": "wf1", "name": "Greet", "nodes": [node]})
    events = []
    async for event in run_saved(the_host, canvas.raw("wf1")):
        events.append(event)
        if event.type == "approval":
            await the_host.install(greeter(tmp_path, "v4", "4.0.0"))
            the_host.approvals.decide(event.data["id"], True)
    assert [e.type for e in events] == ["tool", "approval", "tool", "error"]
    assert events[-1].data["message"] == (f"node 'g' ({PLUGIN}:{TOOL}) failed: {not_run(UPGRADED)}")
    assert sent.calls == []


async def test_over_http_an_approval_of_a_changed_tool_is_answered_409(
    client: httpx.AsyncClient, server: Server, tmp_path: Path
) -> None:
    await install(client, greeter(tmp_path, "v3"))
    server.models.append(ScriptedModel([GREET, ModelTurn(text="done")]))
    streamed = await stream_deciding(
        client,
        "/api/chat",
        {"message": "hi"},
        before_deciding=lambda: install(client, greeter(tmp_path, "v4", "4.0.0")),
    )
    items = streamed.items
    (decision,) = streamed.decisions
    assert decision.status_code == 409, decision.text
    assert UPGRADED in decision.json()["error"]
    assert "the call was not run" in decision.json()["error"]
    results = [data(i) for i in items if isinstance(i, SSEEvent) and i.type == "tool"]
    assert json.loads(results[-1]["output"]) == {"success": False, "error": not_run(UPGRADED)}
