"""An MCP server finds the same world in the kit as in the reference host: the same network,
the same environment names, a writable HOME of its own (where npx and uvx keep their caches).
A server that could tell the two apart could behave only while it is checked (spec:
mcp.md#how-the-kit-drives-a-server).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.mcp.server import McpServer
from conformance.mcp.wire import Wire
from reference_host.mcp.config import ServerConfig
from reference_host.mcp.launch import Launch, server_data
from reference_host.process.lineage import LINEAGE_VARIABLE
from reference_host.process.sandbox import SERVER_DATA_PLACE, support
from tests.conftest import DEADLINES

# What a server can see of its world, as one JSON line on stdout.
LOOK = """
import json, os, socket
def writable(name):
    try:
        os.makedirs(os.environ[name], exist_ok=True)
        open(os.path.join(os.environ[name], "probe"), "w").close()
        return True
    except (KeyError, OSError):
        return False
print(json.dumps({
    "env": sorted(os.environ),
    "interfaces": sorted(name for _, name in socket.if_nameindex()),
    "home_writable": writable("HOME"),
    "home": os.environ.get("HOME"),
    "token": os.environ.get("API_TOKEN"),
    "tmp": os.environ.get("TMPDIR"),
    "around": sorted(os.listdir(os.path.join(os.environ["TMPDIR"], "..", ".."))),
}), flush=True)
"""
ENV = {"API_TOKEN": "test-token-1234"}


def seen_by_the_kit(tmp_path: Path) -> dict[str, Any]:
    server = McpServer("look", (sys.executable, "-c", LOOK), tmp_path, dict(ENV), (), "test")
    (server.folder() / "effects-1.trace").write_text("what the kit keeps to itself")
    wire = Wire(server.spec(), DEADLINES)
    try:
        (seen,) = wire.quiet(10) or [{}]
        return seen
    finally:
        wire.kill()
        server.discard()


def seen_by_the_host(tmp_path: Path) -> dict[str, Any]:
    config = ServerConfig("look", sys.executable, ("-c", LOOK), dict(ENV), tmp_path)
    state = tmp_path / "host-state"
    state.mkdir()
    (state / "host.sqlite3").write_text("what the host keeps to itself")
    hidden = (state,) if support().available else None
    launch = Launch(config, server_data(state, "look"), hidden)
    parameters = launch.parameters("lineage-token")
    done = subprocess.run(
        [parameters.command, *parameters.args],
        env=parameters.env,
        cwd=parameters.cwd,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    lines = done.stdout.splitlines()
    assert lines, done.stderr
    seen: dict[str, Any] = json.loads(lines[0])
    return seen


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    tmp_path = tmp_path_factory.mktemp("worlds")
    return seen_by_the_kit(tmp_path), seen_by_the_host(tmp_path)


def test_the_kit_and_the_host_give_a_server_the_same_network(
    worlds: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    kit, host = worlds
    assert kit["interfaces"] == host["interfaces"]


def test_the_kit_sets_no_variable_the_host_does_not(
    worlds: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    kit, host = worlds
    assert set(kit["env"]) - {LINEAGE_VARIABLE} == set(host["env"]) - {LINEAGE_VARIABLE}
    assert kit["token"] == host["token"] == ENV["API_TOKEN"]


def test_a_server_has_a_writable_home_of_its_own_in_both(
    worlds: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """desktop-commander writes its config into HOME at start, npx and uvx their caches."""
    kit, host = worlds
    assert kit["home_writable"] and host["home_writable"]
    if support().available:  # the same paths in both: no tell (sandbox.Place)
        assert kit["home"] == host["home"] == str(SERVER_DATA_PLACE / "home")
        assert kit["tmp"] == host["tmp"] == str(SERVER_DATA_PLACE / "tmp")
    else:
        assert kit["home"].endswith("/mcp-data/look/home")
        assert host["home"].endswith("/mcp-data/look/home")


def test_a_server_sees_only_its_own_data_folder_in_both(
    worlds: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """The kit's scratch folder (its traces, other servers' folders) is hidden as the host's
    data folder is: the sandbox's root is the same in both, with the server's data folder
    at its place and nothing of the kit's or the host's state."""
    kit, host = worlds
    assert kit["around"] == host["around"]
    if support().available:
        assert SERVER_DATA_PLACE.name in kit["around"]
        assert not {"mcp-data", "host-state"} & set(kit["around"])
