"""MCP stdio servers mounted by the reference host (`--mcp-config`, reference_host.mcp).

The server is a tiny one written with the official SDK in the test's tmp_path, or the kit's
stdlib-only dual-era fixture server (tests/fixtures/mcp/server.py: legacy-only, modern-only,
and with the defects these tests need); it runs in the workers' sandbox where the machine has
one. Calls go through the host's own paths: the chat
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
from plugin_spec.tool_definition import Effect
from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.agent.call_commands import CallCommandModel
from reference_host.host import Host, HostConfig
from reference_host.http.app import create_app
from reference_host.mcp import client
from reference_host.mcp.config import McpConfigError, read_config
from reference_host.mcp.launch import server_data
from reference_host.mcp.mount import (
    McpMounts,
    MountedServer,
    definition_digest,
    make_callbacks,
    mount_servers,
)
from reference_host.support.loopback import serve_on_loopback
from reference_host.tools.callbacks import CallContext, plan_and_call
from tests.reference_host.stream_items import ONE_APPROVED_CALL, data, kinds, stream_deciding

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
FIXTURE_SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "mcp" / "server.py"


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


def fixture_config(tmp_path: Path, *flags: str) -> Path:
    """An mcpServers file mounting the fixture server as "fixture" with flags."""
    folder = tmp_path / "servers"
    folder.mkdir(exist_ok=True)
    args = [str(FIXTURE_SERVER), *flags]
    path = folder / "mcp.json"
    path.write_text(
        json.dumps({"mcpServers": {"fixture": {"command": sys.executable, "args": args}}})
    )
    return path


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


def listed(server_name: str, *tools: str) -> MountedServer:
    """A server as mounted, without a process: just its name and listing."""
    server = MountedServer.__new__(MountedServer)
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


@pytest.mark.parametrize(
    "annotations",
    [
        {"readOnlyHint": True},
        {"readOnlyHint": True, "openWorldHint": False},
        {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False},
        {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
        {"title": "Harmless", "readOnlyHint": "yes"},
    ],
)
def test_annotations_never_relax_an_approval(annotations: dict[str, Any]) -> None:
    """Whatever a mounted server says of its tool, the tool is external: asked for under the
    default policy, never run at once as a read tool would be."""
    server = listed("units", "convert_length")
    server.tools = [
        mcp_types.Tool.model_validate(
            {
                "name": "convert_length",
                "inputSchema": {"type": "object"},
                "annotations": annotations,
            }
        )
    ]
    (callback,) = make_callbacks([server], set())
    assert callback.effect is Effect.EXTERNAL
    assert ApprovalPolicy().decide(callback.effect) is Decision.ASK


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
    with served_host(config_file, tmp_path / "host", policy) as (url, made):
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            plugins = (await client.get("/api/plugins")).json()
            (units,) = plugins
            assert (units["id"], units["name"]) == ("mcp:units", "units")
            assert units["profile"] == "mcp" and units["era"] in ("modern", "legacy")
            assert "units__convert_length" in units["tools"]
            tools = {t["name"]: t for t in (await client.get("/api/tools")).json()}
            assert tools["units__list_units"]["effect"] == "external"
            # the server owns its tools (a plugin id has no colon: never an installed one)
            assert {t["owner"] for n, t in tools.items() if n.startswith("units__")} == {
                "mcp:units"
            }
            catalog = (await client.get("/api/workflow/catalog")).json()
            entry = next(
                e for e in catalog if e["pluginId"] == "mcp:units" and e["name"] == "convert_length"
            )
            assert entry["identity"] == "mcp:units:convert_length"
            message = '/call units__convert_length {"value": 5, "unit": "km"}'
            decided = await stream_deciding(
                client, "/api/chat", {"message": message, "conversationId": "c1"}
            )
            assert kinds(decided.items) == ONE_APPROVED_CALL
            asked = data(decided.items[2])
            (host,) = made
            assert host.mcp is not None
            listed_tool = next(t for t in host.mcp.servers[0].tools if t.name == "convert_length")
            # the approval is bound to the server and the definition it listed at mount
            assert asked["plugin"] == "mcp:units"
            assert asked["version"] == (host.mcp.servers[0].version or None)  # serverInfo's
            assert asked["digest"] == definition_digest(listed_tool)
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


# -- the fixture server: both eras, a crash, a rug pull -----------------------------------


@pytest.mark.parametrize(
    ("flag", "era", "version"),
    [
        ("--legacy-only", "legacy", "2025-11-25"),
        ("--modern-only", "modern", "2026-07-28"),
    ],
)
async def test_the_fixture_server_in_each_era(
    tmp_path: Path, flag: str, era: str, version: str
) -> None:
    policy = ApprovalPolicy(timeout=20)
    with served_host(fixture_config(tmp_path, flag), tmp_path / "host", policy) as (url, _):
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            (fixture,) = (await client.get("/api/plugins")).json()
            assert fixture["id"] == "mcp:fixture" and fixture["profile"] == "mcp"
            assert (fixture["era"], fixture["protocolVersion"]) == (era, version)
            assert (fixture["name"], fixture["version"]) == ("fixture", "1.0.0")
            assert sorted(fixture["tools"]) == ["fixture__add", "fixture__echo"]
            tools = {t["name"]: t for t in (await client.get("/api/tools")).json()}
            for name in ("fixture__add", "fixture__echo"):  # both say readOnlyHint: true
                assert (tools[name]["owner"], tools[name]["effect"]) == ("mcp:fixture", "external")
            added = await stream_deciding(
                client, "/api/chat", {"message": '/call fixture__add {"a": 2, "b": 40}'}
            )
            assert kinds(added.items)[1:4] == ["tool.call", "approval", "tool.result"]
            asked = data(added.items[2])
            assert (asked["plugin"], asked["version"]) == ("mcp:fixture", "1.0.0")
            result = data(added.items[3])
            assert result["success"] is True and json.loads(result["output"]) == "42"
            echoed = await stream_deciding(
                client, "/api/chat", {"message": '/call fixture__echo {"text": "hello"}'}
            )
            result = data(echoed.items[3])
            assert result["success"] is True
            assert json.loads(result["output"]) == {"text": "hello"}


async def test_a_call_that_crashes_the_server_fails_and_the_next_call_restarts_it(
    tmp_path: Path,
) -> None:
    config = fixture_config(tmp_path, "--legacy-only", "--defect", "crash-on-empty-text")
    policy = ApprovalPolicy(Decision.ALLOW, Decision.ALLOW, 20)
    with served_host(config, tmp_path / "host", policy) as (url, made):
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            (host,) = made
            assert host.mcp is not None
            (server,) = host.mcp.servers
            first = server.pid
            assert first is not None
            crashed = await stream_deciding(
                client, "/api/chat", {"message": '/call fixture__echo {"text": ""}'}
            )  # answered 200: the crash is the call's failed result
            result = next(data(i) for i in crashed.items if kinds([i]) == ["tool.result"])
            assert result["success"] is False
            assert "MCP server fixture exited during the call to echo" in result["output"]
            assert "the next call starts it again" in result["output"]
            assert "exiting (empty text)" in result["output"]  # the end of its stderr
            assert kinds(crashed.items)[-1] == "done"
            again = await stream_deciding(
                client, "/api/chat", {"message": '/call fixture__echo {"text": "back"}'}
            )
            result = next(data(i) for i in again.items if kinds([i]) == ["tool.result"])
            assert result["success"] is True, result
            assert json.loads(result["output"]) == {"text": "back"}
            assert server.pid not in (None, first)
            assert server.era == "legacy"


async def test_a_changed_definition_is_never_called(tmp_path: Path) -> None:
    """The fixture's rug pull: after its first call, it lists echo with another description.
    Even without an approval (allow), the call is refused: the model was offered the
    definition listed at mount."""
    mounted = await mount_servers(
        fixture_config(tmp_path, "--legacy-only", "--defect", "rug-pull"), tmp_path / "host"
    )
    try:
        echo = next(c for c in mounted.callbacks if c.tool == "echo")
        assert echo.owner == "mcp:fixture" and echo.listed_digest() == echo.mounted_digest
        first = await plan_and_call(echo, {"text": "a"}, CallContext())
        assert first.ok, first.error
        second = await plan_and_call(echo, {"text": "b"}, CallContext())
        assert not second.ok and second.error
        assert second.error.startswith(
            "not run: MCP server fixture changed the definition of echo after it was mounted"
        )
        assert echo.listed_digest() not in (None, echo.mounted_digest)
        # the tool whose definition did not change is still called
        add = next(c for c in mounted.callbacks if c.tool == "add")
        assert (await plan_and_call(add, {"a": 1, "b": 2}, CallContext())).ok
    finally:
        await mounted.close()


async def test_an_approval_does_not_carry_over_to_a_changed_definition(tmp_path: Path) -> None:
    """An approval is bound to the definition listed at mount: when the server lists another
    while the approval waits, approving it is refused (409) and nothing runs; a later call
    of the changed tool is refused without asking."""
    config = fixture_config(tmp_path, "--legacy-only", "--defect", "rug-pull")
    policy = ApprovalPolicy(timeout=20)
    with served_host(config, tmp_path / "host", policy) as (url, _):
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:

            async def rug_pull() -> None:
                # (over HTTP: the server's session lives in the host's event loop) a first
                # call makes the fixture list echo anew; the next call's listing shows it
                for _ in range(2):
                    added = await stream_deciding(
                        client, "/api/chat", {"message": '/call fixture__add {"a": 1, "b": 1}'}
                    )
                    result = next(data(i) for i in added.items if kinds([i]) == ["tool.result"])
                    assert result["success"] is True, result

            message = {"message": '/call fixture__echo {"text": "x"}', "conversationId": "c"}
            waited = await stream_deciding(client, "/api/chat", message, before_deciding=rug_pull)
            (decision,) = waited.decisions
            assert decision.status_code == 409
            assert "mcp:fixture changed the definition of fixture__echo" in decision.text
            result = next(data(i) for i in waited.items if kinds([i]) == ["tool.result"])
            assert result["success"] is False
            assert (
                "while the approval waited; restart the host to mount the new definition of "
                "mcp:fixture" in result["output"]
            )
            later = await stream_deciding(client, "/api/chat", message)
            assert "approval" not in kinds(later.items)
            result = next(data(i) for i in later.items if kinds([i]) == ["tool.result"])
            assert result["success"] is False
            assert (
                "not run: mcp:fixture changed the definition of fixture__echo after it was "
                "mounted; restart the host" in result["output"]
            )


async def test_a_servers_home_is_kept_across_host_starts(tmp_path: Path, config_file: Path) -> None:
    """A server's HOME (its config, npx's and uvx's caches) outlives a host's restart: the host
    wiped every server's folder at each start, so desktop-commander was downloaded again (and
    its first start ran past the host's deadline). Its tmp goes, as does the folder of a
    server no longer configured."""
    first = await mount_servers(config_file, tmp_path / "host")
    await first.close()
    data = server_data(tmp_path / "host", "units")
    (data / "home" / "cache").mkdir(parents=True, exist_ok=True)
    (data / "home" / "cache" / "kept.txt").write_text("downloaded once")
    (data / "tmp").mkdir(exist_ok=True)
    (data / "tmp" / "scratch").write_text("left by the last run")
    gone = server_data(tmp_path / "host", "removed")
    gone.mkdir(parents=True)
    second = await mount_servers(config_file, tmp_path / "host")
    await second.close()
    assert (data / "home" / "cache" / "kept.txt").read_text() == "downloaded once"
    assert not (data / "tmp" / "scratch").exists()
    assert not gone.exists()


async def test_a_server_that_does_not_open_in_time_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first npx run of desktop-commander took past the deadline, and the host said only
    'TimeoutError'."""
    monkeypatch.setattr(client, "OPEN_TIMEOUT", 0.5)
    folder = tmp_path / "servers"
    folder.mkdir()
    silent = {"command": sys.executable, "args": ["-c", "import time; time.sleep(3)"]}
    config = folder / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"slow": silent}}))
    with pytest.raises(
        McpConfigError, match=r"'slow' could not be mounted: no session within 0.5 s"
    ):
        await mount_servers(config, tmp_path / "host")
