"""Shared pieces of the security suite: hermetic hosts, a recording ERP backend, helpers.

Everything a test touches lives under its tmp_path: the host's data folder, the allowed
roots, and copies of the sample plugins it installs. Servers bind 127.0.0.1 only and stop
when their fixture ends.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from conformance.install_validation import kit_validator
from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.agent.models import ModelTurn, ScriptedModel, ToolCall
from reference_host.host import Host
from reference_host.stream.events import Event
from sample_plugins.erp_backends import serve_backends
from tests.conftest import REPO, MakeHost

SAMPLES = REPO / "sample_plugins"
MARKDOWN = SAMPLES / "fan.summer.markdown"
EXCEL = SAMPLES / "fan.summer.excel"
SEC_PLUGIN = "sec-plugin"


# --------------------------------------------------------------------------- agent runs


def turn(name: str, arguments: Any, call_id: str = "call-1") -> ModelTurn:
    """One model turn calling one tool; arguments is a JSON value or raw argument text."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ModelTurn(tool_calls=(ToolCall(call_id, name, text),))


async def run_chat(
    host: Host,
    *turns: ModelTurn,
    conversation: str = "c1",
    tenant: str = "",
    actor: str = "",
    model: ScriptedModel | None = None,
) -> list[Event]:
    model = model or ScriptedModel([*turns, ModelTurn(text="done")])
    return [
        event
        async for event in host.chat(
            "hi", model=model, conversation_id=conversation, tenant=tenant, actor=actor
        )
    ]


def results(events: list[Event]) -> list[Any]:
    """The parsed output of every tool result event, in order."""
    return [
        json.loads(e.data["output"])
        for e in events
        if e.type == "tool" and e.data.get("phase") == "result"
    ]


def the_failure(events: list[Event]) -> str:
    """The error of the only tool result, which must be the failure envelope."""
    (output,) = results(events)
    assert isinstance(output, dict) and output.get("success") is False, output
    assert set(output) == {"success", "error"}, output
    assert events[-1].type == "done", events[-1]
    return output["error"]


def strings_in(value: Any) -> Iterator[str]:
    """Every string in a JSON-like value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings_in(key)
            yield from strings_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings_in(item)


def copy_sample(source: Path, tmp_path: Path) -> Path:
    """A private copy of a sample plugin under tmp_path (installs never read the repo)."""
    target = tmp_path / "plugin-sources" / source.name
    shutil.copytree(source, target)
    return target


@dataclass
class Dispatched:
    """What the process manager sent to workers: (plugin, method, params) per call."""

    calls: list[tuple[str, str, Any]] = field(default_factory=list)

    def __call__(self, plugin_id: str, method: str, params: Any) -> None:
        self.calls.append((plugin_id, method, json.loads(json.dumps(params))))

    def assert_never_sent(self, *forbidden: str) -> None:
        for plugin_id, method, params in self.calls:
            for text in strings_in(params):
                for bad in forbidden:
                    assert bad not in text, f"{plugin_id}.{method} received {text!r}"


def watched_host(
    make_host: MakeHost, files: Path, write: Decision = Decision.ALLOW
) -> tuple[Host, Dispatched]:
    """A host that validates installs with the kit, has files as its one allowed root, decides
    write calls by `write` and denies external ones; and what its workers are sent."""
    host = make_host(
        allowed_roots=(files,),
        approval=ApprovalPolicy(write=write, external=Decision.DENY),
        validator=kit_validator,
    )
    sent = Dispatched()
    host.manager.observers.append(sent)
    return host, sent


# --------------------------------------------------------------------------- ERP plugins


def erp_tool(
    code: str,
    path: str,
    *,
    method: str = "GET",
    path_params: tuple[str, ...] = (),
    query_params: tuple[str, ...] = (),
    permission: str = "SEC_READ",
    risk: str = "LOW",
    strict: bool = False,
    application: str = SEC_PLUGIN,
) -> dict[str, Any]:
    """A tool file that passes the kit, apart from what a test changes in it."""
    properties = {
        name: {"type": "string", "description": f"The {name}."}
        for name in (*path_params, *query_params)
    }
    config: dict[str, Any] = {"path": path, "method": method}
    if path_params:
        config["pathParams"] = list(path_params)
    if query_params:
        config["queryParams"] = list(query_params)
    return {
        "toolCode": code,
        "name": code,
        "description": f"Security test tool {code}.",
        "inputSchema": {
            "type": "object",
            "properties": properties,
            "required": list(path_params),
        },
        "handlerType": "REST",
        "handlerConfig": config,
        "requiredPermission": permission,
        "applicationCode": application,
        "riskLevel": risk,
        "strictPermissionCheck": strict,
    }


def write_erp_plugin(root: Path, *tools: dict[str, Any]) -> Path:
    folder = root / "metadata" / "tool"
    folder.mkdir(parents=True, exist_ok=True)
    for tool in tools:
        (folder / f"{tool['toolCode']}.json").write_text(json.dumps(tool, indent=2), "utf-8")
    return root


# --------------------------------------------------------------------------- ERP backend


@dataclass
class Recorder:
    """Every request the backend saw, by the route that answered it."""

    hits: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, route: str, request: Request) -> dict[str, Any]:
        hit = {
            "route": route,
            "method": request.method,
            "rawPath": request.scope["raw_path"].decode("latin-1"),
            "path": request.scope["path"],
            "params": dict(request.path_params),
            "query": request.query_params.multi_items(),
            "tenant": request.headers.get("x-tenant-id"),
            "actor": request.headers.get("x-actor"),
            "headers": [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw],
        }
        with self.lock:
            self.hits.append(hit)
        return hit

    def routes(self) -> list[str]:
        with self.lock:
            return [hit["route"] for hit in self.hits]

    def clear(self) -> None:
        with self.lock:
            self.hits.clear()


def recording_app(recorder: Recorder) -> Starlette:
    """An ERP with one plugin's item routes, an admin area outside the namespace, and a
    catch-all: the admin routes and the catch-all must never see a tool call."""

    def answer(route: str):
        async def endpoint(request: Request) -> Response:
            hit = recorder.add(route, request)
            status = 200 if route in ("item", "items") else 404
            return JSONResponse({"route": route, "seen": hit}, status_code=status)

        return endpoint

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    prefix = f"/api/v1/plugins/{SEC_PLUGIN}"
    return Starlette(
        routes=[
            Route(f"{prefix}/items", answer("items"), methods=methods),
            Route(f"{prefix}/items/{{id}}", answer("item"), methods=methods),
            Route(f"{prefix}/items/{{id}}/secret", answer("sibling"), methods=methods),
            Route("/api/v1/admin", answer("admin"), methods=methods),
            Route("/api/v1/admin/{rest:path}", answer("admin"), methods=methods),
            Route("/api/admin", answer("admin"), methods=methods),
            Route("/admin", answer("admin"), methods=methods),
            Route("/{rest:path}", answer("elsewhere"), methods=methods),
        ]
    )


class ServletPaths:
    """ASGI middleware mapping the request path the way a servlet container (Tomcat) does
    before routing: an encoded '/' or '\\' is refused (400), `;parameters` are cut from each
    segment, %XX is decoded, and then '.' and '..' segments are removed. A Java ERP routes
    on that path, not on the raw one."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            raw = scope["raw_path"].decode("latin-1").partition("?")[0]
            if "%2f" in raw.lower() or "%5c" in raw.lower():
                await Response(status_code=400)(scope, receive, send)
                return
            segments = [unquote(s.partition(";")[0]) for s in raw.split("/")[1:]]
            normal: list[str] = []
            for segment in segments:
                if segment == "..":
                    if normal:
                        normal.pop()
                elif segment != ".":
                    normal.append(segment)
            scope = {**scope, "path": "/" + "/".join(normal)}
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture(scope="module")
def backend_url(recorder: Recorder) -> Iterator[str]:
    """The recording ERP on uvicorn at 127.0.0.1:<free port> (stops with the module)."""
    with serve_backends(recording_app(recorder)) as url:
        yield url


@pytest.fixture(scope="module")
def servlet_url(recorder: Recorder) -> Iterator[str]:
    """The same ERP behind servlet-style path mapping."""
    with serve_backends(ServletPaths(recording_app(recorder))) as url:  # type: ignore[arg-type]
        yield url


@pytest.fixture
def hits(recorder: Recorder) -> Iterator[Recorder]:
    recorder.clear()
    yield recorder
    recorder.clear()
