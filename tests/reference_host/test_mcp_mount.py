"""MCP stdio servers mounted by the reference host (`--mcp-config`, reference_host.mcp).

The server is a tiny one written with the official SDK in the test's tmp_path; it runs in the
workers' sandbox where the machine has one. Calls go through the host's own paths: the chat
route with the scripted `/call` model over real HTTP on 127.0.0.1, or the callbacks directly.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import mcp_types
import psutil
import pytest

from plugin_spec.mcp import OFFERED_NAME
from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.agent.call_commands import CallCommandModel
from reference_host.host import Host, HostConfig
from reference_host.http.app import create_app
from reference_host.mcp.config import McpConfigError, read_config
from reference_host.mcp.mount import McpMounts, McpServer, make_callbacks, mount_servers
from reference_host.support.loopback import serve_on_loopback
from reference_host.tools.callbacks import CallContext, plan_and_call
from tests.reference_host.stream_items import data, kinds, stream_deciding

SERVER = '''
import subprocess
import sys

from mcp.server import MCPServer
from mcp_types import ToolAnnotations

app = MCPServer("units")
FACTORS = {"m": 1.0, "km": 1000.0, "cm": 0.01}


@app.tool()
def convert_length(value: float, unit: str) -> dict:
    """Convert a length to metres."""
    if unit not in FACTORS:
        raise ValueError(f"unknown unit {unit}")
    return {"metres": value * FACTORS[unit]}


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def list_units() -> str:
    """The units convert_length knows (it says it is read-only; it is untrusted)."""
    return ", ".join(FACTORS)


@app.tool()
def start_child() -> str:
    """Start a child process that sleeps, to see it end with the server."""
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    return "started"


app.run()
'''
WAIT = 30.0  # how long a process may take to go away before a test gives up waiting


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    folder = tmp_path / "servers"
    folder.mkdir()
    (folder / "units.py").write_text(SERVER)
    config = {"mcpServers": {"units": {"command": sys.executable, "args": ["units.py"]}}}
    path = folder / "mcp.json"
    path.write_text(json.dumps(config))
    return path


@pytest.fixture
async def mounts(tmp_path: Path, config_file: Path) -> AsyncIterator[McpMounts]:
    mounted = await mount_servers(config_file, tmp_path / "host")
    try:
        yield mounted
    finally:
        await mounted.close()


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_until(condition: Any) -> None:
    """Poll until condition() holds (a generous bound only stops a hung test)."""
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {condition}")
        time.sleep(0.02)


# -- the config file ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"mcpServers": {', "is not valid JSON: Expecting property name"),
        ("[]", "/: must be an object, found []"),
        ('{"servers": {}}', "/mcpServers: is missing (it must be an object of servers)"),
        ('{"mcpServers": {"a": {"args": []}}}', "/mcpServers/a/command: is missing"),
        (
            '{"mcpServers": {"a": {"command": 42}}}',
            "/mcpServers/a/command: must be a non-empty string, found 42",
        ),
        (
            '{"mcpServers": {"a/b": {"command": "x", "args": "y"}}}',
            '/mcpServers/a~1b/args: must be an array of strings, found "y"',
        ),
        (
            '{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}',
            "/mcpServers/a/env/K: must be a string, found 1",
        ),
    ],
)
def test_config_errors_name_file_pointer_and_value(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(text)
    with pytest.raises(McpConfigError) as caught:
        read_config(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert expected in str(caught.value)


def test_config_servers_run_in_the_files_folder_unless_cwd(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    path = tmp_path / "mcp.json"
    servers = {"a": {"command": "x"}, "b": {"command": "y", "args": ["1"], "cwd": "sub"}}
    path.write_text(json.dumps({"mcpServers": servers}))
    a, b = read_config(path)
    assert (a.name, a.command, a.args, a.cwd) == ("a", "x", (), tmp_path.resolve())
    assert (b.name, b.args, b.cwd) == ("b", ("1",), (tmp_path / "sub").resolve())


async def test_a_server_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    config = {
        "mcpServers": {
            "broken": {"command": sys.executable, "args": ["-c", "raise SystemExit('no way')"]}
        }
    }
    path.write_text(json.dumps(config))
    with pytest.raises(McpConfigError, match=r"MCP server 'broken' could not be mounted: .*no way"):
        await mount_servers(path, tmp_path / "host")


# -- minted names --------------------------------------------------------------------------


def listed(server_name: str, *tools: str) -> McpServer:
    """A server as mounted, without a process: just its name and listing."""
    server = McpServer.__new__(McpServer)
    server.name = server_name
    server.tools = [mcp_types.Tool(name=t, input_schema={"type": "object"}) for t in tools]
    return server


def test_minted_names() -> None:
    long_server, long_tool = (
        "a-very-long-server-name-for-testing",
        "with_an_equally_long_tool_name_x",
    )
    servers = [
        listed("units", "convert_length", "math.add"),
        listed("metric", "convert_length"),
        listed(long_server, long_tool),
    ]
    callbacks = make_callbacks(servers, {"web_fetch"})
    names = [c.definition.name for c in callbacks]
    assert names[0] == "units__convert_length"
    assert names[1].startswith("units__math_add_") and names[1] != "units__math_add"
    assert names[2] == "metric__convert_length"
    assert len(names[3]) <= 64 and names[3].startswith("a-very-long-server-name")
    assert all(OFFERED_NAME.fullmatch(n) for n in names)
    assert len(set(names)) == len(names)
    # the server's own names go on the wire
    assert [c.tool for c in callbacks] == [
        "convert_length",
        "math.add",
        "convert_length",
        long_tool,
    ]


def test_minted_names_stay_apart_from_builtins_and_each_other() -> None:
    # "a__b" + "c" and "a" + "b__c" would both be a__b__c; a built-in has units__x
    callbacks = make_callbacks(
        [listed("a__b", "c"), listed("a", "b__c"), listed("units", "x")], {"units__x"}
    )
    names = [c.definition.name for c in callbacks]
    assert names[0] == "a__b__c"
    assert names[1] != "a__b__c" and names[2] != "units__x"
    assert len(set(names)) == 3 and all(OFFERED_NAME.fullmatch(n) for n in names)


# -- calls ---------------------------------------------------------------------------------


async def test_mounted_tools_and_results(mounts: McpMounts) -> None:
    (server,) = mounts.servers
    assert server.era in ("modern", "legacy")
    by_name = {c.definition.name: c for c in mounts.callbacks}
    assert set(by_name) == {"units__convert_length", "units__list_units", "units__start_child"}
    convert = by_name["units__convert_length"]
    assert convert.definition.description == "Convert a length to metres."
    assert convert.definition.input_schema["required"] == ["value", "unit"]
    context = CallContext()
    result = await plan_and_call(convert, {"value": 2, "unit": "km"}, context)
    assert result.ok and json.loads(result.output) == {"metres": 2000.0}
    failed = await plan_and_call(convert, {"value": 2, "unit": "parsec"}, context)
    assert not failed.ok and failed.error and "convert_length" in failed.error
    bad = await plan_and_call(convert, '{"value": ', context)  # type: ignore[arg-type]
    assert not bad.ok


async def test_read_only_hint_does_not_skip_approval(mounts: McpMounts) -> None:
    policy = ApprovalPolicy()  # ask for write and external, run read at once
    for callback in mounts.callbacks:
        assert policy.decide(callback.effect) is Decision.ASK, callback.definition.name


async def test_a_server_killed_between_calls_is_restarted(mounts: McpMounts) -> None:
    (server,) = mounts.servers
    convert = next(c for c in mounts.callbacks if c.tool == "convert_length")
    assert (await plan_and_call(convert, {"value": 1, "unit": "m"}, CallContext())).ok
    first = server.pid
    assert first is not None
    os.killpg(first, signal.SIGKILL)
    wait_until(lambda: gone(first))
    again = await plan_and_call(convert, {"value": 3, "unit": "cm"}, CallContext())
    assert again.ok, again.error
    assert json.loads(again.output) == {"metres": 0.03}
    assert server.pid not in (None, first)


async def test_a_server_that_keeps_crashing_gives_a_clear_error(mounts: McpMounts) -> None:
    (server,) = mounts.servers
    convert = next(c for c in mounts.callbacks if c.tool == "convert_length")
    (server.launch.server.cwd / "units.py").write_text("raise SystemExit('broken for good')\n")
    pid = server.pid
    assert pid is not None
    os.killpg(pid, signal.SIGKILL)
    wait_until(lambda: gone(pid))
    for attempt in (1, 2):
        result = await plan_and_call(convert, {"value": 1, "unit": "m"}, CallContext())
        assert not result.ok and result.error
        assert result.error.startswith("MCP server units exited and could not be started again")
        assert f"({attempt} failed start(s) in a row)" in result.error
        assert "broken for good" in result.error


# -- the host over HTTP --------------------------------------------------------------------


@contextlib.contextmanager
def served_host(
    config_file: Path, data_dir: Path, approval: ApprovalPolicy
) -> Iterator[tuple[str, list[Host]]]:
    """The host app on uvicorn on 127.0.0.1 with the file's servers mounted; yields its URL
    and (once it stopped) the host it made."""
    made: list[Host] = []

    @contextlib.asynccontextmanager
    async def make_app() -> AsyncIterator[Any]:
        mcp = await mount_servers(config_file, data_dir)
        host = Host(HostConfig(data_dir=data_dir, approval=approval), mcp=mcp)
        made.append(host)
        try:
            yield create_app(host, CallCommandModel)
        finally:
            await host.close()

    with serve_on_loopback(make_app=make_app, lifespan="on", name="mcp host") as url:
        yield url, made


async def test_the_host_calls_a_mounted_tool_over_http(tmp_path: Path, config_file: Path) -> None:
    policy = ApprovalPolicy(timeout=20)
    with served_host(config_file, tmp_path / "host", policy) as (url, _):
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            plugins = (await client.get("/api/plugins")).json()
            (units,) = plugins
            assert units["profile"] == "mcp" and units["era"] in ("modern", "legacy")
            assert "units__convert_length" in units["tools"]
            tools = {t["name"]: t for t in (await client.get("/api/tools")).json()}
            assert tools["units__list_units"]["effect"] == "external"
            message = '/call units__convert_length {"value": 5, "unit": "km"}'
            decided = await stream_deciding(
                client, "/api/chat", {"message": message, "conversationId": "c1"}
            )
            assert kinds(decided.items) == [
                ":connected",
                "tool.call",
                "approval",
                "tool.result",
                "token",
                "done",
            ]
            result = data(decided.items[3])
            assert result["success"] is True and result["name"] == "units__convert_length"
            assert json.loads(json.loads(result["output"])) == {"metres": 5000.0}
            # readOnlyHint: true from an untrusted server still asks
            read_only = await stream_deciding(
                client,
                "/api/chat",
                {"message": "/call units__list_units {}", "conversationId": "c1"},
            )
            assert "approval" in kinds(read_only.items)
            # the SDK wraps a str return as structuredContent, which is the output then
            output = json.loads(data(read_only.items[3])["output"])
            assert output == {"result": "m, km, cm"}


async def test_no_process_of_a_server_remains_after_shutdown(
    tmp_path: Path, config_file: Path
) -> None:
    policy = ApprovalPolicy(Decision.ALLOW, Decision.ALLOW, 20)
    with served_host(config_file, tmp_path / "host", policy) as (url, made):
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            reply = await client.post("/api/chat", json={"message": "/call units__start_child {}"})
            assert "started" in reply.text
        (host,) = made
        assert host.mcp is not None
        pid = host.mcp.servers[0].pid
        assert pid is not None
        tree = [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]
        assert len(tree) >= 2  # the server (in its sandbox) and the child it started
    for member in tree:
        wait_until(lambda member=member: gone(member))
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
