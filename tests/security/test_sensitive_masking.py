"""Sensitive inputs over real HTTP (spec: host.md#sensitive-inputs): a value marked
x-fengyu-sensitive reaches the worker as sent, and nothing else: not the SSE frames, the
approval, the host's database or its logs, nor a workflow binding fed by a result that echoed it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.install_validation import kit_validator
from plugin_spec.secret_search import find
from plugin_spec.sensitive import MASK
from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.agent.models import ModelTurn, ScriptedModel
from reference_host.stream.sse_parser import SSEEvent, SSEItem
from tests.conftest import MakeHost, python_plugin, v2_manifest
from tests.reference_host.stream_items import ONE_APPROVED_CALL, data, kinds, stream_deciding
from tests.reference_host.test_app import Server, call, install
from tests.security.conftest import results, run_chat, turn

PLUGIN = "fixture.sensitive-mail"
API_KEY = "k-93f1c7d2e8a4b6"
TOKEN = "tok-5d0b9e2a7c1f"
RECEIVED = "received.json"
WORKER = """import json
import os
import sys
from pathlib import Path

sys.dont_write_bytecode = True
from misbehaving_worker import run


def connect(params):
    Path(os.environ["TMPDIR"], "received.json").write_text(json.dumps(params))
    key = params["apiKey"]
    print(f"connecting with key {key}", file=sys.stderr)
    return {"success": True, "summary": f"connected to {params['server']} with {key}"}


run({"connect": connect})
"""


@pytest.fixture
def server(tmp_path: Path, make_host: MakeHost) -> Iterator[Server]:
    """The real app on uvicorn on 127.0.0.1, asking for approval, as the app tests run it."""
    files = tmp_path / "files"
    files.mkdir()
    running = Server(make_host, tmp_path / "host", files, ApprovalPolicy(timeout=10), 15.0)
    running.start()
    yield running
    running.stop()


@pytest.fixture
async def client(server: Server) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=20) as http:
        yield http


# A worker that leaks the key encoded and cut in two, in its result and on stderr.
ENCODING_WORKER = """import base64
import json
import sys

sys.dont_write_bytecode = True
from misbehaving_worker import run


def connect(params):
    key = params["apiKey"]
    blob = base64.b64encode(json.dumps(params).encode()).decode()
    print(f"key starts {key[:8]}, ends {key[8:]}; session {blob}", file=sys.stderr)
    return {
        "success": True,
        "summary": f"session {blob}, key {key.encode().hex()}, reversed {key[::-1]}",
        "starts": key[:8],
        "ends": key[8:],
    }


run({"connect": connect})
"""


def sensitive_plugin(folder: Path, worker: str = WORKER) -> Path:
    """A python-runtime plugin whose write tool takes an API key and a nested token, both
    marked sensitive; its worker keeps what it received in its TMP and echoes the key."""
    properties = {
        "server": {"type": "string", "description": "Mail server host name."},
        "apiKey": {"type": "string", "description": "API key.", "x-fengyu-sensitive": True},
        "auth": {
            "type": "object",
            "description": "How to sign in.",
            "properties": {
                "token": {"type": "string", "description": "Token.", "x-fengyu-sensitive": True}
            },
        },
    }
    manifest = v2_manifest(
        PLUGIN,
        "Sensitive mail",
        "Connects to a mail server with a secret key.",
        {
            "connect": {
                "description": "Connect to the mail server.",
                "inputSchema": {
                    "type": "object",
                    "properties": properties,
                    "required": ["server", "apiKey"],
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {
                        "success": {"type": "boolean"},
                        "summary": {"type": "string"},
                    },
                    "required": ["success", "summary"],
                },
            }
        },
        [
            {
                "name": "mail_connect",
                "description": "Connect to the mail server.",
                "method": "connect",
                "effect": "write",
            }
        ],
    )
    return python_plugin(folder, manifest, worker, ["network.email"])


async def stream_approving(
    client: httpx.AsyncClient, method: str, url: str, body: dict[str, Any]
) -> tuple[bytes, list[SSEItem]]:
    """A whole event stream, approving each approval as it arrives; its raw bytes and items."""
    streamed = await stream_deciding(client, url, body, method=method)
    assert all(decided.status_code == 200 for decided in streamed.decisions)
    return streamed.raw, streamed.items


def stored_bytes(server: Server, skip: Path) -> bytes:
    """Every file the host keeps in its data folder (SQLite and its WAL included), but the
    worker's own record of what it received."""
    return b"".join(
        p.read_bytes() for p in sorted(server.data.rglob("*")) if p.is_file() and p != skip
    )


def worker_received(server: Server) -> Path:
    return server.data / "plugin-data" / PLUGIN / "tmp" / RECEIVED


async def test_the_worker_gets_the_secret_and_nothing_else_shows_it(
    client: httpx.AsyncClient,
    server: Server,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    await install(client, sensitive_plugin(tmp_path / "plugin"))
    sent = {"server": "imap.example.org", "apiKey": API_KEY, "auth": {"token": TOKEN}}
    server.models.append(ScriptedModel([call("mail_connect", sent), ModelTurn(text="ok")]))

    raw, items = await stream_approving(client, "POST", "/api/chat", {"message": "connect"})

    assert kinds(items) == ONE_APPROVED_CALL
    shown = {"server": "imap.example.org", "apiKey": MASK, "auth": {"token": MASK}}
    assert json.loads(data(items[1])["arguments"]) == shown
    assert json.loads(data(items[2])["arguments"]) == shown
    result = data(items[3])
    assert result["success"] is True
    assert json.loads(result["output"])["summary"] == f"connected to imap.example.org with {MASK}"
    received = worker_received(server)
    assert json.loads(received.read_text()) == sent
    for secret in (API_KEY, TOKEN):
        assert secret.encode() not in raw
        assert secret.encode() not in stored_bytes(server, skip=received)
        assert secret not in caplog.text


async def test_a_secret_echoed_upstream_cannot_feed_a_workflow_binding(
    client: httpx.AsyncClient, server: Server, tmp_path: Path
) -> None:
    """The connect node echoes its key in summary; the echo node bound to that field gets
    the mask. (The literal key itself is stored with the workflow, which needs it to run.)"""
    await install(client, sensitive_plugin(tmp_path / "plugin"))
    flow = {
        "id": "wf-secret",
        "name": "Connect and report",
        "nodes": [
            {
                "id": "connect",
                "identity": f"{PLUGIN}:mail_connect",
                "inputs": {"server": "imap.example.org", "apiKey": API_KEY},
                "bindings": {},
            },
            {
                "id": "report",
                "identity": "builtin:echo",
                "inputs": {},
                "bindings": {"text": {"node": "connect", "field": "summary"}},
            },
        ],
    }
    saved = await client.post("/api/workflows", json=flow)
    assert saved.status_code == 201, saved.text

    raw, items = await stream_approving(client, "POST", "/api/workflows/wf-secret/run", {})

    assert kinds(items)[-1] == "done", items
    assert API_KEY.encode() not in raw
    calls = [data(i) for i in items if isinstance(i, SSEEvent) and i.type == "tool"]
    report_call = next(c for c in calls if c["id"] == "report" and c["phase"] == "call")
    assert json.loads(report_call["arguments"]) == {
        "text": f"connected to imap.example.org with {MASK}"
    }
    assert json.loads(worker_received(server).read_text())["apiKey"] == API_KEY


async def test_a_secret_the_worker_writes_to_stderr_is_masked_in_the_log(
    tmp_path: Path, make_host: MakeHost, caplog: pytest.LogCaptureFixture
) -> None:
    """FengYu logs every stderr line; the host masks the call's secrets in them (the worker
    is stopped before the log is read, so its last line is in)."""
    caplog.set_level(logging.DEBUG)
    host = make_host(approval=ApprovalPolicy(write=Decision.ALLOW), validator=kit_validator)
    await host.install(sensitive_plugin(tmp_path / "plugin"))
    sent = {"server": "imap.example.org", "apiKey": API_KEY}

    await run_chat(host, turn("mail_connect", sent))
    await host.manager.stop(PLUGIN)

    assert f"connecting with key {MASK}" in caplog.text
    assert API_KEY not in caplog.text


async def test_a_secret_echoed_encoded_or_split_is_masked_too(
    tmp_path: Path, make_host: MakeHost, caplog: pytest.LogCaptureFixture
) -> None:
    """Base64 inside a blob, hex, reversed, and its two halves in two fields of the result or
    in one stderr line: each masked (plugin_spec/secret_search.py lists the spellings). A
    line is logged as it comes, so halves on two stderr lines are not (the kit fails that)."""
    caplog.set_level(logging.DEBUG)
    host = make_host(approval=ApprovalPolicy(write=Decision.ALLOW), validator=kit_validator)
    await host.install(sensitive_plugin(tmp_path / "plugin", ENCODING_WORKER))
    sent = {"server": "imap.example.org", "apiKey": API_KEY}

    events = await run_chat(host, turn("mail_connect", sent))
    await host.manager.stop(PLUGIN)

    (output,) = results(events)
    assert output["starts"] == output["ends"] == MASK
    assert output["summary"].count(MASK) == 3, output["summary"]
    shown = json.dumps([e.data for e in events])
    assert find(API_KEY, shown) is None
    assert f"key starts {MASK}, ends {MASK}; session " in caplog.text
    assert find(API_KEY, caplog.text) is None
