"""Declared resources of a worker (backend.resources), watched on its whole process tree.

FengYu samples a worker's tree once a second: the number of processes (the worker and all
its descendants) against maxProcesses, and their summed resident memory against memoryMb.
The first sample over a limit is an overrun; a host then fails the pending calls with a
RESOURCE_LIMIT error and kills the tree (connection.py). The tree here also holds what left
it (setsid, double fork): every process carrying the worker's lineage token (lineage.py).
A process that exited but is not reaped yet (a zombie) runs nothing and holds no memory, so
it is not counted; one that cannot be read is skipped, as FengYu skips it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from plugin_spec.fengyu_decls import ResourceLimits
from reference_host.process.lineage import carriers

MIB = 1024 * 1024
FENGYU_INTERVAL = 1.0  # seconds between two samples in FengYu


@dataclass(frozen=True)
class LimitPolicy:
    """How a process manager watches declared resources: every interval seconds, and, when
    enforce is False (the kit), an overrun is only reported and the worker keeps running."""

    interval: float = FENGYU_INTERVAL
    enforce: bool = True


ENFORCED = LimitPolicy()  # a host's: FengYu's rate, overruns end the worker


@dataclass(frozen=True)
class ResourceWatch:
    """What one worker start is watched for: its declared limits, the manager's policy, and
    a callable told of each overrun (the kit records them for FY-WRK-020)."""

    limits: ResourceLimits
    policy: LimitPolicy = ENFORCED
    report: Callable[[Overrun], None] | None = None


@dataclass(frozen=True)
class Usage:
    """One sample of a worker's tree."""

    processes: int
    rss_bytes: int

    @property
    def memory_mb(self) -> int:
        """Resident memory in whole MiB, rounded up: any byte over the limit is over it."""
        return -(-self.rss_bytes // MIB)


@dataclass(frozen=True)
class Overrun:
    """A limit the tree went over: which one (memory or processes), what a sample saw and
    what the manifest declares (MiB for memory)."""

    limit: str
    seen: int
    declared: int

    @property
    def field(self) -> str:
        """The manifest field of the limit."""
        return "backend.resources." + ("memoryMb" if self.limit == "memory" else "maxProcesses")

    @property
    def message(self) -> str:
        if self.limit == "memory":
            return f"Worker exceeded its memory limit ({self.seen}/{self.declared} MiB)"
        return f"Worker exceeded its process limit ({self.seen}/{self.declared})"


def tree_usage(
    pid: int, lineage: str | None = None, machinery: frozenset[str] = frozenset()
) -> Usage:
    """The live processes of the worker's tree (the worker, its descendants and, on Linux,
    the carriers of its lineage token) and their summed RSS, but for the processes that run
    machinery (the sandbox's and the kit's tracer: a host's, not the plugin's)."""
    members: dict[int, psutil.Process] = {}
    try:
        root = psutil.Process(pid)
        for process in (root, *root.children(recursive=True)):
            members[process.pid] = process
    except psutil.Error:  # gone, or not ours to read: the lineage scan still finds the rest
        pass
    for carrier in carriers(lineage) if lineage else ():
        if carrier not in members:
            with contextlib.suppress(psutil.Error):
                members[carrier] = psutil.Process(carrier)
    processes, rss = 0, 0
    for process in members.values():
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                continue
            if machinery and process.exe() in machinery:
                continue
            rss += process.memory_info().rss
        except psutil.Error:
            continue
        processes += 1
    return Usage(processes, rss)


def overruns(usage: Usage, limits: ResourceLimits) -> list[Overrun]:
    """The limits a sample goes over, the process count first."""
    found = []
    if limits.max_processes is not None and usage.processes > limits.max_processes:
        found.append(Overrun("processes", usage.processes, limits.max_processes))
    if limits.memory_mb is not None and usage.rss_bytes > limits.memory_mb * MIB:
        found.append(Overrun("memory", usage.memory_mb, limits.memory_mb))
    return found


async def watch_tree(
    pid: int,
    lineage: str | None,
    limits: ResourceLimits,
    interval: float,
    on_overrun: Callable[[Overrun], bool],
    machinery: frozenset[str] = frozenset(),
) -> None:
    """Sample the tree every interval seconds until the task is cancelled, or until
    on_overrun, called with each overrun, returns False (stop watching). Each limit is
    reported once: the first sample over it."""
    reported: set[str] = set()
    while True:
        usage = await asyncio.to_thread(tree_usage, pid, lineage, machinery)
        for found in overruns(usage, limits):
            if found.limit not in reported:
                reported.add(found.limit)
                if not on_overrun(found):
                    return
        await asyncio.sleep(interval)
