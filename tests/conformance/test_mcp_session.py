"""How the kit selects MCP servers and opens a session with them: the era probe with its
fallback, and the config files it reads (conformance/mcp/selection.py, session.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conformance.kit import KitRun
from conformance.mcp.selection import SelectionError, command_name, selected_servers
from conformance.mcp.server import McpServer, load_mcp_server
from conformance.mcp.wire import Wire
from conformance.options import KitOptions
from plugin_spec import mcp
from reference_host.process.launch import WorkerSpec
from tests.conftest import DEADLINES, REPO

SERVER = REPO / "tests" / "fixtures" / "mcp" / "server.py"


def loaded(*flags: str, command: str = "") -> McpServer:
    """The fixture server (or command) loaded as a run loads it, its launcher cache gone."""
    command = command or " ".join(["python", str(SERVER), *flags])
    (server,) = selected_servers((command,), (), (), REPO)
    load_mcp_server(server, DEADLINES).discard()
    return server


@pytest.mark.parametrize(
    ("flags", "era"),
    [
        ((), mcp.MODERN),  # a dual-era server answers the probe
        (("--legacy-only",), mcp.LEGACY),  # -32601 to the probe: the handshake follows
        (("--modern-only",), mcp.MODERN),
        # Its answer to the probe comes after the probe's 5 s, while initialize is waited
        # for: still modern, as the Python SDK decides.
        (("--start-delay", "6"), mcp.MODERN),
        # Killed by the probe: a legacy launch reaches it, and MCP-ERA-001 reports the probe.
        (("--legacy-only", "--defect", "die-on-discover"), mcp.LEGACY),
    ],
)
def test_the_era_a_dual_era_client_would_settle_on(flags: tuple[str, ...], era: str) -> None:
    server = loaded(*flags)
    assert server.load_error is None
    assert server.era == era
    assert [t.name for t in server.tools] == ["echo", "add"]
    assert (server.probe_killed is not None) == ("die-on-discover" in flags)


def test_a_server_that_opens_no_session_is_the_load_requirements_finding() -> None:
    server = loaded("--defect", "no-server-info", "--defect", "crash-on-unknown-version")
    assert server.era is not None  # serverInfo missing: the session opens, MCP-LIF-001 fails
    assert loaded(command="python -c 'import sys; sys.exit(3)'").load_error is not None


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        ("python server.py", "server"),
        ("npx -y @modelcontextprotocol/server-everything", "server-everything"),
        ("npx -y @scope/pkg@1.2.3", "pkg"),
        ("uvx mcp-server-time", "mcp-server-time"),
        ("mcp-server-git --repository /x", "mcp-server-git"),
        ("node dist/index.js", "weather"),  # an entry point: the folder it runs in
        (
            "node /n/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
            "server-everything",
        ),
        ("python -m weather", "weather"),
        ("python src/main.py", "weather"),
    ],
)
def test_a_command_names_its_server(argv: str, name: str) -> None:
    assert command_name(argv.split(), Path("/work/weather")) == name


def write_config(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(data), "utf-8")
    return path


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"mcpServers": []}, "/mcpServers: must be an object of servers, found []"),
        ({"mcpServers": {"a": {"args": []}}}, "/mcpServers/a/command: is missing"),
        (
            {"mcpServers": {"a/b": {"command": "x", "args": "y"}}},
            '/mcpServers/a~1b/args: must be an array of strings, found "y"',
        ),
        (
            {"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}},
            "/mcpServers/a/env/K: must be a string, found 1",
        ),
    ],
)
def test_config_errors_name_the_file_pointer_and_value(
    tmp_path: Path, data: object, message: str
) -> None:
    path = write_config(tmp_path, data)
    with pytest.raises(SelectionError) as caught:
        selected_servers((), (str(path),), (), tmp_path)
    assert str(path) in str(caught.value)
    assert message in str(caught.value)


def test_a_config_selects_stdio_servers_run_in_its_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    path = write_config(
        tmp_path,
        {
            "mcpServers": {
                "one": {"command": "python", "args": ["s.py"], "env": {"K": "v"}},
                "two": {"command": "node", "cwd": "sub"},
                "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
            }
        },
    )
    one, two = selected_servers((), (str(path),), (), tmp_path)
    assert (one.name, one.argv, one.root, one.env) == (
        "one",
        ("python", "s.py"),
        tmp_path,
        {"K": "v"},
    )
    assert two.root == tmp_path / "sub"
    assert one.selection == ("--mcp-config", str(path), "--mcp-server", "one")
    with pytest.raises(SelectionError, match="not a stdio server"):
        selected_servers((), (str(path),), ("remote",), tmp_path)
    with pytest.raises(
        SelectionError, match=r"--mcp-server nope: not in .*\(it has: one, two, remote\)"
    ):
        selected_servers((), (str(path),), ("nope",), tmp_path)


def test_a_server_whose_stdout_ended_is_not_taken_for_live(tmp_path: Path) -> None:
    """A server that closed stdout can take a while to be reaped (more so in the sandbox):
    the kit must not wait on it as if it could still answer."""
    linger = "import os, time; os.close(1); time.sleep(30)"
    spec = WorkerSpec("mcp.linger", tmp_path, (sys.executable, "-c", linger), tmp_path)
    wire = Wire(spec, DEADLINES)
    try:
        reply = wire.request(mcp.DISCOVER, {}, seconds=10)
        assert reply.exited and not reply.timed_out
        assert not wire.alive()
        assert wire.worker.alive()  # still running: only its stdout ended
    finally:
        wire.kill()


def test_worker_env_reaches_mcp_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    """--worker-env passes a machine variable to MCP servers too, as the host's does (a
    launcher behind a proxy may need one)."""
    monkeypatch.setenv("UV_NATIVE_TLS", "1")
    options = KitOptions(mcp_commands=(f"python {SERVER}",), worker_env=("UV_NATIVE_TLS",))
    run = KitRun.load(options, REPO)
    try:
        (server,) = run.plugins
        assert isinstance(server, McpServer) and server.load_error is None
        assert server.spec().environment()["UV_NATIVE_TLS"] == "1"
        scratch = server.folder()
        assert scratch.is_dir()
    finally:
        run.close()
    assert not scratch.exists()  # the run's folders (data, launcher caches) went with it
