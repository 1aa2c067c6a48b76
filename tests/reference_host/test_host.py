"""The host end to end, in-process: lifecycle, snapshots, agent runs, approval, FileRefs."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from conformance.install_validation import kit_validator
from plugin_spec.tool_definition import Effect, ToolDefinition
from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.agent.models import ModelTurn, ScriptedModel, ToolCall, TurnModel
from reference_host.host import Host
from reference_host.plugins.lifecycle import PluginError
from reference_host.stream.events import Event
from reference_host.tools.callbacks import (
    CallContext,
    CallPlan,
    SentAsIs,
    ToolResult,
    plan_and_call,
)
from tests.conftest import FIXTURE_PLUGINS, REPO, MakeHost

MARKDOWN = REPO / "sample_plugins" / "fan.summer.markdown"
EXCEL = REPO / "sample_plugins" / "fan.summer.excel"


@pytest.fixture
def host(tmp_path: Path, make_host: MakeHost) -> Host:
    host = make_host(
        allowed_roots=(tmp_path / "files",),
        approval=ApprovalPolicy(write=Decision.ALLOW, external=Decision.DENY),
        validator=kit_validator,
    )
    (tmp_path / "files").mkdir()
    return host


def markdown_copy(tmp_path: Path, folder: str, **manifest_members: str) -> Path:
    """A copy of the markdown sample in tmp_path/folder, its manifest members changed."""
    copy = tmp_path / folder
    shutil.copytree(MARKDOWN, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest.update(manifest_members)
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy


def call(name: str, arguments: dict, call_id: str = "call-1") -> ModelTurn:
    return ModelTurn(tool_calls=(ToolCall(call_id, name, json.dumps(arguments)),))


async def run(host: Host, *turns: ModelTurn, conversation: str = "c1") -> list[Event]:
    model = ScriptedModel([*turns, ModelTurn(text="done")])
    return [e async for e in host.chat("hi", model=model, conversation_id=conversation)]


async def test_install_shows_tools_in_the_next_snapshot(host: Host) -> None:
    before = host.registry.snapshot()
    info = await host.install(MARKDOWN)
    assert info.supports_ai and info.tools == ["markdown_render", "markdown_outline"]
    after = host.registry.snapshot()
    assert "markdown_render" not in before.names()
    assert {"markdown_render", "markdown_outline"} <= set(after.names())
    definition = after.get("markdown_render").definition
    assert definition.input_schema["required"] == ["markdown"]


async def test_scripted_call_reaches_the_worker(host: Host) -> None:
    await host.install(MARKDOWN)
    events = await run(host, call("markdown_render", {"markdown": "# Hi"}))
    assert [e.type for e in events] == ["tool", "tool", "token", "done"]
    call_event, result_event = events[0].data, events[1].data
    assert call_event["phase"] == "call" and result_event["phase"] == "result"
    assert call_event["id"] == result_event["id"] == "call-1"
    assert result_event["success"] is True
    assert "<h1>Hi</h1>" in json.loads(result_event["output"])["html"]


async def test_disable_removes_tools_and_old_snapshot_answers_unavailable(host: Host) -> None:
    await host.install(MARKDOWN)
    old = host.registry.snapshot()
    await host.disable("fan.summer.markdown")
    assert "markdown_render" not in host.registry.snapshot().names()
    output = await plan_and_call(old.get("markdown_render"), {"markdown": "x"}, _context())
    assert output.output == {
        "success": False,
        "error": "Plugin tool is no longer available: fan.summer.markdown",
    }
    await host.enable("fan.summer.markdown")
    assert "markdown_render" in host.registry.snapshot().names()


async def test_rejected_install_leaves_no_trace(host: Host, tmp_path: Path) -> None:
    with pytest.raises(PluginError) as raised:
        await host.install(FIXTURE_PLUGINS / "FY-MAN-004-dangling-method")
    assert any("FY-MAN-004" in problem for problem in raised.value.problems)
    assert host.plugins.list() == []
    assert list((tmp_path / "host" / "plugins").iterdir()) == []


async def test_tool_name_clash_is_an_install_error(host: Host, tmp_path: Path) -> None:
    await host.install(MARKDOWN)
    with pytest.raises(PluginError) as raised:
        await host.install(markdown_copy(tmp_path, "copy", id="fan.summer.markdown2"))
    assert raised.value.problems[0] == (
        "tool name 'markdown_render' is already offered by plugin fan.summer.markdown"
    )
    assert [p.id for p in host.plugins.list()] == ["fan.summer.markdown"]


async def test_upgrade_is_an_install_of_the_same_id(host: Host, tmp_path: Path) -> None:
    await host.install(MARKDOWN)
    info = await host.install(markdown_copy(tmp_path, "v2", version="1.1.0"))
    assert info.version == "1.1.0" and len(host.plugins.list()) == 1


async def test_a_downgrade_is_refused_unless_asked_for(host: Host, tmp_path: Path) -> None:
    """0.1.0 over 0.2.0 replaced the working version silently; now it needs downgrade, and
    the refusal names both versions."""
    await host.install(markdown_copy(tmp_path, "v2", version="0.2.0"))
    older = markdown_copy(tmp_path, "v1", version="0.1.0")
    with pytest.raises(PluginError) as raised:
        await host.install(older)
    assert "0.1.0 is older than the installed 0.2.0" in raised.value.message
    assert raised.value.kind == "conflict"
    assert [p.version for p in host.plugins.list()] == ["0.2.0"]
    info = await host.install(older, downgrade=True)
    assert info.version == "0.1.0"


async def test_state_survives_a_restart(make_host: MakeHost) -> None:
    first = make_host()  # tmp_path / "host", reopened below
    await first.install(MARKDOWN)
    await first.disable("fan.summer.markdown")
    await first.close()
    second = make_host()
    (info,) = second.plugins.list()
    assert (info.id, info.enabled) == ("fan.summer.markdown", False)


async def test_uninstall(host: Host) -> None:
    info = await host.install(MARKDOWN)
    await host.uninstall(info.id)
    assert host.plugins.list() == [] and not Path(info.root).exists()


async def test_route_b_injects_the_only_matching_grant(host: Host, tmp_path: Path) -> None:
    await host.install(MARKDOWN)
    doc = tmp_path / "files" / "notes.md"
    doc.write_text("# One\n## Two\n")
    host.grants.attach("c1", "fan.summer.markdown", doc, "read")
    events = await run(host, call("markdown_outline", {"filePath": "whatever the model says"}))
    phases = [e.data.get("phase") for e in events if e.type == "tool"]
    assert phases == ["call", "filled", "result"]
    result = json.loads(events[2].data["output"])
    assert result["success"] is True and len(result["headings"]) == 2


async def test_a_read_call_the_host_filled_in_shows_what_it_sent(
    host: Host, tmp_path: Path
) -> None:
    """No approval shows a read tool's injected file: the `filled` phase does (the console
    showed `{}` as the arguments of a call that was given a file)."""
    await host.install(MARKDOWN)
    doc = tmp_path / "files" / "notes.md"
    doc.write_text("# One\n")
    ref = host.grants.attach("c1", "fan.summer.markdown", doc, "read")
    events = await run(host, call("markdown_outline", {}))
    (filled,) = [e.data for e in events if e.data.get("phase") == "filled"]
    assert filled["injected"] == ["filePath"] and filled["name"] == "markdown_outline"
    assert ref["id"] in filled["arguments"]
    assert [f["path"] for f in filled["files"]] == [str(doc)]


async def test_route_a_lists_refs_in_the_system_prompt(host: Host, tmp_path: Path) -> None:
    await host.install(MARKDOWN)
    doc = tmp_path / "files" / "notes.md"
    doc.write_text("# One\n")
    ref = host.grants.attach("c1", "fan.summer.markdown", doc, "read")
    model = ScriptedModel([ModelTurn(text="ok")])
    _ = [e async for e in host.chat("hi", model=model, conversation_id="c1")]
    system = model.seen[0][0][0].content
    assert ref["id"] in system and "fan.summer.markdown" in system


async def test_ref_of_another_conversation_is_refused(host: Host, tmp_path: Path) -> None:
    await host.install(MARKDOWN)
    doc = tmp_path / "files" / "notes.md"
    doc.write_text("# One\n")
    ref = host.grants.attach("other", "fan.summer.markdown", doc, "read")
    host.grants.attach("c1", "fan.summer.markdown", doc, "read")
    host.grants.attach("c1", "fan.summer.markdown", doc, "read")
    events = await run(host, call("markdown_outline", {"filePath": ref}))
    assert json.loads(events[1].data["output"]) == {
        "success": False,
        "error": f"FileRef {ref['id']} is not granted in this conversation",
    }


class SendTool(SentAsIs):
    """A stand-in external tool, to see the policy without a plugin."""

    definition = ToolDefinition("send_mail", "Send a mail.")
    effect = Effect.EXTERNAL
    owner = "builtin"
    calls = 0

    async def call(self, plan: CallPlan, context: CallContext) -> ToolResult:
        SendTool.calls += 1
        return ToolResult.of({"success": True})


async def test_unknown_tool_and_denied_external_tool(tmp_path: Path, make_host: MakeHost) -> None:
    host = make_host(
        data_dir=tmp_path / "h",
        approval=ApprovalPolicy(external=Decision.DENY),
        builtins=[SendTool()],
    )
    events = await run(host, call("nope", {}), call("send_mail", {}, "call-2"))
    outputs = [json.loads(e.data["output"]) for e in events if e.data.get("phase") == "result"]
    assert outputs == [
        {"success": False, "error": "unknown tool: nope"},
        {"success": False, "error": "the call to send_mail was not approved"},
    ]
    assert SendTool.calls == 0


async def test_approval_asked_and_granted(tmp_path: Path, make_host: MakeHost) -> None:
    host = make_host(data_dir=tmp_path / "h", approval=ApprovalPolicy(timeout=5))
    await host.install(EXCEL)
    model = ScriptedModel(
        [call("excel_execute", {"outputDir": "/nonexistent"}), ModelTurn(text="ok")]
    )
    seen: list[Event] = []
    async for event in host.chat("split", model=model, conversation_id="c"):
        seen.append(event)
        if event.type == "approval":
            assert host.approvals.decide(event.data["id"], True)
    kinds = [(e.type, e.data.get("phase")) for e in seen]
    assert kinds[:3] == [("tool", "call"), ("approval", None), ("tool", "result")]
    assert "not approved" not in seen[2].data["output"]


async def test_approval_times_out_as_denial(tmp_path: Path, make_host: MakeHost) -> None:
    host = make_host(data_dir=tmp_path / "h", approval=ApprovalPolicy(timeout=0.2))
    await host.install(EXCEL)
    events = await run(host, call("excel_execute", {"outputDir": "/tmp"}))
    assert events[1].type == "approval"
    assert json.loads(events[2].data["output"]) == {
        "success": False,
        "error": "the call to excel_execute was not approved",
    }


def _context() -> CallContext:
    return CallContext("c1", "r1")


async def test_model_error_ends_with_an_error_event(host: Host) -> None:
    from reference_host.agent.models import ModelError

    class Broken(TurnModel):
        async def complete(self, messages, tools):
            raise ModelError("unreachable")

    events = [e async for e in host.chat("hi", model=Broken())]
    assert [e.type for e in events] == ["error"]
    assert events[-1].data == {"message": "model error: unreachable"}
    await asyncio.sleep(0)


async def test_catalog_identities_and_revisions(host: Host) -> None:
    await host.install(MARKDOWN)
    entries = {e.identity: e for e in host.catalog()}
    render = entries["fan.summer.markdown:markdown_render"]
    assert render.output_fields == {"success", "summary", "html"}
    before = render.revision
    await host.install(MARKDOWN)
    again = {e.identity: e for e in host.catalog()}["fan.summer.markdown:markdown_render"]
    assert again.revision == before
