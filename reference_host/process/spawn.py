"""Starting a worker so that its exit is seen when it happens, not when its pipes close.

On Python 3.11 asyncio's Process.wait() resolves only once the process has exited and every
pipe has closed, so a child that inherited the worker's stdout hides a crash (and blocks a
kill) for as long as it lives. The protocol here resolves `exited` on the child watcher's
exit notice alone; the pipes are drained and closed separately, with a bound.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from reference_host.process.launch import WorkerSpec
from reference_host.process.reaper import MANAGED
from reference_host.process.stdout_lines import StdoutLines


class ExitWatchingProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's stream protocol plus a future resolved the moment the process exits; stdout
    goes to a StdoutLines (its lines are handed on from the pipe's callback), stderr to
    the Process's stream."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()
        self.lines = StdoutLines(limit, loop)

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd == 1:
            assert isinstance(data, bytes)
            self.lines.feed(data)
        else:
            super().pipe_data_received(fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.lines.feed_eof()
        super().pipe_connection_lost(fd, exc)

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


@dataclass(frozen=True)
class Spawned:
    """A started worker: the asyncio Process (stdin and stderr; its stdout stream stays
    empty), the lines of its stdout, its transport (to close the pipes without waiting for
    other holders), its exit future and the inodes of its stdio pipes."""

    process: asyncio.subprocess.Process
    stdout: StdoutLines
    transport: asyncio.SubprocessTransport
    exited: asyncio.Future[None]
    stdin_inode: int
    output_inodes: tuple[int, int]


async def spawn(spec: WorkerSpec, limit: int, lineage: str) -> Spawned:
    """Start the worker in its own session (so its pid is its process group) with piped
    stdio, its environment marked with the lineage token; raises OSError when it cannot be
    started."""
    loop = asyncio.get_running_loop()
    with spec.started_command() as (argv, fds):
        transport, protocol = await loop.subprocess_exec(
            lambda: ExitWatchingProtocol(limit, loop),
            *argv,
            cwd=spec.root,
            env=spec.environment(lineage),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            pass_fds=fds,
        )
    inodes = [_inode(transport, fd) for fd in (0, 1, 2)]
    pid = transport.get_pid()
    MANAGED.add(pid)  # asyncio's watcher reaps it; the orphan reaper must not
    protocol.exited.add_done_callback(lambda _: MANAGED.discard(pid))
    return Spawned(
        asyncio.subprocess.Process(transport, protocol, loop),
        protocol.lines,
        transport,
        protocol.exited,
        inodes[0],
        (inodes[1], inodes[2]),
    )


def _inode(transport: asyncio.SubprocessTransport, fd: int) -> int:
    """The inode of the worker's stdio pipe fd, or 0 (no pipe's) when asyncio has closed its
    end already: a worker that exits at once can be read to EOF before spawn() returns. A pipe
    is closed only once its other end is gone in every process, so none holds it any more."""
    pipe = transport.get_pipe_transport(fd)
    assert pipe is not None
    try:
        return os.fstat(pipe.get_extra_info("pipe").fileno()).st_ino
    except ValueError:  # the file object was closed with the pipe
        return 0
