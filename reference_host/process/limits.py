"""Declared resources of a worker (backend.resources), watched on its whole process tree.

FengYu samples a worker's tree once a second: the number of processes (the worker and all
its descendants) against maxProcesses, and their summed resident memory against memoryMb.
The first sample over a limit is an overrun; a host then fails the pending calls with a
RESOURCE_LIMIT error and kills the tree (connection.py). The tree here also holds what left
it (setsid, double fork): every process carrying the worker's lineage token (lineage.py).
A process that exited but is not reaped yet (a zombie) runs nothing and holds no memory, so
it is not counted; one that cannot be read is skipped, as FengYu skips it.

A host also holds every worker to its bounds (bounds.py), declared resources or not: the
process count (where the manifest declares no maxProcesses) and the bytes its data folder
takes on disk, sampled here at the same rate, with the same RESOURCE_LIMIT. The kit's policy
leaves them out: FY-WRK-020 judges what the manifest declares.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from plugin_spec.fengyu_decls import ResourceLimits
from reference_host.process.bounds import WorkerLimits
from reference_host.process.lineage import carriers

MIB = 1024 * 1024
FENGYU_INTERVAL = 1.0  # seconds between two samples in FengYu
BLOCK = 512  # st_blocks counts these
MAX_ENTRIES = 200_000  # entries of a data folder one sample reads at most


@dataclass(frozen=True)
class LimitPolicy:
    """How a process manager watches declared resources: every interval seconds, and, when
    enforce is False (the kit), an overrun is only reported and the worker keeps running;
    bounds: the host's bounds (bounds.py) are watched too."""

    interval: float = FENGYU_INTERVAL
    enforce: bool = True
    bounds: bool = True


ENFORCED = LimitPolicy()  # a host's: FengYu's rate, overruns end the worker


@dataclass(frozen=True)
class ResourceWatch:
    """What one worker start is watched for: its declared limits, the manager's policy, and
    a callable told of each overrun (the kit records them for FY-WRK-020)."""

    limits: ResourceLimits
    policy: LimitPolicy = ENFORCED
    report: Callable[[Overrun], None] | None = None

    @property
    def watches(self) -> bool:
        """Whether there is anything to sample."""
        return bool(self.limits) or self.policy.bounds


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
    """A limit the tree went over: which one (memory, processes or data), what a sample saw
    and the limit (MiB for memory, bytes for data): the manifest's, or the host's bound where
    bound is set (the manifest declares none; data is always the host's)."""

    limit: str
    seen: int
    declared: int
    bound: bool = False

    @property
    def field(self) -> str:
        """The manifest field of the limit, or the host's --worker-limit name for a bound."""
        if self.bound:
            return "--worker-limit " + ("data" if self.limit == "data" else "processes")
        return "backend.resources." + ("memoryMb" if self.limit == "memory" else "maxProcesses")

    @property
    def message(self) -> str:
        if self.limit == "memory":
            return f"Worker exceeded its memory limit ({self.seen}/{self.declared} MiB)"
        if self.limit == "data":
            return (
                f"Worker exceeded its data folder limit ({self.seen}/{self.declared} bytes; "
                "the host's --worker-limit data)"
            )
        if self.bound:
            return (
                f"Worker exceeded its process limit ({self.seen}/{self.declared}; the host's "
                "--worker-limit processes, as the manifest declares no maxProcesses)"
            )
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


def folder_bytes(folder: Path) -> int:
    """The bytes a folder's tree takes on disk (allocated blocks, as du counts them; a hard
    link once), without following links or leaving its file system; at most MAX_ENTRIES
    entries are read, so one sample stays bounded (what is past them is not counted)."""
    try:
        device = os.lstat(folder).st_dev
    except OSError:
        return 0
    total, entries = 0, 0
    seen: set[tuple[int, int]] = set()
    pending = [str(folder)]
    while pending and entries < MAX_ENTRIES:
        try:
            with os.scandir(pending.pop()) as listing:
                for entry in listing:
                    entries += 1
                    if entries > MAX_ENTRIES:
                        break
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if info.st_dev != device or (info.st_dev, info.st_ino) in seen:
                        continue
                    if info.st_nlink > 1:
                        seen.add((info.st_dev, info.st_ino))
                    total += info.st_blocks * BLOCK
                    if stat.S_ISDIR(info.st_mode):
                        pending.append(entry.path)
        except OSError:
            continue
    return total


def data_overrun(folder: Path | None, bounds: WorkerLimits | None) -> Overrun | None:
    """The data folder over its bound, sampled now; None when it is not (or not watched)."""
    if folder is None or bounds is None:
        return None
    used = folder_bytes(folder)
    return Overrun("data", used, bounds.data_bytes, True) if used > bounds.data_bytes else None


def overruns(
    usage: Usage, limits: ResourceLimits, bounds: WorkerLimits | None = None
) -> list[Overrun]:
    """The limits a sample goes over, the process count first: the declared limits, and
    the bound on processes where none is declared (bounds None: not watched)."""
    found = []
    if limits.max_processes is not None and usage.processes > limits.max_processes:
        found.append(Overrun("processes", usage.processes, limits.max_processes))
    elif limits.max_processes is None and bounds is not None and usage.processes > bounds.processes:
        found.append(Overrun("processes", usage.processes, bounds.processes, True))
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
    bounds: WorkerLimits | None = None,
    data: Path | None = None,
) -> None:
    """Sample the tree every interval seconds until the task is cancelled, or until
    on_overrun, called with each overrun, returns False (stop watching). Each limit is
    reported once: the first sample over it. bounds: the host's bounds, watched on the tree
    and on the data folder (None: only what is declared)."""
    reported: set[str] = set()
    while True:
        usage = await asyncio.to_thread(tree_usage, pid, lineage, machinery)
        found_data = await asyncio.to_thread(data_overrun, data, bounds)
        for found in [*overruns(usage, limits, bounds), *([found_data] if found_data else [])]:
            if found.limit not in reported:
                reported.add(found.limit)
                if not on_overrun(found):
                    return
        await asyncio.sleep(interval)
