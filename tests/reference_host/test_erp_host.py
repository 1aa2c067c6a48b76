"""ERP plugins in the host (spec: erp.md): ownership, deactivation, discovery, permissions,
risk gating and REST dispatch against the sample backends served on loopback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conformance.install_validation import kit_validator
from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.agent.models import ModelTurn, ScriptedModel, ToolCall
from reference_host.erp.actors import Actor, ActorDirectory
from reference_host.host import Host
from reference_host.plugins.lifecycle import PluginError
from sample_plugins.erp_backends import serve_backends
from tests.conftest import FIXTURE_PLUGINS, REPO, MakeHost

SAMPLES = REPO / "sample_plugins"
HR = Actor(
    "hana",
    frozenset({"acme"}),
    frozenset({"HELLO_PLUGIN_DEMO", "HCM_EMPLOYEE_READ", "HCM_EMPLOYEE_TRANSFER"}),
)


@pytest.fixture(scope="module")
def erp_url():
    with serve_backends() as url:
        yield url


@pytest.fixture
def host(erp_url: str, make_host: MakeHost) -> Host:
    host = make_host(
        erp_base_url=erp_url,
        approval=ApprovalPolicy(write=Decision.ASK, timeout=5),
        validator=kit_validator,
    )
    host.actors = ActorDirectory(actors={HR.name: HR})
    return host


def call(name: str, arguments: dict) -> ModelTurn:
    return ModelTurn(tool_calls=(ToolCall("c1", name, json.dumps(arguments)),))


async def run(host: Host, turn: ModelTurn, actor: str = "hana", approve: bool = True):
    model = ScriptedModel([turn, ModelTurn(text="ok")])
    events = []
    async for event in host.chat("hi", model=model, tenant="acme", actor=actor):
        events.append(event)
        if event.type == "approval":
            host.approvals.decide(event.data["id"], approve)
    return model, events


def result_of(events) -> dict:
    return json.loads(next(e.data["output"] for e in events if e.data.get("phase") == "result"))


async def test_install_owns_tool_codes_and_reinstall_is_idempotent(host: Host) -> None:
    info = await host.install(SAMPLES / "hcm-employee")
    assert (info.id, info.profile) == ("hcm-employee", "erp")
    assert info.tools == ["hcm-employee_employee_get", "hcm-employee_employee_search"]
    await host.install(SAMPLES / "hcm-employee")
    assert host.store.tool_codes() == {
        "hcm-employee.employee.get": ("hcm-employee", True),
        "hcm-employee.employee.search": ("hcm-employee", True),
    }


async def test_tool_code_owned_elsewhere_fails_with_the_owner(host: Host, tmp_path: Path) -> None:
    await host.install(SAMPLES / "hello-plugin")
    thief = tmp_path / "thief"
    shutil.copytree(SAMPLES / "hello-plugin", thief)
    tool_file = thief / "metadata" / "tool" / "hello.greeting.get.json"
    tool = json.loads(tool_file.read_text())
    tool_file.write_text(json.dumps({**tool, "applicationCode": "thief-plugin"}))
    with pytest.raises(PluginError) as raised:
        await host.install(thief)
    assert raised.value.problems == [
        "toolCode 'hello.greeting.get' is already owned by plugin hello-plugin"
    ]


async def test_manually_created_tool_code_blocks_a_plugin(host: Host) -> None:
    host.plugins.create_manual_tool("hello.greeting.get")
    with pytest.raises(PluginError) as raised:
        await host.install(SAMPLES / "hello-plugin")
    assert raised.value.problems == [
        "toolCode 'hello.greeting.get' is already owned by a tool created manually"
    ]
    assert host.plugins.list() == []


async def test_namespace_violation_is_refused_before_anything_is_touched(host: Host) -> None:
    with pytest.raises(PluginError) as raised:
        await host.install(FIXTURE_PLUGINS / "ERP-TOOL-005-dotdot")
    assert any("ERP-TOOL-005" in p for p in raised.value.problems)
    assert host.store.tool_codes() == {} and host.plugins.list() == []


async def test_disable_and_uninstall_deactivate_enable_reactivates(host: Host) -> None:
    await host.install(SAMPLES / "hello-plugin")
    assert [t["active"] for t in host.discover("acme", "hana")] == [True]
    await host.disable("hello-plugin")
    assert [t["active"] for t in host.discover("acme", "hana")] == [False]
    await host.enable("hello-plugin")
    assert [t["active"] for t in host.discover("acme", "hana")] == [True]
    await host.uninstall("hello-plugin")
    assert host.store.tool_codes() == {"hello.greeting.get": ("hello-plugin", False)}


async def test_discovery_lists_only_permitted_tools(host: Host) -> None:
    await host.install(SAMPLES / "hcm-employee")
    await host.install(SAMPLES / "hcm-ai-intelligence")
    host.actors.set(Actor("guest", frozenset({"acme"}), frozenset({"HCM_EMPLOYEE_READ"})))
    guest = {t["toolCode"] for t in host.discover("acme", "guest")}
    assert "hcm-ai-intelligence.employee.transfer" not in guest
    assert "hcm-employee.employee.get" in guest
    assert host.discover("globex", "guest") == []
    assert host.discover("acme", "nobody") == []


async def test_agent_run_calls_the_backend_for_the_tenant(host: Host) -> None:
    await host.install(SAMPLES / "hcm-employee")
    _, events = await run(host, call("hcm-employee_employee_get", {"employeeId": "E1001"}))
    assert "Alice Chen" in json.dumps(result_of(events))


async def test_tools_without_permission_are_not_offered(host: Host) -> None:
    await host.install(SAMPLES / "hcm-employee")
    host.actors.set(Actor("guest", frozenset({"acme"}), frozenset()))
    model, events = await run(
        host, call("hcm-employee_employee_get", {"employeeId": "E1"}), actor="guest"
    )
    offered = [d.name for d in model.seen[0][1]]
    assert not any(name.startswith("hcm-employee") for name in offered)
    assert result_of(events) == {
        "success": False,
        "error": "unknown tool: hcm-employee_employee_get",
    }


async def test_high_risk_asks_for_approval_and_strict_rechecks(host: Host) -> None:
    await host.install(SAMPLES / "hcm-employee")
    await host.install(SAMPLES / "hcm-ai-intelligence")
    transfer = call(
        "hcm-ai-intelligence_employee_transfer",
        {"employeeId": "E1002", "targetDepartment": "Sales", "reason": "team move"},
    )
    _, events = await run(host, transfer, approve=False)
    assert [e.type for e in events][:3] == ["tool", "approval", "tool"]
    assert result_of(events)["error"].endswith("was not approved")

    class Revoking(ScriptedModel):
        async def complete(self, messages, tools):
            host.actors.set(Actor("hana", frozenset({"acme"}), frozenset({"HCM_EMPLOYEE_READ"})))
            return await super().complete(messages, tools)

    model = Revoking([transfer, ModelTurn(text="ok")])
    events = []
    async for event in host.chat("hi", model=model, tenant="acme", actor="hana"):
        events.append(event)
        if event.type == "approval":
            host.approvals.decide(event.data["id"], True)
    assert result_of(events)["error"] == (
        "hana lacks permission HCM_EMPLOYEE_TRANSFER for hcm-ai-intelligence.employee.transfer"
    )


async def test_discovery_endpoint_over_http(host: Host) -> None:
    import httpx

    from reference_host.http.app import create_app

    await host.install(SAMPLES / "hello-plugin")
    app = create_app(host, lambda: ScriptedModel([]))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        missing = await client.get("/api/v1/agents/metadata/tools", headers={"X-Actor": "hana"})
        assert missing.status_code == 400
        assert missing.json()["error"] == "the X-Tenant-Id and X-Actor headers are required"
        listed = await client.get(
            "/api/v1/agents/metadata/tools", headers={"X-Tenant-Id": "acme", "X-Actor": "hana"}
        )
        assert [(t["toolCode"], t["active"]) for t in listed.json()] == [
            ("hello.greeting.get", True)
        ]


def test_actor_directory_reads_and_rereads_its_file(tmp_path: Path) -> None:
    import os

    from reference_host.erp.actors import DirectoryError

    path = tmp_path / "actors.json"
    path.write_text(json.dumps({"actors": {"al": {"tenants": ["acme"], "permissions": ["P"]}}}))
    directory = ActorDirectory(path)
    assert directory.permits("acme", "al", "P")
    assert not directory.permits("globex", "al", "P")
    path.write_text(json.dumps({"actors": {"al": {"tenants": ["acme"], "permissions": []}}}))
    os.utime(path, (1, 1))
    assert not directory.permits("acme", "al", "P")
    path.write_text('{"actors": {"al": {"tenants": "acme"}}}')
    os.utime(path, (2, 2))
    with pytest.raises(DirectoryError, match=r"actors.json /actors/al: expected tenants"):
        directory.permits("acme", "al", "P")
