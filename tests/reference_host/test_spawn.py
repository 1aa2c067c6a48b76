"""Starting a worker (reference_host/process/spawn.py) whatever the worker does meanwhile."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from reference_host.process.launch import WorkerSpec
from reference_host.process.spawn import _inode, spawn


async def test_a_pipe_already_closed_has_no_inode_to_hunt_holders_by(tmp_path: Path) -> None:
    """A worker that exits at once can be read to EOF, its pipes closed, before spawn()
    returns (seen under load: 'I/O operation on closed file' as an internal error): such a
    pipe is held by nobody, so its inode is 0, which no pipe has."""
    # the worker waits for its stdin to close: a worker that exits at once may have its
    # pipes closed before spawn() returns, the case this test is about but not its start
    argv = (sys.executable, "-c", "import sys; sys.stdin.read()")
    spec = WorkerSpec("fan.summer.gone", tmp_path, argv, tmp_path / "d")
    spawned = await spawn(spec, limit=1024, lineage="test")
    assert spawned.stdin_inode > 0 and all(spawned.output_inodes)
    stdin = spawned.transport.get_pipe_transport(0)
    assert stdin is not None
    stdin.close()
    await spawned.exited
    spawned.transport.close()
    await asyncio.sleep(0)
    assert [_inode(spawned.transport, fd) for fd in (0, 1, 2)] == [0, 0, 0]
