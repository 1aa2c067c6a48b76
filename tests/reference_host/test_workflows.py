"""Saved workflows (spec: host.md#saved-workflows): save and its errors, load against the live
catalog, reconcile, runs through chat's call path, the HTTP routes, and property-based checks
of revisions and of canvases across random plugin lifecycles."""

from __future__ import annotations

import asyncio
import copy
import json
import random
import re
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from plugin_spec.tool_definition import Effect, ToolDefinition
from plugin_spec.workflow_catalog import CatalogEntry, from_manifest, revision
from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.agent.models import ScriptedModel
from reference_host.host import Host, HostConfig
from reference_host.http.app import create_app
from reference_host.storage.database import Store
from reference_host.stream.events import Event
from reference_host.stream.sse_parser import SSEEvent, parse
from reference_host.tools.callbacks import CallContext, CallPlan, SentAsIs, ToolResult
from reference_host.workflow.canvas import Canvas, WorkflowError
from reference_host.workflow.runner import run_saved
from reference_host.workflow.store import WorkflowStore
from tests.conftest import REPO, MakeHost

MARKDOWN = REPO / "sample_plugins" / "fan.summer.markdown"
RENDER = "fan.summer.markdown:markdown_render"
OUTLINE = "fan.summer.markdown:markdown_outline"


class Fake(SentAsIs):
    """A built-in ToolCallback with an outputSchema, recording the arguments it gets."""

    owner = "builtin"

    def __init__(
        self,
        name: str,
        inputs: dict[str, Any],
        required: list[str],
        outputs: list[str] | None,
        reply: Callable[[dict[str, Any]], Any],
        effect: Effect = Effect.READ,
    ) -> None:
        schema = {"type": "object", "properties": inputs, "required": required}
        self.definition = ToolDefinition(name, f"The {name} tool.", schema)
        self.effect = effect
        output_schema = (
            None if outputs is None else {"type": "object", "properties": {o: {} for o in outputs}}
        )
        self.decl = SimpleNamespace(output_schema=output_schema)
        self.reply = reply
        self.received: list[dict[str, Any]] = []

    async def call(self, plan: CallPlan, context: CallContext) -> ToolResult:
        arguments = plan.arguments.object()
        self.received.append(arguments)
        return ToolResult.of(self.reply(arguments))


def outline_reply(args: dict[str, Any]) -> dict[str, Any]:
    headings = [line for line in args["html"].splitlines() if line.startswith("<h")]
    return {"success": True, "summary": f"{len(headings)} headings", "headings": headings}


def fakes() -> dict[str, Fake]:
    return {
        "outline": Fake(
            "outline",
            {"html": {"type": "string"}, "depth": {"type": "integer"}},
            ["html"],
            ["success", "summary", "headings"],
            outline_reply,
        ),
        "collect": Fake(
            "collect",
            {"value": {}, "label": {"type": "string"}},
            ["value"],
            ["success", "count"],
            lambda args: {"success": True, "count": len(json.dumps(args["value"]))},
        ),
        "boom": Fake(
            "boom",
            {"x": {"type": "string"}},
            [],
            ["success", "text"],
            lambda args: {"success": False, "error": "the boom tool broke"},
        ),
        "write": Fake(
            "write",
            {"text": {}},
            ["text"],
            ["success"],
            lambda args: {"success": True},
            effect=Effect.WRITE,
        ),
        "plain": Fake("plain", {}, [], None, lambda args: "not json either way"),
    }


# Workflow hosts allow writes without asking and deny external calls, unless a test says.
POLICY = ApprovalPolicy(write=Decision.ALLOW, external=Decision.DENY)
FlowHost = Callable[..., Host]


@pytest.fixture
def flow_host(make_host: MakeHost) -> FlowHost:
    """`flow_host(data_dir, tools, policy)`: a host from make_host with the fakes as its
    built-ins and POLICY unless another policy is given."""

    def build(
        path: Path, tools: dict[str, Fake] | None = None, policy: ApprovalPolicy | None = None
    ) -> Host:
        return make_host(
            data_dir=path, approval=policy or POLICY, builtins=list((tools or {}).values())
        )

    return build


@pytest.fixture
def tools() -> dict[str, Fake]:
    return fakes()


@pytest.fixture
def host(tmp_path: Path, tools: dict[str, Fake], flow_host: FlowHost) -> Host:
    return flow_host(tmp_path / "host", tools)


@pytest.fixture
async def md_host(host: Host) -> Host:
    await host.install(MARKDOWN)
    return host


def node(
    node_id: str,
    identity: str,
    inputs: dict[str, Any] | None = None,
    **bindings: tuple[str, str | None],
) -> dict[str, Any]:
    return {
        "id": node_id,
        "identity": identity,
        "inputs": inputs or {},
        "bindings": {k: {"node": n, "field": f} for k, (n, f) in bindings.items()},
    }


def workflow(*nodes: dict[str, Any], workflow_id: str = "wf1") -> dict[str, Any]:
    return {"id": workflow_id, "name": "Test flow", "nodes": list(nodes)}


async def collect(run) -> list[Event]:
    return [event async for event in run]


async def run(host: Host, workflow_id: str) -> list[Event]:
    canvas = Canvas.for_host(host)
    return await collect(run_saved(host, canvas.raw(workflow_id)))


async def save_and_run(host: Host, *nodes: dict[str, Any]) -> list[Event]:
    """Save workflow wf1 of nodes on host's canvas and run it; the run's events."""
    Canvas.for_host(host).save(workflow(*nodes))
    return await run(host, "wf1")


def tool_events(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.data["phase"], e.data["id"]) for e in events if e.type == "tool"]


# -- save --------------------------------------------------------------------------------------


async def test_save_fills_seen_and_load_annotates(md_host: Host) -> None:
    canvas = Canvas.for_host(md_host)
    shown, created = canvas.save(
        workflow(
            node("r", RENDER, {"markdown": "# Hi"}),
            {**node("o", "builtin:outline", html=("r", "html")), "position": [10, 20]},
        )
    )
    assert created
    render = canvas.catalog()[RENDER]
    loaded = canvas.load("wf1")
    assert loaded == shown
    first, second = loaded["nodes"]
    assert first["seen"] == {
        "revision": render.revision,
        "inputSchema": dict(render.input_schema),
        "outputSchema": dict(render.output_schema),
    }
    assert first["available"] and first["revision"] == render.revision
    assert "reconcile" not in first and first["problems"] == []
    assert second["bindings"] == {"html": {"node": "r", "field": "html"}}
    assert second["position"] == [10, 20]  # a client's own keys are kept
    _, created = canvas.save(loaded)  # an annotated workflow saves back as it was
    assert not created and canvas.raw("wf1")["nodes"][1]["bindings"] == second["bindings"]
    assert "available" not in canvas.raw("wf1")["nodes"][0]


async def test_client_seen_is_replaced_by_the_live_state(md_host: Host) -> None:
    canvas = Canvas.for_host(md_host)
    sent = node("r", RENDER, {"markdown": "x"})
    sent["seen"] = {"revision": "forged", "inputSchema": {}, "outputSchema": None}
    canvas.save(workflow(sent))
    assert canvas.raw("wf1")["nodes"][0]["seen"]["revision"] == canvas.catalog()[RENDER].revision


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        (
            [node("a", RENDER, {"markdown": "x"}), node("b", "builtin:outline", html=("a", "x"))],
            "node 'b', input 'html': field 'x' is not in the outputSchema of " + RENDER,
        ),
        (
            [node("a", RENDER), node("a", OUTLINE)],
            "node id 'a' is used by more than one node",
        ),
        ([node("a", "fan.summer.markdown:nope")], "node 'a': tool fan.summer.markdown:nope"),
        (
            [node("b", "builtin:outline", html=("zz", None))],
            "node 'b', input 'html': binds to unknown node 'zz'",
        ),
        (
            [node("a", RENDER, {"markdown": "x", "colour": "red"})],
            "node 'a', input 'colour': not an input of " + RENDER,
        ),
        (
            [node("a", RENDER, {"markdown": "x"}), node("b", RENDER, colour=("a", None))],
            "node 'b', input 'colour': not an input of " + RENDER,
        ),
        (
            [
                node("a", RENDER, {"markdown": "x"}),
                node("b", RENDER, {"markdown": "y"}, markdown=("a", "summary")),
            ],
            "node 'b', input 'markdown': has both a literal value and a binding",
        ),
        (
            [node("a", "builtin:collect", value=("a", None))],
            "node 'a', input 'value': a node cannot bind to its own result",
        ),
        (
            [
                node("a", "builtin:collect", value=("c", None)),
                node("b", "builtin:collect", value=("a", "count")),
                node("c", "builtin:collect", value=("b", None)),
            ],
            "the bindings form a cycle: a -> b -> c -> a",
        ),
        (
            [node("a", "builtin:plain"), node("b", "builtin:collect", value=("a", "text"))],
            "node 'b', input 'value': field 'text' is not in the outputSchema of builtin:plain",
        ),
    ],
)
async def test_save_refuses_with_a_clear_error(
    md_host: Host, nodes: list[dict[str, Any]], message: str
) -> None:
    canvas = Canvas.for_host(md_host)
    with pytest.raises(WorkflowError) as raised:
        canvas.save(workflow(*nodes))
    assert any(problem.startswith(message) for problem in raised.value.problems), raised.value
    assert message in raised.value.message
    assert canvas.workflows.get("wf1") is None


@pytest.mark.parametrize(
    ("sent", "message"),
    [
        ([], "a workflow must be a JSON object"),
        ({"id": "", "nodes": []}, "the workflow id must be a non-empty string"),
        ({"id": "w", "nodes": {}}, "nodes must be a list"),
        ({"id": "w", "nodes": [{"identity": RENDER}]}, "nodes[0]: the node id must be"),
        ({"id": "w", "nodes": [{"id": "a", "identity": "x"}]}, "node 'a': identity must be"),
        (
            {"id": "w", "nodes": [{"id": "a", "identity": RENDER, "bindings": {"m": "a"}}]},
            "node 'a', input 'm': a binding is",
        ),
        (
            {"id": "w", "nodes": [{"id": "a", "identity": RENDER, "inputs": [1]}]},
            "node 'a': inputs must be an object",
        ),
    ],
)
async def test_save_refuses_malformed_workflows(md_host: Host, sent: Any, message: str) -> None:
    with pytest.raises(WorkflowError, match="^" + re.escape(message)):
        Canvas.for_host(md_host).save(sent)


async def test_a_workflow_without_id_gets_one(host: Host) -> None:
    shown, created = Canvas.for_host(host).save({"nodes": []})
    assert created and shown["id"].startswith("wf_") and shown["nodes"] == []


async def test_unknown_workflow_is_not_found(host: Host) -> None:
    canvas = Canvas.for_host(host)
    for action in (canvas.load, canvas.reconcile, canvas.delete):
        with pytest.raises(WorkflowError) as raised:
            action("missing")
        assert raised.value.kind == "not_found"


async def test_workflows_live_in_the_host_database_and_survive_a_restart(
    tmp_path: Path, flow_host: FlowHost
) -> None:
    first = flow_host(tmp_path / "h", fakes())
    Canvas.for_host(first).save(workflow(node("c", "builtin:collect", {"value": 1})))
    await first.close()
    with sqlite3.connect(tmp_path / "h" / "host.sqlite3") as db:
        (name, definition) = db.execute("SELECT name, definition FROM workflows").fetchone()
    assert name == "Test flow" and json.loads(definition)["nodes"][0]["id"] == "c"
    second = flow_host(tmp_path / "h", fakes())
    canvas = Canvas.for_host(second)
    assert canvas.load("wf1")["nodes"][0]["available"]
    assert [w["id"] for w in canvas.workflows.list()] == ["wf1"]
    canvas.delete("wf1")
    assert canvas.workflows.list() == []


def test_workflow_store_on_a_plain_store(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite3")
    try:
        workflows = WorkflowStore(store)
        assert workflows.put({"id": "w", "name": "W", "nodes": []})
        assert not workflows.put({"id": "w", "name": "W2", "nodes": []})
        assert workflows.update("missing", lambda w: w) is None
        assert workflows.update("w", lambda w: None) == {"id": "w", "name": "W2", "nodes": []}
        changed = workflows.update("w", lambda w: {**w, "name": "W3"})
        assert changed == workflows.get("w") == {"id": "w", "name": "W3", "nodes": []}
        with pytest.raises(RuntimeError), store.transaction():
            raise RuntimeError("rolled back")
        assert [w["name"] for w in workflows.list()] == ["W3"]
        assert workflows.delete("w") and not workflows.delete("w")
        WorkflowStore(store)  # a second handle on the same database is harmless
    finally:
        store.close()


# -- load and reconcile ----------------------------------------------------------------------


def write_plugin(folder: Path, plugin_id: str, tools: dict[str, dict[str, Any]]) -> Path:
    """A FengYu plugin folder without a worker: tool name -> {inputs, required, outputs,
    description}."""
    methods = {
        name: {
            "description": spec.get("description", name),
            "inputSchema": {
                "type": "object",
                "properties": {i: {"type": "string"} for i in spec["inputs"]},
                "required": list(spec["required"]),
            },
            "outputSchema": {
                "type": "object",
                "properties": {o: {"type": "string"} for o in spec["outputs"]},
            },
        }
        for name, spec in tools.items()
    }
    manifest = {
        "schemaVersion": 2,
        "id": plugin_id,
        "name": plugin_id,
        "version": "1.0.0",
        "rpc": {"methods": methods},
        "aiTools": [
            {"name": n, "method": n, "effect": "read", "description": s.get("description", n)}
            for n, s in tools.items()
        ],
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


async def test_disappearing_tool_is_kept_unavailable_then_reconciled(
    host: Host, tmp_path: Path
) -> None:
    v1 = {"make": {"inputs": ["a", "b"], "required": ["a"], "outputs": ["out", "extra"]}}
    await host.install(write_plugin(tmp_path / "v1", "fake.p", v1))
    canvas = Canvas.for_host(host)
    canvas.save(
        workflow(
            node("m", "fake.p:make", {"a": "1"}, b=("c", "count")),
            node("c", "builtin:collect", {"value": 1}),
            node("d", "builtin:collect", value=("m", "extra")),
        )
    )
    before = canvas.raw("wf1")
    await host.disable("fake.p")
    shown = canvas.load("wf1")
    assert [n["id"] for n in shown["nodes"]] == ["m", "c", "d"]
    assert not shown["nodes"][0]["available"] and shown["nodes"][0]["revision"] is None
    assert shown["nodes"][0]["problems"] == ["tool fake.p:make is not available"]
    assert "reconcile" not in shown["nodes"][0]
    assert canvas.reconcile("wf1")["reconciled"] == []
    assert canvas.raw("wf1") == before  # nothing changes while the tool is away

    await host.uninstall("fake.p")
    v2 = {"make": {"inputs": ["a", "c"], "required": ["a", "c"], "outputs": ["out"]}}
    await host.install(write_plugin(tmp_path / "v2", "fake.p", v2))
    shown = canvas.load("wf1")
    made = shown["nodes"][0]
    assert made["available"] and made["bindings"] == before["nodes"][0]["bindings"]
    assert made["reconcile"] == {
        "revision": canvas.catalog()["fake.p:make"].revision,
        "bindingsToRemovedInputs": ["b"],
        "newRequiredInputs": ["c"],
    }
    assert shown["nodes"][2]["problems"] == [
        "input 'value' binds field 'extra', which is no longer in the outputSchema of fake.p:make"
    ]
    result = canvas.reconcile("wf1")
    assert result["reconciled"] == [
        {
            "node": "m",
            "identity": "fake.p:make",
            "from": before["nodes"][0]["seen"]["revision"],
            "to": made["revision"],
            "bindingsToRemovedInputs": ["b"],
            "newRequiredInputs": ["c"],
        }
    ]
    after = result["workflow"]["nodes"][0]
    assert "reconcile" not in after and after["seen"]["revision"] == made["revision"]
    assert after["seen"]["inputSchema"]["required"] == ["a", "c"]
    assert after["inputs"] == {"a": "1"} and after["bindings"] == made["bindings"]
    assert canvas.load("wf1") == result["workflow"]
    assert after["problems"] == [
        "input 'b' is no longer an input of fake.p:make",
        "required input 'c' has no value",
    ]


# -- runs --------------------------------------------------------------------------------------


async def test_render_chain_with_field_and_whole_result_bindings(
    md_host: Host, tools: dict[str, Fake]
) -> None:
    events = await save_and_run(  # listed downstream first: the run follows the bindings
        md_host,
        node("whole", "builtin:collect", {"label": "all"}, value=("render", None)),
        node("outline", "builtin:outline", {"depth": 2}, html=("render", "html")),
        node("again", RENDER, markdown=("render", "summary")),
        node("render", RENDER, {"markdown": "# Title\n\n## Part\n\ntext"}),
    )
    assert [e.type for e in events][-1] == "done", events[-1]
    ids = [i for phase, i in tool_events(events) if phase == "call"]
    assert ids[0] == "render" and set(ids) == {"render", "whole", "outline", "again"}
    assert tool_events(events) == [(p, i) for i in ids for p in ("call", "result")]
    results = {e.data["id"]: e.data for e in events if e.data.get("phase") == "result"}
    rendered = json.loads(results["render"]["output"])
    assert "<h1>Title</h1>" in rendered["html"] and all(r["success"] for r in results.values())
    assert tools["outline"].received == [{"depth": 2, "html": rendered["html"]}]
    assert tools["collect"].received == [{"label": "all", "value": rendered}]
    again = next(e.data for e in events if e.data.get("id") == "again")
    assert json.loads(again["arguments"]) == {"markdown": rendered["summary"]}
    assert again["name"] == "markdown_render"
    assert rendered["summary"] in json.loads(results["again"]["output"])["html"]
    assert json.loads(results["outline"]["output"])["headings"] == [
        "<h1>Title</h1>",
        "<h2>Part</h2>",
    ]


async def test_failed_upstream_ends_the_run_naming_the_node(
    host: Host, tools: dict[str, Fake]
) -> None:
    events = await save_and_run(
        host, node("b", "builtin:boom"), node("c", "builtin:collect", value=("b", "text"))
    )
    assert [e.type for e in events] == ["tool", "tool", "error"]
    assert events[1].data["success"] is False
    assert events[-1].data == {"message": "node 'b' (builtin:boom) failed: the boom tool broke"}
    assert tools["collect"].received == []


async def test_unavailable_node_ends_the_run(md_host: Host, tools: dict[str, Fake]) -> None:
    canvas = Canvas.for_host(md_host)
    canvas.save(
        workflow(
            node("c", "builtin:collect", {"value": 1}),
            node("r", RENDER, {"markdown": "x"}),
            node("o", "builtin:outline", html=("r", "html")),
        )
    )
    await md_host.disable("fan.summer.markdown")
    events = await run(md_host, "wf1")
    assert tool_events(events) == [("call", "c"), ("result", "c")]
    assert events[-1].data == {"message": f"node 'r': tool {RENDER} is not available"}
    assert tools["outline"].received == []


async def test_unmet_required_input_ends_the_run(host: Host) -> None:
    events = await save_and_run(host, node("o", "builtin:outline", {"depth": 1}))
    assert [e.type for e in events] == ["error"]
    assert events[0].data["message"] == (
        "node 'o': required input 'html' has no value (neither literal nor bound)"
    )


async def test_a_result_that_is_not_json_binds_whole_as_text(
    host: Host, tools: dict[str, Fake]
) -> None:
    events = await save_and_run(
        host, node("p", "builtin:plain"), node("c", "builtin:collect", value=("p", None))
    )
    assert events[-1].type == "done"
    assert tools["collect"].received == [{"value": "not json either way"}]


async def test_a_bound_field_missing_from_the_result_ends_the_run(
    tmp_path: Path, flow_host: FlowHost
) -> None:
    tools = fakes()
    tools["collect"].reply = lambda args: {"success": True}  # declares count, omits it
    host = flow_host(tmp_path / "h", tools)
    events = await save_and_run(
        host,
        node("a", "builtin:collect", {"value": 1}),
        node("b", "builtin:collect", value=("a", "count")),
    )
    assert tool_events(events) == [("call", "a"), ("result", "a")]
    assert events[-1].data == {
        "message": "node 'b': input 'value': the result of node 'a' has no field 'count'"
    }


async def test_run_refuses_a_node_with_inputs_the_tool_lost(host: Host, tmp_path: Path) -> None:
    spec = {"t": {"inputs": ["a", "b"], "required": [], "outputs": ["o"]}}
    await host.install(write_plugin(tmp_path / "v1", "fake.q", spec))
    Canvas.for_host(host).save(workflow(node("n", "fake.q:t", {"a": "1", "b": "2"})))
    spec["t"]["inputs"] = ["a"]
    await host.install(write_plugin(tmp_path / "v2", "fake.q", spec))
    events = await run(host, "wf1")
    assert [e.type for e in events] == ["error"]
    assert (
        events[0]
        .data["message"]
        .startswith("node 'n': input 'b' is no longer an input of fake.q:t")
    )


async def test_approval_in_a_run(tmp_path: Path, flow_host: FlowHost) -> None:
    tools = fakes()
    host = flow_host(tmp_path / "h", tools, ApprovalPolicy(timeout=5))
    canvas = Canvas.for_host(host)
    canvas.save(
        workflow(
            node("c", "builtin:collect", {"value": "v"}),
            node("w", "builtin:write", text=("c", None)),
        )
    )
    seen: list[Event] = []
    async for item in run_saved(host, canvas.raw("wf1")):
        seen.append(item)
        if item.type == "approval":
            assert item.data["callId"] == "w" and item.data["effect"] == "write"
            assert json.loads(item.data["arguments"]) == {"text": {"success": True, "count": 3}}
            assert host.approvals.decide(item.data["id"], True)
    kinds = [(e.type, e.data.get("phase"), e.data.get("id")) for e in seen]
    assert kinds[2:] == [
        ("tool", "call", "w"),
        ("approval", None, seen[3].data["id"]),
        ("tool", "result", "w"),
        ("done", None, None),
    ]
    assert tools["write"].received == [{"text": {"success": True, "count": 3}}]

    denied: list[Event] = []
    async for item in run_saved(host, canvas.raw("wf1")):
        denied.append(item)
        if item.type == "approval":
            host.approvals.decide(item.data["id"], False)
    assert denied[-1].data == {
        "message": "node 'w' (builtin:write) failed: the call to write was not approved"
    }
    assert len(tools["write"].received) == 1


async def test_denied_by_policy_without_asking(tmp_path: Path, flow_host: FlowHost) -> None:
    tools = fakes()
    host = flow_host(tmp_path / "h", tools, ApprovalPolicy(write=Decision.DENY))
    events = await save_and_run(host, node("w", "builtin:write", {"text": 1}))
    assert [e.type for e in events] == ["tool", "tool", "error"]
    assert tools["write"].received == []


# -- HTTP ----------------------------------------------------------------------------------------


@pytest.fixture
async def client(md_host: Host):
    app = create_app(md_host, lambda: ScriptedModel([]))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


async def test_http_catalog_save_load_reconcile_run(client: httpx.AsyncClient) -> None:
    catalog = (await client.get("/api/workflow/catalog")).json()
    render = next(e for e in catalog if e["identity"] == RENDER)
    assert set(render) >= {
        "identity",
        "name",
        "description",
        "effect",
        "inputSchema",
        "outputSchema",
        "revision",
    }
    assert render["outputSchema"]["properties"]["html"]["nullable"] is True
    assert {e["identity"] for e in catalog} >= {"builtin:collect", OUTLINE}

    flow = workflow(
        node("r", RENDER, {"markdown": "# A"}),
        node("c", "builtin:collect", value=("r", "html")),
    )
    saved = await client.post("/api/workflows", json=flow)
    assert saved.status_code == 201 and saved.json()["nodes"][0]["available"]
    assert (await client.post("/api/workflows", json=flow)).status_code == 200
    loaded = await client.get("/api/workflows/wf1")
    assert loaded.status_code == 200 and loaded.json() == saved.json()
    assert (await client.get("/api/workflows")).json()[0]["id"] == "wf1"
    reconciled = await client.post("/api/workflows/wf1/reconcile")
    assert reconciled.json() == {"workflow": saved.json(), "reconciled": []}

    answer = await client.post("/api/workflows/wf1/run")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/event-stream"
    items = parse(answer.content)
    assert items[0].text == "connected"
    events = [i for i in items if isinstance(i, SSEEvent)]
    assert [e.type for e in events] == ["tool", "tool", "tool", "tool", "done"]
    datas = [json.loads(e.data) for e in events[:4]]
    assert [(d["phase"], d["id"]) for d in datas] == [
        ("call", "r"),
        ("result", "r"),
        ("call", "c"),
        ("result", "c"),
    ]
    html = json.loads(datas[1]["output"])["html"]
    assert json.loads(datas[2]["arguments"]) == {"value": html}

    again = await client.post("/api/workflows/wf1/run", json={"conversationId": "conv-7"})
    assert again.headers["x-conversation-id"] == "conv-7"
    assert [e.type for e in parse(again.content) if isinstance(e, SSEEvent)][-1] == "done"
    bad = await client.post("/api/workflows/wf1/run", json={"conversation": "x"})
    assert bad.status_code == 400
    assert (await client.delete("/api/workflows/wf1")).status_code == 204
    assert (await client.get("/api/workflows")).json() == []


async def test_http_errors(client: httpx.AsyncClient) -> None:
    bad = workflow(
        node("r", RENDER, {"markdown": "# A"}),
        node("c", "builtin:collect", value=("r", "x")),
    )
    answer = await client.post("/api/workflows", json=bad)
    assert answer.status_code == 400
    assert answer.json() == {
        "error": f"node 'c', input 'value': field 'x' is not in the outputSchema of {RENDER}",
        "problems": [f"node 'c', input 'value': field 'x' is not in the outputSchema of {RENDER}"],
    }
    assert (await client.post("/api/workflows", json=[1])).status_code == 400
    for method, path in [
        ("GET", "/api/workflows/nope"),
        ("POST", "/api/workflows/nope/reconcile"),
        ("POST", "/api/workflows/nope/run"),
        ("DELETE", "/api/workflows/nope"),
    ]:
        answer = await client.request(method, path)
        assert answer.status_code == 404 and answer.json()["error"] == "no workflow 'nope'"


# -- property: revisions ------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text("abxyz", max_size=3),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text("abcdefgh", min_size=1, max_size=3), children, max_size=3)
    ),
    max_leaves=8,
)
schemas = st.dictionaries(st.text("abcdef", min_size=1, max_size=4), json_values, max_size=4)


def reorder(value: Any, rng: random.Random) -> Any:
    """The same JSON with every object's keys in a random order."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: reorder(value[k], rng) for k in keys}
    if isinstance(value, list):
        return [reorder(v, rng) for v in value]
    return value


@st.composite
def edited(draw: st.DrawFn, value: Any) -> Any:
    """value with one random edit that changes its JSON: a key added, removed or its value
    replaced, a schema appearing or going away, a description changed."""
    if isinstance(value, str):
        index = draw(st.integers(0, len(value)))
        return value[:index] + draw(st.characters(codec="utf-8")) + value[index:]
    if not isinstance(value, dict):  # no outputSchema: one appears
        return draw(schemas)
    value = copy.deepcopy(value)
    kinds = ["add", "none"] + (["remove", "replace"] if value else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "add":
        key = draw(st.text("abcdefxyz", min_size=1, max_size=5).filter(lambda k: k not in value))
        value[key] = draw(json_values)
    elif kind == "remove":
        del value[draw(st.sampled_from(sorted(value)))]
    elif kind == "replace":
        key = draw(st.sampled_from(sorted(value)))
        value[key] = [value[key]] if draw(st.booleans()) else {"wrapped": value[key]}
    else:
        return None
    return value


@settings(max_examples=150, deadline=None)
@given(
    description=st.text(max_size=8),
    input_schema=schemas,
    output_schema=st.none() | schemas,
    which=st.sampled_from(["description", "inputSchema", "outputSchema"]),
    edit=st.data(),
    seed=st.integers(0, 2**16),
)
def test_revision_changes_exactly_with_what_a_canvas_depends_on(
    description: str,
    input_schema: dict[str, Any],
    output_schema: dict[str, Any] | None,
    which: str,
    edit: st.DataObject,
    seed: int,
) -> None:
    entry = CatalogEntry.of("p", "t", description, "read", input_schema, output_schema)
    rng = random.Random(seed)
    same = CatalogEntry.of(
        "p",
        "t",
        description,
        "write",  # the effect is not part of the revision
        reorder(json.loads(json.dumps(input_schema)), rng),
        reorder(copy.deepcopy(output_schema), rng),
    )
    assert same.revision == entry.revision
    parts = {"description": description, "inputSchema": input_schema, "outputSchema": output_schema}
    if which == "inputSchema" and not input_schema:
        parts[which] = {"type": "object"}
    else:
        parts[which] = edit.draw(edited(parts[which]), label=which)
    changed = revision(parts["description"], parts["inputSchema"], parts["outputSchema"])
    assert changed != entry.revision
    assert changed == revision(*(reorder(copy.deepcopy(p), rng) for p in parts.values()))


@settings(max_examples=40, deadline=None)
@given(spec=st.data(), seed=st.integers(0, 2**16))
def test_manifest_revisions_ignore_key_order(spec: st.DataObject, seed: int) -> None:
    tools = {
        name: {
            "inputs": spec.draw(st.lists(st.sampled_from("abcd"), unique=True)),
            "required": [],
            "outputs": spec.draw(st.lists(st.sampled_from("xyz"), unique=True)),
            "description": spec.draw(st.text(max_size=5)),
        }
        for name in ("one", "two")
    }
    with tempfile.TemporaryDirectory() as folder:
        manifest = json.loads(
            (write_plugin(Path(folder), "p.q", tools) / "manifest.json").read_text()
        )
    shuffled = reorder(manifest, random.Random(seed))
    before = {e.identity: e.revision for e in from_manifest("p.q", manifest)}
    assert before == {e.identity: e.revision for e in from_manifest("p.q", shuffled)}


# -- property: canvases across plugin lifecycles ----------------------------------------------

INPUT_POOL = ["a", "b", "c", "d"]
OUTPUT_POOL = ["x", "y", "z"]
# Upgrades twice as often as the rest: they are what changes schemas.
OPERATIONS = ["upgrade", "upgrade", "disable", "enable", "uninstall", "reconcile"]
PLUGINS = {"fake.one": ["one_make", "one_use"], "fake.two": ["two_make"]}


@st.composite
def tool_specs(draw: st.DrawFn) -> dict[str, Any]:
    inputs = draw(st.lists(st.sampled_from(INPUT_POOL), unique=True, min_size=1))
    required = [i for i in inputs if draw(st.booleans())]
    outputs = draw(st.lists(st.sampled_from(OUTPUT_POOL), unique=True))
    return {
        "inputs": inputs,
        "required": required,
        "outputs": outputs,
        "description": draw(st.sampled_from(["d1", "d2"])),
    }


def edit_spec(draw: st.DrawFn, spec: dict[str, Any]) -> dict[str, Any]:
    """One upgrade of a tool: inputs added/removed/newly required, outputs removed/added,
    or the description; sometimes nothing (a re-install of the same data)."""
    spec = copy.deepcopy(spec)
    kind = draw(
        st.sampled_from(["add", "remove", "require", "drop_output", "add_output", "text", "same"])
    )
    if kind == "add" and set(INPUT_POOL) - set(spec["inputs"]):
        spec["inputs"].append(draw(st.sampled_from(sorted(set(INPUT_POOL) - set(spec["inputs"])))))
        if draw(st.booleans()):
            spec["required"].append(spec["inputs"][-1])
    elif kind == "remove" and spec["inputs"]:
        gone = draw(st.sampled_from(spec["inputs"]))
        spec["inputs"].remove(gone)
        spec["required"] = [r for r in spec["required"] if r != gone]
    elif kind == "require" and set(spec["inputs"]) - set(spec["required"]):
        spec["required"].append(
            draw(st.sampled_from(sorted(set(spec["inputs"]) - set(spec["required"]))))
        )
    elif kind == "drop_output" and spec["outputs"]:
        spec["outputs"].remove(draw(st.sampled_from(spec["outputs"])))
    elif kind == "add_output" and set(OUTPUT_POOL) - set(spec["outputs"]):
        spec["outputs"].append(
            draw(st.sampled_from(sorted(set(OUTPUT_POOL) - set(spec["outputs"]))))
        )
    elif kind == "text":
        spec["description"] = "d1" if spec["description"] == "d2" else "d2"
    return spec


def expected_revision(spec: dict[str, Any]) -> str:
    return revision(
        spec["description"],
        {
            "type": "object",
            "properties": {i: {"type": "string"} for i in spec["inputs"]},
            "required": list(spec["required"]),
        },
        {"type": "object", "properties": {o: {"type": "string"} for o in spec["outputs"]}},
    )


@st.composite
def initial_workflow(draw: st.DrawFn, specs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Two to five nodes over the fake tools, each input literal, bound to an earlier node
    (whole or a declared field) or left empty."""
    identities = {f"{p}:{t}": specs[t] for p, names in PLUGINS.items() for t in names}
    count = draw(st.integers(2, 5))
    nodes: list[dict[str, Any]] = []
    for index in range(count):
        identity = draw(st.sampled_from(sorted(identities)))
        spec = identities[identity]
        inputs, bindings = {}, {}
        for name in spec["inputs"]:
            choice = draw(
                st.sampled_from(["literal", "bind", "none"] if nodes else ["literal", "none"])
            )
            if choice == "literal":
                inputs[name] = draw(st.integers(0, 9))
            elif choice == "bind":
                upstream = draw(st.sampled_from(nodes))
                fields = identities[upstream["identity"]]["outputs"]
                field = draw(st.sampled_from([None, *fields]))
                bindings[name] = {"node": upstream["id"], "field": field}
        nodes.append(
            {"id": f"n{index}", "identity": identity, "inputs": inputs, "bindings": bindings}
        )
    return {"id": "flow", "name": "flow", "nodes": nodes}


def check(
    canvas: Canvas,
    original: dict[str, Any],
    seen: dict[str, str],
    live: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """The invariants after one step; returns what load() showed."""
    catalog = canvas.catalog()
    fake = {i for i in catalog if not i.startswith("builtin:")}
    assert fake == set(live)
    for identity, spec in live.items():
        assert catalog[identity].revision == expected_revision(spec)
    shown = canvas.load("flow")
    assert [n["id"] for n in shown["nodes"]] == [n["id"] for n in original["nodes"]]
    for node_shown, node_sent in zip(shown["nodes"], original["nodes"], strict=True):
        assert node_shown["identity"] == node_sent["identity"]
        assert node_shown["bindings"] == node_sent["bindings"]
        assert node_shown["inputs"] == node_sent["inputs"]
        identity = node_sent["identity"]
        assert node_shown["available"] == (identity in live) == (identity in catalog)
        assert node_shown["seen"]["revision"] == seen[node_sent["id"]]
        spec = live.get(identity)
        if spec is None or expected_revision(spec) == seen[node_sent["id"]]:
            assert "reconcile" not in node_shown
            continue
        given = set(node_sent["inputs"]) | set(node_sent["bindings"])
        assert node_shown["reconcile"] == {
            "revision": expected_revision(spec),
            "bindingsToRemovedInputs": sorted(given - set(spec["inputs"])),
            "newRequiredInputs": sorted(set(spec["required"]) - given),
        }
    return shown


async def lifecycle(data: st.DataObject, root: Path) -> None:
    specs = {t: data.draw(tool_specs(), label=t) for names in PLUGINS.values() for t in names}
    # Not make_host: each example runs in its own event loop (asyncio.run) and folder.
    host = Host(HostConfig(data_dir=root / "host", approval=POLICY))
    try:
        versions = 0

        async def install(plugin: str) -> None:
            nonlocal versions
            versions += 1
            tools = {t: specs[t] for t in PLUGINS[plugin] if t in present}
            await host.install(write_plugin(root / f"src{versions}", plugin, tools))

        present = {t for names in PLUGINS.values() for t in names}
        state = {p: "enabled" for p in PLUGINS}  # enabled | disabled | absent
        for plugin in PLUGINS:
            await install(plugin)
        canvas = Canvas.for_host(host)
        original = data.draw(initial_workflow(specs), label="workflow")
        canvas.save(original)
        seen = {
            n["id"]: expected_revision(specs[n["identity"].split(":")[1]])
            for n in original["nodes"]
        }

        def live() -> dict[str, dict[str, Any]]:
            return {
                f"{p}:{t}": specs[t]
                for p, names in PLUGINS.items()
                if state[p] == "enabled"
                for t in names
                if t in present
            }

        def reconcile_step() -> None:
            shown = check(canvas, original, seen, live())
            expected = [
                {
                    "node": n["id"],
                    "identity": n["identity"],
                    "from": n["seen"]["revision"],
                    "to": n["reconcile"]["revision"],
                    "bindingsToRemovedInputs": n["reconcile"]["bindingsToRemovedInputs"],
                    "newRequiredInputs": n["reconcile"]["newRequiredInputs"],
                }
                for n in shown["nodes"]
                if "reconcile" in n
            ]
            assert canvas.reconcile("flow")["reconciled"] == expected
            event(f"reconciled {min(len(expected), 2)} nodes")
            if any(r["bindingsToRemovedInputs"] or r["newRequiredInputs"] for r in expected):
                event("reconcile reported removed or newly required inputs")
            for report in expected:
                seen[report["node"]] = report["to"]

        check(canvas, original, seen, live())
        steps = data.draw(st.integers(1, 10), label="steps")
        for _ in range(steps):
            op = data.draw(
                st.sampled_from(
                    ["upgrade", "upgrade", "disable", "enable", "uninstall", "reconcile"]
                ),
                label="op",
            )
            plugin = data.draw(st.sampled_from(sorted(PLUGINS)), label="plugin")
            if op == "upgrade":
                for tool in PLUGINS[plugin]:
                    specs[tool] = edit_spec(data.draw, specs[tool])
                    if data.draw(st.integers(0, 5), label="drop") == 0:
                        present.symmetric_difference_update({tool})  # leaves, or comes back
                await install(plugin)
                state[plugin] = "disabled" if state[plugin] == "disabled" else "enabled"
            elif op == "disable" and state[plugin] != "absent":
                await host.disable(plugin)
                state[plugin] = "disabled"
            elif op == "enable" and state[plugin] != "absent":
                await host.enable(plugin)
                state[plugin] = "enabled"
            elif op == "uninstall" and state[plugin] != "absent":
                await host.uninstall(plugin)
                state[plugin] = "absent"
            elif op == "reconcile":
                reconcile_step()
            shown = check(canvas, original, seen, live())
            if not all(n["available"] for n in shown["nodes"]):
                event("a node was unavailable")
        reconcile_step()  # and once at the end, after whatever the steps did
        check(canvas, original, seen, live())
    finally:
        await host.close()


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_canvases_survive_random_plugin_lifecycles(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(lifecycle(data, Path(folder)))
