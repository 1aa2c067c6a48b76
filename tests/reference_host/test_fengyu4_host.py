"""The host runs FengYu 4 packages as FengYu does (spec: fengyu-worker.md#starting-the-worker,
fengyu-worker.md#the-handshake), over real HTTP: python and go runtimes start, a worker that
fails the handshake is refused at install, and an upgrade whose worker fails it keeps the
installed version."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from reference_host.agent.models import ModelTurn, ScriptedModel
from reference_host.plugins.input_contract import InputContract
from reference_host.process.connection import stderr_record
from reference_host.process.launch import manifest_spec
from reference_host.process.manager import PluginProcessManager
from reference_host.process.secrets import SECRETS
from reference_host.process.worker_errors import (
    WorkerCancelled,
    WorkerHandshakeError,
    WorkerPermissionDenied,
    rpc_error,
)
from reference_host.stream.sse_parser import parse
from tests.conftest import FIXTURE_PLUGINS, MakeHost
from tests.faults.support import call_tool
from tests.reference_host.stream_items import data, kinds
from tests.reference_host.test_app import Server, call, chat, client, install, serve, server

__all__ = ["client", "serve", "server"]  # the fixtures of test_app, used here too

TEMPLATE = FIXTURE_PLUGINS / "FY-WRK-011-method-not-implemented"
WORKER = """#!/usr/bin/env python3
import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from misbehaving_worker import run

run({faults})
"""


def package(
    tmp_path: Path,
    name: str,
    *,
    runtime: str = "python",
    version: str = "1.0.0",
    faults: str = "",
    artifact: str = "worker.py",
    mode: int = 0o644,
) -> Path:
    """A FengYu 4 package: the fixture manifest with runtime and protocol 4, its worker at
    backend/<artifact> running misbehaving_worker with the given faults."""
    root = tmp_path / name
    shutil.copytree(TEMPLATE, root)
    for old in (root / "backend").iterdir():
        old.unlink()
    manifest = json.loads((root / "manifest.json").read_text("utf-8"))
    manifest.update(
        id="fixture.fengyu4", version=version, backend={"runtime": runtime, "protocolVersion": 4}
    )
    (root / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    worker = root / "backend" / artifact
    worker.write_text(WORKER.format(faults=faults), "utf-8")
    worker.chmod(mode)
    return root


async def greet_over_chat(client: httpx.AsyncClient, server: Server) -> dict[str, Any]:
    server.models.append(ScriptedModel([call("fixture_greet", {"name": "Ada"}), ModelTurn("ok")]))
    items = parse((await chat(client, "greet")).content)
    assert kinds(items)[:3] == [":connected", "tool.call", "tool.result"]
    return data(items[2])


async def test_a_python_runtime_package_runs(
    client: httpx.AsyncClient, server: Server, tmp_path: Path
) -> None:
    await install(client, package(tmp_path, "py"))
    result = await greet_over_chat(client, server)
    assert result["success"] is True, result


async def test_a_go_worker_without_its_bit_runs_and_the_authors_file_keeps_its_mode(
    client: httpx.AsyncClient, server: Server, tmp_path: Path
) -> None:
    """FengYu sets the executable bit itself; the host sets it on a copy of its own."""
    root = package(tmp_path, "go", runtime="go", artifact="worker", mode=0o644)
    await install(client, root)
    result = await greet_over_chat(client, server)
    assert result["success"] is True, result
    assert (root / "backend" / "worker").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize(
    ("faults", "problem"),
    [
        ("no_handshake=True", "Method not found"),
        ('handshake_runtime="java"', "runtime 'java' is not the manifest's 'python'"),
        ('handshake_version="4"', "protocolVersion '4' is not the declared 4"),
    ],
)
async def test_a_worker_failing_the_handshake_is_not_installed(
    client: httpx.AsyncClient, tmp_path: Path, faults: str, problem: str
) -> None:
    response = await client.post(
        "/api/plugins", json={"path": str(package(tmp_path, "bad", faults=faults))}
    )
    assert response.status_code == 400, response.text
    body = response.json()
    assert "did not pass FengYu's handshake" in body["error"]
    assert any(problem in p for p in body["problems"]), body
    assert (await client.get("/api/plugins")).json() == []


async def test_an_upgrade_whose_worker_fails_the_handshake_keeps_the_installed_version(
    client: httpx.AsyncClient, server: Server, tmp_path: Path
) -> None:
    await install(client, package(tmp_path, "v1"))
    broken = package(tmp_path, "v2", version="2.0.0", faults='handshake_runtime="go"')
    response = await client.post("/api/plugins", json={"path": str(broken)})
    assert response.status_code == 400, response.text
    (listed,) = (await client.get("/api/plugins")).json()
    assert listed["version"] == "1.0.0"
    assert (await greet_over_chat(client, server))["success"] is True


# -- the process manager: what the handshake, the envelope and cancellation look like --------


SLOW_WORKER = """import json, sys, threading
sys.dont_write_bytecode = True
HONOUR_CANCEL = {honour}
cancelled = threading.Event()
out = sys.stdout


def reply(rid, **body):
    out.write(json.dumps({{"jsonrpc": "2.0", "id": rid, **body}}) + "\\n")
    out.flush()


def greet(rid):
    cancelled.wait(30)
    if HONOUR_CANCEL:
        error = {{"code": -32000, "message": "cancelled", "data": {{"code": "CANCELLED"}}}}
        reply(rid, error=error)


for line in sys.stdin:
    message = json.loads(line)
    method, rid = message.get("method"), message.get("id")
    if method == "$/fengyu/initialize":
        print(json.dumps(message.get("_fengyu")), file=sys.stderr, flush=True)
        reply(rid, result={{"protocolVersion": 4, "runtime": "python"}})
    elif method == "greet":
        threading.Thread(target=greet, args=(rid,), daemon=True).start()
    elif method == "$/cancelRequest" and HONOUR_CANCEL:
        cancelled.set()
"""


def slow_package(tmp_path: Path, honour: bool) -> Path:
    """A package whose greet waits 30 s for a `$/cancelRequest`; honour: whether its worker
    then answers CANCELLED, or ignores the cancel."""
    root = package(tmp_path, f"slow-{honour}")
    (root / "backend" / "worker.py").write_text(SLOW_WORKER.format(honour=honour), "utf-8")
    return root


def spec_of(root: Path, tmp_path: Path) -> Any:
    manifest = json.loads((root / "manifest.json").read_text("utf-8"))
    return manifest_spec("fixture.fengyu4", root, manifest, tmp_path / "data")


async def abandon_a_call(manager: PluginProcessManager) -> Any:
    """Start a greet call, leave it once it is sent, and settle what the host does next;
    the connection it went to."""
    call_task = asyncio.create_task(manager.invoke("fixture.fengyu4", "greet", {}))
    connection = await wait_for_connection(manager)
    call_task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call_task
    await connection.settled()
    return connection


async def test_an_abandoned_call_is_cancelled_in_the_worker(tmp_path: Path) -> None:
    """The caller leaves: `$/cancelRequest` goes out, the worker answers CANCELLED and stays."""
    manager = PluginProcessManager()
    manager.register(spec_of(slow_package(tmp_path, honour=True), tmp_path))
    try:
        connection = await abandon_a_call(manager)
        assert not connection.pending and not connection.unanswered_cancels
        assert connection.alive
        assert '"locale": "en"' in connection.stderr  # the envelope came with the handshake
    finally:
        await manager.close()


async def test_a_worker_ignoring_the_cancel_is_killed_after_a_second(tmp_path: Path) -> None:
    manager = PluginProcessManager()
    manager.register(spec_of(slow_package(tmp_path, honour=False), tmp_path))
    try:
        connection = await abandon_a_call(manager)
        assert len(connection.unanswered_cancels) == 1
        assert not connection.alive
    finally:
        await manager.close()


async def test_a_failed_handshake_is_a_refused_start(tmp_path: Path) -> None:
    root = package(tmp_path, "refused", faults='handshake_runtime="go"')
    manager = PluginProcessManager()
    manager.register(spec_of(root, tmp_path))
    try:
        with pytest.raises(WorkerHandshakeError, match="runtime 'go'"):
            await manager.invoke("fixture.fengyu4", "greet", {"name": "Ada"})
        assert manager.connection("fixture.fengyu4") is None
    finally:
        await manager.close()


def test_cancelled_and_permission_denied_have_their_own_errors() -> None:
    cancelled = rpc_error({"code": -32000, "message": "stop", "data": {"code": "CANCELLED"}})
    denied = rpc_error({"code": -32000, "message": "no", "data": {"code": "PERMISSION_DENIED"}})
    other = rpc_error({"code": -32000, "message": "bad", "data": {"code": "INVALID_PARAMS"}})
    assert isinstance(cancelled, WorkerCancelled) and isinstance(denied, WorkerPermissionDenied)
    assert cancelled.message == "the call was cancelled: stop"
    assert denied.message == "permission denied by the plugin: no"
    assert type(other).__name__ == "WorkerRpcError" and other.code == -32000


async def wait_for_connection(manager: PluginProcessManager) -> Any:
    await wait_until(lambda: manager.connection("fixture.fengyu4") is not None)
    connection = manager.connection("fixture.fengyu4")
    await wait_until(lambda: bool(connection.pending))
    return connection


async def wait_until(condition: Any, limit: float = 30.0) -> None:
    """Poll condition until it holds; fails after limit seconds (a bound, not a timing)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not condition():
        assert loop.time() < deadline, "the condition never held"
        await asyncio.sleep(0.02)


async def test_arguments_the_schema_refuses_never_reach_the_worker(
    make_host: MakeHost, tmp_path: Path
) -> None:
    """FengYu's host checks arguments before the worker runs: the model gets the pointer and
    the rule, the worker is not called."""
    host = make_host()
    dispatched: list[str] = []
    host.manager.observers.append(lambda plugin, method, params: dispatched.append(method))
    await host.install(package(tmp_path, "checked"))
    refused = await call_tool(host, "fixture_greet", {"name": 5})
    assert refused == {
        "success": False,
        "error": "the arguments do not match the inputSchema of greet at /name: "
        'the value breaks type "string"',
    }
    assert dispatched == []
    assert (await call_tool(host, "fixture_greet", {"name": "Ada"}))["success"] is True
    assert dispatched == ["greet"]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"name": {"$ref": "http://127.0.0.1:9/x.json"}}},
        {"type": "object", "properties": {"name": {"type": "no-such-type"}}},
    ],
)
def test_a_schema_that_cannot_be_evaluated_refuses_the_call(schema: dict[str, Any]) -> None:
    problem = InputContract("greet", schema).problem({"name": "Ada"})
    assert problem is not None and problem.startswith("the inputSchema of greet cannot be")


async def test_a_start_left_during_the_handshake_leaves_no_worker(tmp_path: Path) -> None:
    """A caller that leaves while its worker is being greeted: the half-started worker is
    killed, not left running where nobody can close it."""
    root = package(tmp_path, "slow-greeting")
    worker = root / "backend" / "worker.py"
    worker.write_text("import time\ntime.sleep(0.5)\n" + worker.read_text("utf-8"), "utf-8")
    manager = PluginProcessManager()
    manager.register(spec_of(root, tmp_path))
    started: list[int] = []
    try:
        call = asyncio.create_task(manager.invoke("fixture.fengyu4", "greet", {"name": "Ada"}))
        await wait_until(lambda: bool(running_workers(root, started)))
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await wait_until(lambda: not any(psutil.pid_exists(p) for p in started))
        assert manager.connection("fixture.fengyu4") is None
    finally:
        await manager.close()


def running_workers(root: Path, found: list[int]) -> list[int]:
    """The pids of processes running root's worker (kept in found)."""
    for process in psutil.process_iter(["pid", "cwd"]):
        with contextlib.suppress(psutil.Error):
            if process.info["cwd"] == str(root) and process.pid not in found:
                found.append(process.pid)
    return found


def test_a_log_record_is_masked_after_it_is_decoded_and_stays_one_line() -> None:
    """A secret the worker's JSON encoder escaped (Go writes & as \\u0026, Python é as
    \\u00e9) is masked once the record is decoded; a line break cannot forge a log line;
    every record goes to the plugin's one logger."""
    secret = "sk-Tom&Jerry-é-123"
    SECRETS.hold("fixture.masked", [secret])
    go = '@fengyu-log:{"level":"WARN","logger":"L1","message":"key=sk-Tom\\u0026Jerry-\\u00e9-123"}'
    forged = '@fengyu-log:{"level":"INFO","message":"ok\\nERROR reference_host.worker: forged"}'
    assert stderr_record("fixture.masked", go) == (
        "reference_host.plugin.fixture.masked",
        logging.WARNING,
        "[L1] key=[sensitive]",
    )
    _, _, text = stderr_record("fixture.masked", forged)
    assert text == "[worker] ok\\nERROR reference_host.worker: forged" and "\n" not in text
    assert (
        stderr_record("fixture.masked", f"plain {secret}")[2] == "fixture.masked: plain [sensitive]"
    )


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "integer", "maximum": 99}, 12345),
        ({"enum": ["a", "b"]}, "sk-it's\"q"),
        ({"type": "string", "maxLength": 3}, "k\x01ey-secret"),
    ],
)
def test_an_argument_failure_never_quotes_the_value(schema: dict[str, Any], value: Any) -> None:
    """The failure reaches the model, the stream and the store: it names the rule, not what
    was sent (which may be a secret)."""
    contract = InputContract("login", {"type": "object", "properties": {"key": schema}})
    problem = contract.problem({"key": value})
    assert problem is not None and problem.startswith("the arguments do not match")
    assert str(value) not in problem and repr(value) not in problem and "12345" not in problem
