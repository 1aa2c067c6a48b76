"""Killing what a worker started: its process group, descendants that left the group, and
(Linux) any process still holding the worker's ends of its stdio pipes.

A worker is started in its own session, so its pid is also its process group id; a plain
child stays in the group. A child that left it (setsid, double fork) is found as a
descendant while the worker lives, and afterwards only by the pipes it inherited: such a
holder is what keeps the host from ever seeing EOF, so it is killed as part of the worker.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Collection, Iterator

import psutil

PROC = "/proc"


def kill_group(pgid: int) -> None:
    """SIGKILL the process group (safe after the leader is reaped: the id stays the group's
    while any member lives, and no new process can take it meanwhile)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_tree(pid: int) -> None:
    """SIGKILL the worker's process group and any descendant that left it."""
    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        descendants = []
    kill_group(pid)
    for child in descendants:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()


def kill_pipe_holders(inodes: Collection[int], read_end: Collection[int]) -> list[int]:
    """SIGKILL every other process holding the worker's end of one of these pipes: the write
    end of inodes not in read_end (stdout, stderr), the read end of those in it (stdin).
    Holding the host's end does not count, so no process of the host's own is hit. Returns
    the pids killed; a no-op where there is no /proc."""
    killed = []
    for pid in _holders(set(inodes), set(read_end)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed


def _holders(inodes: set[int], read_end: set[int]) -> Iterator[int]:
    links = {f"pipe:[{inode}]": inode for inode in inodes}
    me = os.getpid()
    try:
        entries = [entry.name for entry in os.scandir(PROC) if entry.name.isdigit()]
    except OSError:
        return
    for name in entries:
        proc = f"{PROC}/{name}"
        if int(name) != me and any(
            _worker_end(proc, fd, inode in read_end) for fd, inode in _pipe_fds(proc, links)
        ):
            yield int(name)


def _pipe_fds(proc: str, links: dict[str, int]) -> Iterator[tuple[str, int]]:
    """(fd, inode) of each of the given pipes the process holds."""
    try:
        fds = os.listdir(f"{proc}/fd")
    except OSError:
        return
    for fd in fds:
        try:
            link = os.readlink(f"{proc}/fd/{fd}")
        except OSError:
            continue
        if link in links:
            yield fd, links[link]


def _worker_end(proc: str, fd: str, read: bool) -> bool:
    """Whether fd is open for reading (read) or for writing (not read), from fdinfo."""
    try:
        with open(f"{proc}/fdinfo/{fd}") as info:
            flags = next(int(line.split()[1], 8) for line in info if line.startswith("flags:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return False
    return (flags & os.O_ACCMODE) == (os.O_RDONLY if read else os.O_WRONLY)
