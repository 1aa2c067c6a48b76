"""An MCP server cannot make the host write or read a file of its choosing through the log of
its stderr (reference_host/mcp/stderr_log.py).

A server turned `stderr.log` in its writable data folder into a link to a file outside and
exited; at the next start the host appended the server's stderr to the link's target and
quoted the target's end in the error that reaches the model.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from reference_host.mcp.config import McpConfigError, ServerConfig
from reference_host.mcp.launch import Launch, server_data
from reference_host.mcp.mount import MountedServer
from reference_host.mcp.stderr_log import log_path, open_log, tail
from reference_host.process.sandbox import support

VICTIM = "the victim's own words\n"
FAILING = "import sys; print('server: written to stderr', file=sys.stderr); sys.exit(1)"


async def test_a_link_planted_in_the_data_folder_is_not_followed(tmp_path: Path) -> None:
    """The link is planted where the server can write (its data folder, as the server did),
    between two starts; the host neither appends to its target nor quotes it."""
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM)
    state = tmp_path / "host"
    config = ServerConfig("planter", sys.executable, ("-c", FAILING), {}, tmp_path)
    hidden = (state.resolve(),) if support().available else None
    server = MountedServer(Launch(config, server_data(state, "planter"), hidden))
    errors = []
    for _ in range(3):
        link = server.launch.data_dir / "stderr.log"
        if link.parent.is_dir():
            link.unlink(missing_ok=True)
            link.symlink_to(victim)
        with pytest.raises(McpConfigError) as raised:
            await server.mount()
        errors.append(str(raised.value))
    assert victim.read_text() == VICTIM
    assert not any("victim" in error for error in errors), errors
    assert "server: written to stderr" in errors[-1]
    assert not server.stderr.is_relative_to(server.launch.data_dir)


def test_the_log_is_never_opened_through_a_link(tmp_path: Path) -> None:
    """Where the log lies is the host's, but a link there is refused all the same."""
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM)
    log = log_path(tmp_path / "data")
    log.symlink_to(victim)
    with pytest.raises(OSError):
        open_log(log)
    assert tail(log, 5) == []
    assert victim.read_text() == VICTIM


def test_the_tail_is_read_from_the_end_only(tmp_path: Path) -> None:
    """A server may write gigabytes to stderr; the host reads its last 64 KiB."""
    log = log_path(tmp_path / "data")
    with open_log(log) as file:
        file.write(b"x" * 10_000_000 + b"\nfirst\n\n  \nsecond\nthird")
    assert tail(log, 2) == ["second", "third"]
    assert os.path.getsize(log) > 10_000_000
