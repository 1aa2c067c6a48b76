"""A hostile model (or a race with the user's own grant list) against "what is approved is
what runs" (spec: host.md#approval-by-effect): the approval lists every granted file the call
would hand over, wherever the model nested it, lists nothing of another plugin or
conversation, and a grant that changes while the approval waits changes nothing that runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reference_host.agent.models import ModelTurn, ScriptedModel
from reference_host.host import Host
from reference_host.stream.events import Event
from tests.security.conftest import Dispatched, results, turn
from tests.security.test_approval_plan import XL, approvals, excel  # noqa: F401

Excel = tuple[Host, Path, Dispatched]


async def chat_deciding(
    host: Host, model_turn: ModelTurn, meanwhile: Callable[[], Any] = lambda: None
) -> list[Event]:
    """One run in conversation c1; at the approval, meanwhile() runs, then it is approved."""
    seen = []
    model = ScriptedModel([model_turn, ModelTurn(text="done")])
    async for event in host.chat("hi", model=model, conversation_id="c1"):
        seen.append(event)
        if event.type == "approval":
            meanwhile()
            assert host.approvals.decide(event.data["id"], True)
    return seen


async def test_a_granted_file_nested_deep_is_listed_with_its_path(
    excel: Excel,  # noqa: F811
    tmp_path: Path,
) -> None:
    host, out, sent = excel
    book = out.parent / "book.xlsx"
    book.write_bytes(b"x")
    ref = host.grants.attach("c1", XL, book, "read")
    nested = {"filePrefix": "s_", "extra": {"a": [[{"b": ref}]]}}
    events = await chat_deciding(host, turn("excel_execute", nested))
    (asked,) = approvals(events)
    assert [(f["parameter"], f["path"], f["injected"]) for f in asked["files"]] == [
        ("extra", str(book.resolve()), False)
    ]
    assert str(book) not in json.dumps(sent.calls)  # a copy is sent, never the original


async def test_refs_of_another_plugin_or_conversation_are_not_listed_and_not_sent(
    excel: Excel,  # noqa: F811
) -> None:
    host, out, sent = excel
    other_plugin = host.grants.attach("c1", "fan.summer.markdown", out, "write")
    other_conversation = host.grants.attach("c2", XL, out, "write")
    for ref in (other_plugin, other_conversation):
        events = await chat_deciding(host, turn("excel_execute", {"outputDir": ref}))
        (asked,) = approvals(events)
        assert asked["files"] == [] and asked["injected"] == []
        assert str(out) not in json.dumps(asked)
        (output,) = results(events)
        assert output["success"] is False and "not granted" in output["error"]
    assert sent.calls == []


async def test_a_grant_forgotten_while_the_approval_waits_is_not_used(
    excel: Excel,  # noqa: F811
) -> None:
    host, out, sent = excel
    host.grants.attach("c1", XL, out, "write")
    events = await chat_deciding(
        host, turn("excel_execute", {"filePrefix": "s_"}), lambda: host.grants.forget("c1")
    )
    (asked,) = approvals(events)
    assert asked["injected"] == ["outputDir"]
    (output,) = results(events)
    assert output["success"] is False and "not granted" in output["error"]
    assert sent.calls == [] and list(out.iterdir()) == []


async def test_a_grant_attached_while_the_approval_waits_is_not_injected(
    excel: Excel,  # noqa: F811
) -> None:
    host, out, sent = excel
    events = await chat_deciding(
        host,
        turn("excel_execute", {"filePrefix": "s_"}),
        lambda: host.grants.attach("c1", XL, out, "write"),
    )
    (asked,) = approvals(events)
    assert asked["injected"] == [] and asked["files"] == []
    assert all("outputDir" not in params for _, _, params in sent.calls)
    assert list(out.iterdir()) == []
