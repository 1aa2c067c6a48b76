"""Permission and tenant isolation of ERP tools (spec: erp.md#risk-levels-and-permissions),
through the host and its app.

The actors live in a file the host re-reads when it changes, as in production. The ERP is
the recording Starlette backend on 127.0.0.1: it shows which tenant and actor each call
carried, and that calls the actor may not make never arrive.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.install_validation import kit_validator
from plugin_spec.tool_definition import ToolDefinition
from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.agent.models import Message, ModelTurn, ScriptedModel
from reference_host.host import Host
from reference_host.http.app import create_app
from reference_host.stream.sse_parser import SSEEvent, parse
from sample_plugins.erp_backends import serve_backends
from tests.conftest import MakeHost
from tests.security.conftest import (
    SEC_PLUGIN,
    Recorder,
    erp_tool,
    results,
    run_chat,
    the_failure,
    turn,
    write_erp_plugin,
)

ITEMS = f"/api/v1/plugins/{SEC_PLUGIN}/items"
GET, FIND, DELETE, UPDATE = (
    f"{SEC_PLUGIN}.item.get",
    f"{SEC_PLUGIN}.item.find",
    f"{SEC_PLUGIN}.item.delete",
    f"{SEC_PLUGIN}.item.update",
)
PERMISSION = {GET: "SEC_READ", FIND: "SEC_READ", DELETE: "SEC_ADMIN", UPDATE: "SEC_WRITE"}
ACTORS = {
    "admin": {"tenants": ["acme"], "permissions": ["SEC_READ", "SEC_WRITE", "SEC_ADMIN"]},
    "reader": {"tenants": ["acme"], "permissions": ["SEC_READ"]},
    "nobody": {"tenants": ["acme"], "permissions": []},
    "boss": {"tenants": ["globex"], "permissions": ["SEC_READ", "SEC_WRITE", "SEC_ADMIN"]},
    "both": {"tenants": ["acme", "globex"], "permissions": ["SEC_READ"]},
}
DISCOVERY = "/api/v1/agents/metadata/tools"


def model_name(code: str) -> str:
    return code.replace(".", "_")


@dataclass
class Erp:
    host: Host
    actors_file: Path
    hits: Recorder

    def set_actors(self, actors: dict[str, Any]) -> None:
        """Rewrite the actor file; a new mtime makes the directory re-read it."""
        self.actors_file.write_text(json.dumps({"actors": actors}), "utf-8")
        stamp = self.actors_file.stat().st_mtime + 10
        os.utime(self.actors_file, (stamp, stamp))


def item_tool(code: str, **options: Any) -> dict[str, Any]:
    """A tool on one item: its path is {ITEMS}/{id}, id its path parameter."""
    return erp_tool(code, f"{ITEMS}/{{id}}", path_params=("id",), **options)


@pytest.fixture
async def erp(tmp_path: Path, backend_url: str, hits: Recorder, make_host: MakeHost) -> Erp:
    actors_file = tmp_path / "actors.json"
    actors_file.write_text(json.dumps({"actors": ACTORS}), "utf-8")
    host = make_host(
        erp_base_url=backend_url,
        actors_file=actors_file,
        approval=ApprovalPolicy(write=Decision.ALLOW, external=Decision.DENY),
        validator=kit_validator,
    )
    plugin = write_erp_plugin(
        tmp_path / "plugin",
        item_tool(GET),
        erp_tool(FIND, ITEMS, query_params=("q",)),
        item_tool(DELETE, method="DELETE", permission="SEC_ADMIN", risk="HIGH", strict=True),
        item_tool(UPDATE, method="PUT", permission="SEC_WRITE", risk="MEDIUM"),
    )
    await host.install(plugin)
    return Erp(host, actors_file, hits)


def allowed(tenant: str, actor: str) -> set[str]:
    entry = ACTORS.get(actor)
    if entry is None or tenant not in entry["tenants"]:
        return set()
    return {code for code, permission in PERMISSION.items() if permission in entry["permissions"]}


@pytest.fixture
async def client(erp: Erp) -> AsyncIterator[tuple[httpx.AsyncClient, list[ScriptedModel]]]:
    """The app over ASGI; each chat takes the next queued model (kept for inspection)."""
    queued: list[ScriptedModel] = []
    used: list[ScriptedModel] = []

    def factory() -> ScriptedModel:
        model = queued.pop(0) if queued else ScriptedModel([ModelTurn(text="ok")])
        used.append(model)
        return model

    app = create_app(erp.host, factory)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        http.queued = queued  # type: ignore[attr-defined]
        yield http, used


async def sse_chat(
    http: httpx.AsyncClient, model: ScriptedModel, headers: Sequence[tuple[bytes, bytes]]
) -> list[tuple[str, dict[str, Any]]]:
    http.queued.append(model)  # type: ignore[attr-defined]
    response = await http.post("/api/chat", json={"message": "hi"}, headers=list(headers))
    assert response.status_code == 200
    return [
        (item.type, json.loads(item.data))
        for item in parse(response.content)
        if isinstance(item, SSEEvent)
    ]


def as_headers(tenant: str, actor: str) -> list[tuple[bytes, bytes]]:
    return [(b"X-Tenant-Id", tenant.encode()), (b"X-Actor", actor.encode())]


async def discover(
    client: tuple[httpx.AsyncClient, list], headers: list[tuple[bytes, bytes]]
) -> httpx.Response:
    """The app's answer to a tool discovery request with these headers."""
    http, _ = client
    return await http.get(DISCOVERY, headers=headers)


# --------------------------------------------------------------------------- discovery

PAIRS = [
    (tenant, actor) for tenant in ("acme", "globex", "initech") for actor in (*ACTORS, "ghost")
] + [("ACME", "admin"), ("acme", "Admin"), ("acme ", "admin"), ("acme", "admin\t")]


@pytest.mark.parametrize(("tenant", "actor"), PAIRS)
async def test_discovery_lists_exactly_the_permitted_tools(
    client: tuple[httpx.AsyncClient, list], tenant: str, actor: str
) -> None:
    response = await discover(client, as_headers(tenant, actor))
    assert response.status_code == 200
    listed = response.json()
    assert {t["toolCode"] for t in listed} == allowed(tenant, actor)
    for tool in listed:
        assert tool["requiredPermission"] == PERMISSION[tool["toolCode"]]


@pytest.mark.parametrize(
    "headers",
    [
        [],
        [(b"X-Tenant-Id", b"acme")],
        [(b"X-Actor", b"admin")],
        [(b"X-Tenant-Id", b""), (b"X-Actor", b"admin")],
        [(b"X-Tenant-Id", b"acme"), (b"X-Actor", b"")],
        [(b"X-Tenant", b"acme"), (b"Actor", b"admin")],
    ],
    ids=["none", "tenant-only", "actor-only", "empty-tenant", "empty-actor", "wrong-names"],
)
async def test_discovery_without_both_headers_is_400(
    client: tuple[httpx.AsyncClient, list], headers: list
) -> None:
    response = await discover(client, headers)
    assert response.status_code == 400
    assert response.json()["error"] == "the X-Tenant-Id and X-Actor headers are required"


@pytest.mark.parametrize(
    "headers",
    [
        as_headers("acme\r\nX-Actor: admin", "nobody"),
        as_headers("acme", "nobody\r\nX-Actor: admin"),
        as_headers("globex\nacme", "both"),
        as_headers("acme\x00", "admin"),
        [(b"X-Tenant-Id", b"globex"), (b"X-Tenant-Id", b"acme"), (b"X-Actor", b"boss")],
        [(b"X-Tenant-Id", b"acme"), (b"X-Actor", b"nobody"), (b"X-Actor", b"admin")],
    ],
    ids=["crlf-tenant", "crlf-actor", "lf-tenant", "nul-tenant", "two-tenants", "two-actors"],
)
async def test_discovery_header_tricks_grant_nothing_extra(
    client: tuple[httpx.AsyncClient, list], headers: list
) -> None:
    """Smuggled or repeated headers name one tenant and one actor, never a union."""
    response = await discover(client, headers)
    assert response.status_code in (200, 400)
    listed = {t["toolCode"] for t in response.json()} if response.status_code == 200 else set()
    tenants = [v.decode() for k, v in headers if k.lower() == b"x-tenant-id"]
    actors = [v.decode() for k, v in headers if k.lower() == b"x-actor"]
    assert listed in [allowed(t, a) for t in tenants for a in actors]


# --------------------------------------------------------------------------- chat


@pytest.mark.parametrize(("tenant", "actor"), [("acme", "reader"), ("acme", "boss"), ("", "")])
async def test_a_restricted_chat_is_offered_only_permitted_tools(
    client: tuple[httpx.AsyncClient, list], tenant: str, actor: str
) -> None:
    http, used = client
    await sse_chat(http, ScriptedModel([ModelTurn(text="ok")]), as_headers(tenant, actor))
    offered = {d.name for d in used[-1].seen[0][1]}
    assert offered == {model_name(code) for code in allowed(tenant, actor)}


@pytest.mark.parametrize(
    "name",
    [
        model_name(DELETE),
        DELETE,
        model_name(DELETE).upper(),
        model_name(DELETE) + " ",
        " " + model_name(DELETE),
        model_name(DELETE) + "\x00",
        model_name(UPDATE),
    ],
)
async def test_a_tool_the_actor_lacks_cannot_be_called_by_name(
    client: tuple[httpx.AsyncClient, list], erp: Erp, name: str
) -> None:
    http, _ = client
    model = ScriptedModel([turn(name, {"id": "1"}), ModelTurn(text="ok")])
    frames = await sse_chat(http, model, as_headers("acme", "reader"))
    (result,) = [data for kind, data in frames if kind == "tool" and data["phase"] == "result"]
    assert result["success"] is False
    assert json.loads(result["output"]) == {"success": False, "error": f"unknown tool: {name}"}
    assert erp.hits.hits == []


async def test_an_actor_of_another_tenant_gets_nothing(erp: Erp) -> None:
    model = ScriptedModel([turn(model_name(GET), {"id": "1"}), ModelTurn(text="ok")])
    events = await run_chat(erp.host, tenant="acme", actor="boss", model=model)
    assert [d.name for d in model.seen[0][1]] == []
    assert the_failure(events) == f"unknown tool: {model_name(GET)}"
    assert erp.hits.hits == []


# --------------------------------------------------------------------------- strict


class Revoking(ScriptedModel):
    """Changes the actor file (as an administrator would) before answering."""

    def __init__(self, turns: list[ModelTurn], erp: Erp, actors: dict[str, Any]) -> None:
        super().__init__(turns)
        self._erp, self._actors = erp, actors

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolDefinition]):
        if not self.seen:
            self._erp.set_actors(self._actors)
        return await super().complete(messages, tools)


@pytest.mark.parametrize(
    "change",
    [
        {**ACTORS, "admin": {"tenants": ["acme"], "permissions": ["SEC_READ"]}},
        {**ACTORS, "admin": {"tenants": ["globex"], "permissions": ["SEC_ADMIN"]}},
        {k: v for k, v in ACTORS.items() if k != "admin"},
    ],
    ids=["permission-revoked", "moved-tenant", "actor-deleted"],
)
async def test_strict_tools_recheck_at_call_time(erp: Erp, change: dict[str, Any]) -> None:
    """The snapshot was made while admin held SEC_ADMIN; the file changes before the call."""
    calls = (turn(model_name(DELETE), {"id": "7"}, "d"), turn(model_name(GET), {"id": "7"}, "g"))
    model = Revoking([*calls, ModelTurn(text="ok")], erp, change)
    events = await run_chat(erp.host, tenant="acme", actor="admin", model=model)
    assert model_name(DELETE) in [d.name for d in model.seen[0][1]]
    deleted, got = results(events)
    assert deleted == {
        "success": False,
        "error": f"admin lacks permission SEC_ADMIN for {DELETE}",
    }
    # Decision (spec: erp.md#risk-levels-and-permissions): a non-strict tool trusts the run's
    # snapshot.
    assert got["route"] == "item"
    assert [(h["method"], h["route"]) for h in erp.hits.hits] == [("GET", "item")]


async def test_strict_tool_called_in_another_tenant_context_is_refused(erp: Erp) -> None:
    """The callback itself checks the context it is called with, not the snapshot's."""
    from reference_host.tools.callbacks import CallContext, plan_and_call

    callback = erp.host.registry.snapshot().get(model_name(DELETE))
    assert callback is not None
    for tenant, actor in (("globex", "admin"), ("acme", "boss"), ("", ""), ("acme", "reader")):
        output = await plan_and_call(callback, {"id": "1"}, CallContext("c", "r", tenant, actor))
        assert output.output["success"] is False
    assert erp.hits.hits == []


# --------------------------------------------------------------------------- forwarding


async def test_each_call_forwards_its_callers_tenant_and_actor(erp: Erp) -> None:
    """Runs of different tenants at once, on one shared HTTP client: no cross-talk."""
    callers = [("acme", "admin"), ("globex", "boss"), ("acme", "reader"), ("globex", "both")]

    async def one(index: int, tenant: str, actor: str) -> None:
        calls = [turn(model_name(GET), {"id": f"{tenant}.{actor}.{n}"}, f"c{n}") for n in range(5)]
        await run_chat(erp.host, *calls, tenant=tenant, actor=actor, conversation=f"c{index}")

    await asyncio.gather(*(one(i, t, a) for i, (t, a) in enumerate(callers)))
    assert len(erp.hits.hits) == 20
    for hit in erp.hits.hits:
        tenant, actor, _ = hit["params"]["id"].split(".")
        assert (hit["tenant"], hit["actor"]) == (tenant, actor)
        names = [name.lower() for name, _ in hit["headers"]]
        assert names.count("x-tenant-id") == 1 and names.count("x-actor") == 1


@pytest.mark.parametrize(
    ("tenant", "actor"),
    [
        ("acme\r\nX-Actor: admin", "evil"),
        ("acme", "evil\r\nX-Tenant-Id: globex"),
        ("acme\nX-Evil: 1", "evil"),
        ("acme\x00", "evil"),
        ("acme", "évil"),
    ],
    ids=["crlf-tenant", "crlf-actor", "lf-tenant", "nul-tenant", "non-ascii-actor"],
)
async def test_header_injection_in_tenant_or_actor_is_refused(
    erp: Erp, client: tuple[httpx.AsyncClient, list], tenant: str, actor: str
) -> None:
    """Even when the directory (wrongly) knows such a tenant or actor, so the tool is
    offered, the call is refused before any request goes out."""
    erp.set_actors({actor: {"tenants": [tenant], "permissions": ["SEC_READ"]}})
    http, used = client
    model = ScriptedModel([turn(model_name(GET), {"id": "1"}), ModelTurn(text="ok")])
    headers = [(b"X-Tenant-Id", tenant.encode("latin-1")), (b"X-Actor", actor.encode("latin-1"))]
    frames = await sse_chat(http, model, headers)
    assert model_name(GET) in [d.name for d in used[-1].seen[0][1]]
    (result,) = [data for kind, data in frames if kind == "tool" and data["phase"] == "result"]
    error = json.loads(result["output"])["error"]
    assert error.endswith("must be a non-empty printable ASCII string without control characters")
    assert erp.hits.hits == []


def test_folded_or_bare_line_breaks_never_smuggle_a_header_over_real_http(erp: Erp) -> None:
    """Over a real socket the HTTP server either refuses the request (400) or hands the app
    header values without line breaks or NUL, and the tools offered are exactly those of
    the tenant and actor the app received. (X-Tenant-Id and X-Actor are asserted by the
    caller: the host has no authentication of its own and must sit behind a gateway that
    sets them; what matters here is that no value carries a line break further.)"""
    offered: list[set[str]] = []
    received: list[dict[str, bytes]] = []

    class Seeing(ScriptedModel):
        async def complete(self, messages, tools):  # type: ignore[no-untyped-def]
            offered.append({d.name for d in tools})
            return await super().complete(messages, tools)

    app = create_app(erp.host, lambda: Seeing([ModelTurn(text="ok")]))

    async def recording(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            received.append({k.decode().lower(): v for k, v in scope["headers"]})
        await app(scope, receive, send)

    attempts = [
        b"X-Tenant-Id: acme\r\n X-Actor: admin\r\nX-Actor: nobody\r\n",
        b"X-Tenant-Id: acme\r\n\tX-Actor: admin\r\nX-Actor: nobody\r\n",
        b"X-Tenant-Id: acme\nX-Actor: admin\r\n",
        b"X-Tenant-Id: acme\rX-Actor: admin\r\n",
        b"X-Tenant-Id: acme\x00\r\nX-Actor: admin\r\n",
    ]
    with serve_backends(recording) as base_url:  # type: ignore[arg-type]
        port = int(base_url.rsplit(":", 1)[1])
        for headers in attempts:
            body = b'{"message": "hi"}'
            request = (
                b"POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nConnection: close\r\n"
                + headers
                + b"Content-Length: %d\r\n\r\n" % len(body)
                + body
            )
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                sock.sendall(request)
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
            assert answer.startswith((b"HTTP/1.1 400", b"HTTP/1.1 200")), answer[:100]
    assert len(received) == len(offered) >= 1
    for seen, tools in zip(received, offered, strict=True):
        tenant, actor = seen.get("x-tenant-id", b""), seen.get("x-actor", b"")
        assert not set(tenant + actor) & set(b"\r\n\x00"), seen
        assert tools == {model_name(c) for c in allowed(tenant.decode(), actor.decode())}
