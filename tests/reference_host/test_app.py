"""The HTTP API and the SSE chat stream, against the real app on uvicorn (127.0.0.1 only).

Each test gets its own server in a background thread, with its own event loop and a Host
whose data dir and allowed root are under tmp_path; the chat model comes from a queue the
test fills. Streams are checked byte for byte with reference_host.stream.sse_parser's spec-exact
parser.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import aconnect_sse

from conformance.install_validation import kit_validator
from plugin_spec.providers.judge import fits
from plugin_spec.tool_definition import Effect, ToolDefinition
from reference_host.agent.approval import ApprovalPolicy
from reference_host.agent.call_commands import CallCommandModel
from reference_host.agent.models import (
    ChatModel,
    Message,
    ModelTurn,
    ScriptedModel,
    ToolCall,
    TurnModel,
)
from reference_host.http import tools as tools_routes
from reference_host.http.app import create_app
from reference_host.http.streaming import PUMP_AHEAD, sse_frames
from reference_host.stream import events
from reference_host.stream.events import Event
from reference_host.stream.sse_parser import SSEComment, SSEEvent, SSEParser, parse
from reference_host.support.loopback import serve_on_loopback
from reference_host.tools.callbacks import CallContext, CallPlan, SentAsIs, ToolResult
from tests.conftest import FIXTURE_PLUGINS, REPO, MakeHost
from tests.reference_host.served_cli import api_headers, terminal_sigint
from tests.reference_host.stream_items import ONE_APPROVED_CALL, data, kinds, stream_deciding

MARKDOWN = REPO / "sample_plugins" / "fan.summer.markdown"
EXCEL = REPO / "sample_plugins" / "fan.summer.excel"
SALES = EXCEL / "conformance" / "examples" / "excel_analyze" / "sales.xlsx"
STOP_TIMEOUT = 15.0
CONNECTED = SSEComment("connected")
KEEP_ALIVE = SSEComment("keep-alive")


class Echo(SentAsIs):
    """A stand-in built-in, so /api/tools shows a "builtin" owner without the network."""

    definition = ToolDefinition(
        "echo", "Echo the text.", {"type": "object", "properties": {"text": {"type": "string"}}}
    )
    effect = Effect.READ
    owner = "builtin"

    async def call(self, plan: CallPlan, context: CallContext) -> ToolResult:
        return ToolResult.of({"success": True, "echo": plan.arguments.values.get("text")})


@dataclass
class Server:
    """create_app on uvicorn on 127.0.0.1:<free port>, its Host made (by the make_host
    fixture) and closed in the server's own event loop (reference_host.support.loopback)."""

    make_host: MakeHost
    data: Path
    files: Path
    approval: ApprovalPolicy
    keep_alive: float
    models: deque[ChatModel | Callable[[], ChatModel]] = field(default_factory=deque)
    base_url: str = ""
    shut_down: bool = False  # set by the app's on_shutdown hook
    _serving: contextlib.AbstractContextManager[str] | None = None

    def model(self) -> ChatModel:
        """The factory the app calls per chat: the next queued model (or a callable making
        one); a plain one-line answer when the queue is empty."""
        if not self.models:
            return ScriptedModel([ModelTurn(text="hello")])
        queued = self.models.popleft()
        return queued if hasattr(queued, "complete") else queued()

    def start(self) -> None:
        self._serving = serve_on_loopback(
            make_app=self._app, lifespan="on", name="test server", stop_timeout=STOP_TIMEOUT
        )
        self.base_url = self._serving.__enter__()

    def stop(self) -> None:
        """Stop it; a failure of the server thread (the Host's close, say) is raised."""
        if self._serving is not None:
            serving, self._serving = self._serving, None
            serving.__exit__(None, None, None)

    async def _shutdown_hook(self) -> None:
        self.shut_down = True

    @contextlib.asynccontextmanager
    async def _app(self) -> AsyncIterator[Any]:
        host = self.make_host(
            data_dir=self.data,
            allowed_roots=(self.files,),
            approval=self.approval,
            validator=kit_validator,
            builtins=[Echo()],
        )
        try:
            yield create_app(
                host, self.model, keep_alive=self.keep_alive, on_shutdown=[self._shutdown_hook]
            )
        finally:
            await host.close()


@pytest.fixture
def serve(tmp_path: Path, make_host: MakeHost) -> Iterator[Callable[..., Server]]:
    """Start servers (ask-approval and a 15 s keep-alive unless told otherwise); all are
    stopped at teardown (each closes its host; make_host's own close, later, finds it
    closed)."""
    started: list[Server] = []

    def start(
        *, approval: ApprovalPolicy | None = None, keep_alive: float = 15.0, name: str = "a"
    ) -> Server:
        files = tmp_path / "files"
        files.mkdir(exist_ok=True)
        server = Server(
            make_host,
            tmp_path / f"host-{name}",
            files,
            approval or ApprovalPolicy(timeout=10),
            keep_alive,
        )
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
    for server in started:
        assert server.shut_down, "the app's on_shutdown hook did not run"


@pytest.fixture
def server(serve: Callable[..., Server]) -> Server:
    return serve()


@pytest.fixture
async def client(server: Server) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=20) as client:
        yield client


def call(name: str, arguments: dict[str, Any], call_id: str = "call-1") -> ModelTurn:
    return ModelTurn(tool_calls=(ToolCall(call_id, name, json.dumps(arguments)),))


async def install(client: httpx.AsyncClient, path: Path) -> dict[str, Any]:
    response = await client.post("/api/plugins", json={"path": str(path)})
    assert response.status_code in (200, 201), response.text
    return response.json()


async def chat(client: httpx.AsyncClient, message: str = "hi", **body: Any) -> httpx.Response:
    """The whole chat stream (read to its end)."""
    response = await client.post("/api/chat", json={"message": message, **body})
    assert response.status_code == 200, response.text
    return response


# -- plugins and tools -------------------------------------------------------------------


async def test_plugin_lifecycle_over_http(client: httpx.AsyncClient) -> None:
    assert (await client.get("/api/plugins")).json() == []
    response = await client.post("/api/plugins", json={"path": str(MARKDOWN)})
    assert response.status_code == 201
    assert response.json() == {
        "id": "fan.summer.markdown",
        "name": "Markdown Editor",
        "version": "1.0.0",
        "profile": "fengyu-v2",
        "enabled": True,
        "supportsAi": True,
        "tools": ["markdown_render", "markdown_outline"],
    }
    (listed,) = (await client.get("/api/plugins")).json()
    assert listed["supportsAi"] is True and listed["enabled"] is True

    upgrade = await client.post("/api/plugins", json={"path": str(MARKDOWN)})
    assert upgrade.status_code == 200 and len((await client.get("/api/plugins")).json()) == 1

    names = [t["name"] for t in (await client.get("/api/tools")).json()]
    assert {"markdown_render", "markdown_outline", "echo"} <= set(names)

    disabled = await client.post("/api/plugins/fan.summer.markdown/disable")
    assert disabled.status_code == 200 and disabled.json()["enabled"] is False
    assert [t["name"] for t in (await client.get("/api/tools")).json()] == ["echo"]

    enabled = await client.post("/api/plugins/fan.summer.markdown/enable")
    assert enabled.status_code == 200 and enabled.json()["enabled"] is True
    assert "markdown_render" in [t["name"] for t in (await client.get("/api/tools")).json()]

    deleted = await client.delete("/api/plugins/fan.summer.markdown")
    assert deleted.status_code == 204 and deleted.content == b""
    assert (await client.get("/api/plugins")).json() == []
    assert [t["name"] for t in (await client.get("/api/tools")).json()] == ["echo"]


async def test_a_downgrade_over_http_needs_asking(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    older = tmp_path / "older"
    shutil.copytree(MARKDOWN, older)
    manifest = json.loads((older / "manifest.json").read_text())
    (older / "manifest.json").write_text(json.dumps({**manifest, "version": "0.9.0"}))
    await install(client, MARKDOWN)
    refused = await client.post("/api/plugins", json={"path": str(older)})
    assert refused.status_code == 409
    assert "0.9.0 is older than the installed 1.0.0" in refused.text
    asked = await client.post("/api/plugins", json={"path": str(older), "downgrade": True})
    assert asked.status_code == 200 and asked.json()["version"] == "0.9.0"


async def test_tools_show_definition_effect_and_owner(client: httpx.AsyncClient) -> None:
    await install(client, EXCEL)
    tools = {t["name"]: t for t in (await client.get("/api/tools")).json()}
    assert tools["echo"] == {
        "name": "echo",
        "description": "Echo the text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "effect": "read",
        "owner": "builtin",
    }
    execute = tools["excel_execute"]
    assert set(execute) == {"name", "description", "inputSchema", "effect", "owner"}
    assert (execute["effect"], execute["owner"]) == ("write", "fan.summer.excel")
    assert execute["inputSchema"]["required"] == ["outputDir"]
    assert tools["excel_analyze"]["effect"] == "read"


async def test_provider_fit_says_which_providers_take_the_snapshot(
    client: httpx.AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GET /api/tools/providers judges the snapshot as one request, once per snapshot; a tool
    with a node Gemini cannot take keeps Gemini out, names the rule and leaves OpenAI fitting."""
    judged: list[int] = []

    def counted(tools: Any) -> Any:
        judged.append(len(tools))
        return fits(tools)

    monkeypatch.setattr(tools_routes, "fits", counted)
    await install(client, MARKDOWN)
    fit = (await client.get("/api/tools/providers")).json()
    assert (await client.get("/api/tools/providers")).json() == fit
    assert judged == [3]
    assert fit["tools"] == 3  # echo and the two Markdown tools
    assert {p: v["fits"] for p, v in fit["providers"].items()} == {
        "openai": True,
        "anthropic": True,
        "gemini": True,
    }

    plugin = shutil.copytree(MARKDOWN, tmp_path / "untyped-plugin")
    manifest = json.loads((plugin / "manifest.json").read_text("utf-8"))
    manifest["id"] = "fan.summer.markdown-untyped"
    render = manifest["rpc"]["methods"]["render"]["inputSchema"]
    render["properties"]["flavour"] = {"description": "any value"}
    manifest["aiTools"] = [{**manifest["aiTools"][0], "name": "render_untyped"}]
    # i18n keys must name a declared tool (FY-MAN-025): the translation follows the rename.
    translations = manifest["i18n"]["zh"]["aiTools"]
    translations["render_untyped"] = translations.pop("markdown_render")
    (plugin / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    await install(client, plugin)

    providers = (await client.get("/api/tools/providers")).json()["providers"]
    gemini = providers["gemini"]
    assert gemini["fits"] is False and gemini["set"] == []
    assert list(gemini["rejected"]) == ["render_untyped"]
    (reason,) = gemini["rejected"]["render_untyped"]
    assert (
        reason.startswith("GEMINI-TYPED: a schema without type") and "/properties/flavour" in reason
    )
    assert providers["openai"]["fits"] is True


async def test_rejected_install_is_400_with_the_kits_problems(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    response = await client.post(
        "/api/plugins", json={"path": str(FIXTURE_PLUGINS / "FY-MAN-004-dangling-method")}
    )
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"error", "problems"}
    assert "does not pass validation" in body["error"]
    assert any(p.startswith("FY-MAN-004 ") for p in body["problems"])
    assert (await client.get("/api/plugins")).json() == []

    missing = await client.post("/api/plugins", json={"path": str(tmp_path / "nowhere")})
    assert missing.status_code == 400 and "is not a folder" in missing.json()["error"]


async def test_tool_name_clash_is_409(client: httpx.AsyncClient, tmp_path: Path) -> None:
    await install(client, MARKDOWN)
    copy = tmp_path / "copy"
    shutil.copytree(MARKDOWN, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["id"] = "fan.summer.markdown2"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    response = await client.post("/api/plugins", json={"path": str(copy)})
    assert response.status_code == 409
    assert response.json()["problems"][0] == (
        "tool name 'markdown_render' is already offered by plugin fan.summer.markdown"
    )
    # installed while the original is disabled, enabling it clashes the other way round
    await client.post("/api/plugins/fan.summer.markdown/disable")
    await install(client, copy)
    clash = await client.post("/api/plugins/fan.summer.markdown/enable")
    assert clash.status_code == 409 and clash.json()["problems"]


async def test_unknown_plugin_is_404(client: httpx.AsyncClient) -> None:
    for method, url in [
        ("POST", "/api/plugins/no.such/enable"),
        ("POST", "/api/plugins/no.such/disable"),
        ("DELETE", "/api/plugins/no.such"),
    ]:
        response = await client.request(method, url)
        assert response.status_code == 404, url
        assert response.json() == {"error": "no plugin 'no.such' is installed", "problems": []}


async def test_errors_are_json_never_a_traceback(client: httpx.AsyncClient) -> None:
    bad_json = await client.post(
        "/api/plugins", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert bad_json.status_code == 400
    assert bad_json.json()["problems"][0].startswith("the body is not valid JSON: ")
    no_body = await client.post("/api/chat")
    assert no_body.status_code == 400
    assert no_body.json()["problems"] == ["the body is missing: a JSON object is expected"]
    not_object = await client.post("/api/chat", json=["hi"])
    assert not_object.status_code == 400
    assert not_object.json()["problems"][0].startswith("the body must be a JSON object")
    no_path = await client.post("/api/plugins", json={})
    assert no_path.status_code == 400
    assert no_path.json() == {"error": "invalid request", "problems": ["path: Field required"]}
    extra = await client.post("/api/chat", json={"message": "x", "stream": True})
    assert extra.status_code == 400 and extra.json()["problems"][0].startswith("stream:")
    unknown = await client.get("/api/nothing")
    assert unknown.status_code == 404 and unknown.json() == {"error": "Not Found", "problems": []}
    wrong_method = await client.put("/api/plugins")
    assert wrong_method.status_code == 405 and wrong_method.json()["error"]
    for response in (bad_json, no_body, not_object, no_path, extra, unknown, wrong_method):
        assert "Traceback" not in response.text


# -- FileRef grants ----------------------------------------------------------------------


async def test_grants(client: httpx.AsyncClient, server: Server, tmp_path: Path) -> None:
    await install(client, MARKDOWN)
    doc = server.files / "notes.md"
    doc.write_text("# One\n")
    url = "/api/conversations/c1/grants"
    response = await client.post(
        url, json={"pluginId": "fan.summer.markdown", "path": str(doc), "access": "read"}
    )
    assert response.status_code == 201
    ref = response.json()
    assert ref["id"].startswith("ref_")
    assert {k: v for k, v in ref.items() if k != "id"} == {
        "name": "notes.md",
        "kind": "file",
        "access": "read",
        "size": 6,
    }
    assert (await client.get(url)).json() == [
        {"pluginId": "fan.summer.markdown", "ref": ref, "path": str(doc.resolve())}
    ]
    assert (await client.get("/api/conversations/other/grants")).json() == []

    outside = tmp_path / "secret.txt"
    outside.write_text("x")
    refused = await client.post(
        url, json={"pluginId": "fan.summer.markdown", "path": str(outside), "access": "read"}
    )
    assert refused.status_code == 400
    assert refused.json() == {
        "error": f"{outside} is outside the folders this host may share",
        "problems": [],
    }
    bad_access = await client.post(
        url, json={"pluginId": "fan.summer.markdown", "path": str(doc), "access": "all"}
    )
    assert bad_access.status_code == 400 and "access must be one of" in bad_access.json()["error"]
    no_plugin = await client.post(
        url, json={"pluginId": "no.such", "path": str(doc), "access": "read"}
    )
    assert no_plugin.status_code == 404
    assert len((await client.get(url)).json()) == 1


# -- the chat stream ---------------------------------------------------------------------


async def test_chat_stream_with_a_tool_call(client: httpx.AsyncClient, server: Server) -> None:
    await install(client, MARKDOWN)
    server.models.append(
        ScriptedModel([call("markdown_render", {"markdown": "# Hi"}), ModelTurn(text="Done.")])
    )
    response = await chat(client, "render", conversationId="c1")
    assert response.content.startswith(b": connected\n\n")
    items = parse(response.content)
    assert kinds(items) == [":connected", "tool.call", "tool.result", "token", "done"]
    call_event, result_event = data(items[1]), data(items[2])
    assert call_event == {
        "phase": "call",
        "id": "call-1",
        "name": "markdown_render",
        "arguments": '{"markdown": "# Hi"}',
    }
    assert result_event["id"] == call_event["id"] and result_event["success"] is True
    assert "<h1>Hi</h1>" in json.loads(result_event["output"])["html"]
    assert data(items[3]) == {"text": "Done."}
    assert data(items[-1])["text"] == "Done."
    # the wire format is exactly Event.encode(): one data line, LF line ends
    assert response.content.endswith(
        b"event: done\ndata: " + items[-1].data.encode() + b"\n\n"  # type: ignore[union-attr]
    )
    assert response.headers["X-Conversation-Id"] == "c1"


async def test_stream_headers_are_exact(client: httpx.AsyncClient) -> None:
    response = await chat(client)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["X-Accel-Buffering"] == "no"
    assert "Content-Length" not in response.headers
    assert response.headers["X-Conversation-Id"].startswith("conv_")
    assert kinds(parse(response.content)) == [":connected", "token", "done"]


async def test_chat_with_httpx_sse(client: httpx.AsyncClient, server: Server) -> None:
    server.models.append(ScriptedModel([call("echo", {"text": "x"}), ModelTurn(text="ok")]))
    async with aconnect_sse(client, "POST", "/api/chat", json={"message": "hi"}) as source:
        seen = [(sse.event, sse.json()) async for sse in source.aiter_sse()]
    assert [event for event, _ in seen] == ["tool", "tool", "token", "done"]
    assert seen[0][1]["id"] == seen[1][1]["id"] == "call-1"
    assert json.loads(seen[1][1]["output"]) == {"success": True, "echo": "x"}
    # httpx-sse has no way to show `: connected`: comments never reach the caller.


async def test_route_b_grant_reaches_the_worker_through_http(
    client: httpx.AsyncClient, server: Server
) -> None:
    await install(client, MARKDOWN)
    doc = server.files / "guide.md"
    doc.write_text("# One\n## Two\n")
    await client.post(
        "/api/conversations/c9/grants",
        json={"pluginId": "fan.summer.markdown", "path": str(doc), "access": "read"},
    )
    server.models.append(ScriptedModel([call("markdown_outline", {}), ModelTurn(text="ok")]))
    items = parse((await chat(client, conversationId="c9")).content)
    assert kinds(items)[1:4] == ["tool.call", "tool.filled", "tool.result"]
    assert data(items[2])["injected"] == ["filePath"]  # what the host filled in, shown
    output = json.loads(data(items[3])["output"])
    assert output["success"] is True and [h["text"] for h in output["headings"]] == ["One", "Two"]


async def excel_with_grants(client: httpx.AsyncClient, server: Server, conversation: str) -> Path:
    """The Excel sample installed, and granted to conversation over HTTP: its example workbook
    (read) and an empty `out` folder (write), which is returned."""
    await install(client, EXCEL)
    workbook = server.files / "sales.xlsx"
    shutil.copy(SALES, workbook)
    out = server.files / "out"
    out.mkdir()
    for path, access in [(workbook, "read"), (out, "write")]:
        granted = await client.post(
            f"/api/conversations/{conversation}/grants",
            json={"pluginId": "fan.summer.excel", "path": str(path), "access": access},
        )
        assert granted.status_code == 201
    return out


async def test_approval_round_trip_over_http(client: httpx.AsyncClient, server: Server) -> None:
    """Excel's excel_execute is a write tool: with policy ask the stream stops at an approval
    event until the decision is posted; then the split really writes its files."""
    out = await excel_with_grants(client, server, "cx")
    server.models.append(
        ScriptedModel(
            [
                call("excel_analyze", {}, "c-analyze"),
                call("excel_configure", {"mode": "BY_SHEET"}, "c-configure"),
                call("excel_execute", {}, "c-execute"),
                ModelTurn(text="split"),
            ]
        )
    )
    body = {"message": "split it", "conversationId": "cx"}
    streamed = await stream_deciding(client, "/api/chat", body)
    items, decisions = streamed.items, streamed.decisions
    assert kinds(items) == [
        ":connected",
        *["tool.call", "tool.filled", "tool.result"],  # the workbook, filled in
        *["tool.call", "tool.result"],
        "tool.call",
        "approval",
        "tool.result",
        "token",
        "done",
    ]
    approval = data(items[7])
    assert approval["callId"] == "c-execute" and approval["name"] == "excel_execute"
    assert approval["effect"] == "write"
    assert [d.status_code for d in decisions] == [200]
    assert decisions[0].json() == {"id": approval["id"], "approved": True}
    result = data(items[8])
    assert result["id"] == "c-execute" and result["success"] is True, result
    written = sorted(p.name for p in out.iterdir())
    assert written and all(name.endswith(".xlsx") for name in written)
    assert sorted(json.loads(result["output"])["files"]["names"]) == written
    again = await client.post(f"/api/approvals/{approval['id']}", json={"approved": True})
    assert again.status_code == 404


async def test_call_commands_show_the_injected_folder_in_the_approval(
    client: httpx.AsyncClient, server: Server
) -> None:
    """The default scripted model over HTTP, as the curl transcript of
    docs/guide/reference-host.md uses it: `/call` lines run tools, the approval names the
    folder route B put in, the reply lists results."""
    out = await excel_with_grants(client, server, "cc")
    server.models.extend([CallCommandModel(), CallCommandModel()])
    message = '/call excel_analyze {}\n/call excel_configure {"mode": "BY_SHEET"}'
    prepared = parse((await chat(client, message, conversationId="cc")).content)
    assert kinds(prepared) == [
        ":connected",
        *["tool.call", "tool.filled", "tool.result", "tool.call", "tool.result"],
        "token",
        "done",
    ]
    assert all(data(item)["success"] for item in (prepared[3], prepared[5]))
    assert data(prepared[-1])["text"].startswith("excel_analyze: Analyzed 'sales.xlsx'")
    body = {"message": "/call excel_execute {}", "conversationId": "cc"}
    streamed = await stream_deciding(client, "/api/chat", body)
    assert all(decision.status_code == 200 for decision in streamed.decisions)
    items = streamed.items
    assert kinds(items) == ONE_APPROVED_CALL
    approval = data(items[2])
    assert approval["injected"] == ["outputDir"]
    assert [(f["parameter"], f["path"], f["injected"]) for f in approval["files"]] == [
        ("outputDir", str(out.resolve()), True)
    ]
    assert json.loads(approval["arguments"])["outputDir"]["id"] == approval["files"][0]["id"]
    assert data(items[3])["success"] is True
    written = sorted(p.name for p in out.iterdir())
    assert written and data(items[-1])["text"].startswith("excel_execute: Wrote 3 file(s)")


async def test_denied_approval_and_unknown_approval(
    client: httpx.AsyncClient, server: Server
) -> None:
    await install(client, EXCEL)
    server.models.append(ScriptedModel([call("excel_execute", {"outputDir": "/tmp"})]))
    streamed = await stream_deciding(client, "/api/chat", {"message": "x"}, approved=False)
    assert all(decision.status_code == 200 for decision in streamed.decisions)
    outputs = [
        json.loads(data(item)["output"])
        for item in streamed.items
        if isinstance(item, SSEEvent) and data(item).get("phase") == "result"
    ]
    assert outputs == [{"success": False, "error": "the call to excel_execute was not approved"}]
    unknown = await client.post("/api/approvals/approval_nope", json={"approved": True})
    assert unknown.status_code == 404
    assert unknown.json() == {"error": "no pending approval 'approval_nope'", "problems": []}
    not_bool = await client.post("/api/approvals/approval_nope", json={"approved": "maybe"})
    assert not_bool.status_code == 400


class Raising(TurnModel):
    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolDefinition]):
        raise RuntimeError("the model blew up")


async def test_a_model_that_raises_ends_with_an_error_frame(
    client: httpx.AsyncClient, server: Server
) -> None:
    server.models.append(Raising())
    response = await chat(client)
    items = parse(response.content)
    assert kinds(items) == [":connected", "error"]
    assert data(items[-1]) == {"message": "internal error: RuntimeError: the model blew up"}
    assert response.content.endswith(b"\n\n")


async def test_a_failing_model_factory_ends_with_an_error_frame(
    client: httpx.AsyncClient, server: Server
) -> None:
    def broken() -> ChatModel:
        raise ValueError("no model configured")

    server.models.append(broken)
    items = parse((await chat(client)).content)
    assert kinds(items) == [":connected", "error"]
    assert data(items[-1]) == {"message": "internal error: ValueError: no model configured"}


class Slow(TurnModel):
    """Answers after a pause (in the server's loop), first with a tool call."""

    def __init__(self, pause: float) -> None:
        self.pause = pause
        self.turns = [call("echo", {"text": "a"}), ModelTurn(text="late")]

    async def complete(self, messages, tools) -> ModelTurn:
        await asyncio.sleep(self.pause)
        return self.turns.pop(0)


async def test_keep_alive_comments_while_the_model_is_slow(serve: Callable[..., Server]) -> None:
    server = serve(keep_alive=0.05)
    server.models.append(Slow(0.4))
    async with httpx.AsyncClient(base_url=server.base_url, timeout=20) as client:
        items = parse((await chat(client)).content)
    names = kinds(items)
    assert names[0] == ":connected" and names[-1] == "done"
    assert [n for n in names if n != ":keep-alive"] == [
        ":connected",
        "tool.call",
        "tool.result",
        "token",
        "done",
    ]
    # a pause of 0.4 s at 0.05 s: keep-alives before the call and again before the reply
    first_call = names.index("tool.call")
    assert names[1:first_call].count(":keep-alive") >= 3
    assert names[names.index("tool.result") : names.index("token")].count(":keep-alive") >= 3
    assert KEEP_ALIVE in items


async def test_no_keep_alive_when_events_keep_coming(client: httpx.AsyncClient) -> None:
    assert KEEP_ALIVE not in parse((await chat(client)).content)


class Blocking(TurnModel):
    """Waits forever; tells the test (across threads) that it started and was cancelled."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()

    async def complete(self, messages, tools) -> ModelTurn:
        self.started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return ModelTurn(text="never")


async def test_client_disconnect_stops_the_run(client: httpx.AsyncClient, server: Server) -> None:
    model = Blocking()
    server.models.append(model)
    async with client.stream("POST", "/api/chat", json={"message": "x"}) as response:
        first = await anext(response.aiter_bytes())
        assert first.startswith(b": connected\n\n")
        assert await asyncio.to_thread(model.started.wait, 5)
    # leaving the block closed the connection mid-stream
    assert await asyncio.to_thread(model.cancelled.wait, 5)


async def test_an_approval_pending_at_disconnect_is_withdrawn(
    client: httpx.AsyncClient, server: Server
) -> None:
    await install(client, EXCEL)
    server.models.append(ScriptedModel([call("excel_execute", {"outputDir": "/tmp"})]))
    parser = SSEParser()
    approval_id = ""
    async with client.stream("POST", "/api/chat", json={"message": "x"}) as response:
        async for chunk in response.aiter_bytes():
            found = [i for i in parser.feed(chunk) if isinstance(i, SSEEvent)]
            if any(i.type == "approval" for i in found):
                approval_id = next(data(i)["id"] for i in found if i.type == "approval")
                break
    assert approval_id
    for _ in range(100):
        late = await client.post(f"/api/approvals/{approval_id}", json={"approved": True})
        if late.status_code == 404:
            break
        await asyncio.sleep(0.05)
    assert late.status_code == 404


# -- sse_frames on its own ---------------------------------------------------------------


async def collect(run: AsyncIterator[Event], keep_alive: float = 15.0) -> bytes:
    return b"".join([frame async for frame in sse_frames(run, keep_alive=keep_alive)])


async def test_frames_end_at_the_first_terminal_event() -> None:
    async def run() -> AsyncIterator[Event]:
        yield events.token("a")
        yield events.error("stop")
        yield events.token("never")

    assert await collect(run()) == (
        b": connected\n\n"
        b'event: token\ndata: {"text":"a"}\n\n'
        b'event: error\ndata: {"message":"stop"}\n\n'
    )


async def test_a_run_without_a_result_gets_an_error_frame() -> None:
    async def run() -> AsyncIterator[Event]:
        yield events.token("a")

    items = parse(await collect(run()))
    assert kinds(items) == [":connected", "token", "error"]
    assert data(items[-1]) == {"message": "the run ended without a result"}


async def test_an_exception_mid_run_is_the_last_frame() -> None:
    async def run() -> AsyncIterator[Event]:
        yield events.token("a")
        raise KeyError("k")

    items = parse(await collect(run()))
    assert kinds(items)[-1] == "error"
    assert data(items[-1]) == {"message": "internal error: KeyError: 'k'"}


async def test_a_run_cancelled_from_inside_ends_with_an_error_frame() -> None:
    async def run() -> AsyncIterator[Event]:
        yield events.token("a")
        raise asyncio.CancelledError

    items = parse(await collect(run()))
    assert kinds(items) == [":connected", "token", "error"]
    assert data(items[-1]) == {"message": "the run was cancelled"}


async def test_closing_the_frames_closes_the_run() -> None:
    closed = asyncio.Event()

    async def run() -> AsyncIterator[Event]:
        try:
            yield events.token("a")
            await asyncio.sleep(3600)
            yield events.token("never")
        finally:
            closed.set()

    frames = sse_frames(run(), keep_alive=0.01)
    assert await anext(frames) == b": connected\n\n"
    assert (await anext(frames)).startswith(b"event: token")
    assert await anext(frames) == b": keep-alive\n\n"
    await frames.aclose()
    assert closed.is_set()


async def test_a_burst_of_events_goes_out_in_few_chunks_and_in_order() -> None:
    async def run() -> AsyncIterator[Event]:
        for i in range(100):
            yield events.token(str(i))
        yield events.done("", 0, 0.0)

    chunks = [chunk async for chunk in sse_frames(run(), keep_alive=15.0)]
    items = parse(b"".join(chunks))
    tokens = [data(i)["text"] for i in items if isinstance(i, SSEEvent) and i.type == "token"]
    assert tokens == [str(i) for i in range(100)]
    assert kinds(items)[-1] == "done"
    assert len(chunks) < 20  # ready events share a chunk (one write), not one each


async def test_a_stream_not_being_read_holds_its_run_back() -> None:
    produced = 0

    async def run() -> AsyncIterator[Event]:
        nonlocal produced
        for i in range(1000):
            produced += 1
            yield events.token(str(i))
        yield events.done("", 0, 0.0)

    frames = sse_frames(run(), keep_alive=15.0)
    assert await anext(frames) == b": connected\n\n"
    first = await anext(frames)
    await asyncio.sleep(0.05)  # the client stops reading for a while
    assert produced <= first.count(b"event: token") + PUMP_AHEAD + 1
    await frames.aclose()


async def test_keep_alive_must_be_positive(tmp_path: Path, make_host: MakeHost) -> None:
    host = make_host(data_dir=tmp_path / "h")
    with pytest.raises(ValueError):
        create_app(host, lambda: ScriptedModel([]), keep_alive=0)


# -- the command line --------------------------------------------------------------------


def test_cli_help() -> None:
    for argv in (["--help"], ["serve", "--help"]):
        done = subprocess.run(
            [sys.executable, "-m", "reference_host", *argv],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("usage: python -m reference_host")
    assert "--openai-base-url" in done.stdout and "--allow-root" in done.stdout


def test_cli_serves_and_reports_rejected_plugins(tmp_path: Path) -> None:
    """The real command: one line per rejected plugin, the rest served on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [
        sys.executable,
        "-m",
        "reference_host",
        "serve",
        "--plugins",
        str(MARKDOWN),
        str(FIXTURE_PLUGINS / "FY-MAN-004-dangling-method"),
        "--port",
        str(port),
        "--data-dir",
        str(tmp_path / "data"),
        "--log-level",
        "warning",
    ]
    with terminal_sigint():
        process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO
        )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.communicate()
            try:
                headers = api_headers(tmp_path / "data")  # written before it listens
                plugins = httpx.get(f"{base}/api/plugins", headers=headers, timeout=2).json()
                break
            except (httpx.TransportError, FileNotFoundError):
                assert time.monotonic() < deadline, "the CLI server did not come up"
                time.sleep(0.1)
        assert [p["id"] for p in plugins] == ["fan.summer.markdown"]
        stream = httpx.post(f"{base}/api/chat", json={"message": "hi"}, headers=headers, timeout=10)
        assert kinds(parse(stream.content)) == [":connected", "token", "done"]
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    # uvicorn shuts down cleanly, then re-raises the SIGINT it caught: Ctrl-C's usual 130
    assert process.returncode == 130, err
    installed, started, console = out.splitlines()
    assert installed == "installed fan.summer.markdown 1.0.0 (markdown_render, markdown_outline)"
    assert started.startswith(f"reference host listening on {base}/ ")
    assert console.startswith(f"dev console: {base}/#token=")
    (rejected,) = [line for line in err.splitlines() if line.startswith("rejected ")]
    assert rejected.startswith(
        f"rejected {FIXTURE_PLUGINS / 'FY-MAN-004-dangling-method'}: "
        "FY-MAN-004-dangling-method does not pass validation: FY-MAN-004 "
    )
    assert "Traceback" not in err


def test_cli_plugin_folders(tmp_path: Path) -> None:
    from reference_host.__main__ import plugin_folders

    shelf = tmp_path / "shelf"
    for name in ("b-fengyu", "a-erp", "not-a-plugin"):
        (shelf / name).mkdir(parents=True)
    (shelf / "b-fengyu" / "manifest.json").write_text("{}")
    (shelf / "a-erp" / "metadata" / "tool").mkdir(parents=True)
    (shelf / "stray.txt").write_text("")
    assert plugin_folders([str(shelf)]) == [shelf / "a-erp", shelf / "b-fengyu"]
    assert plugin_folders([str(MARKDOWN), str(tmp_path / "missing"), str(shelf / "a-erp")]) == [
        MARKDOWN,
        tmp_path / "missing",
        shelf / "a-erp",
    ]
    # a folder with no plugin inside is passed on as it is, to be rejected by the install
    assert plugin_folders([str(shelf / "not-a-plugin")]) == [shelf / "not-a-plugin"]
