"""Reaping the orphans that come back to a subreaper (spec: host.md#worker-processes-and-cleanup).

The host and the kit are child subreapers (lineage.py), so what a worker leaves behind, and
a sandbox's processes when its PID namespace collapses, are re-parented to them. Nobody waits
for those by pid, so each would stay a zombie for the life of the host. Children that
something does wait for (asyncio's watcher, a Popen) are registered in MANAGED and left alone:
reaping one of them would take its exit status from its owner.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import psutil

MANAGED: set[int] = set()
ROUNDS = 40  # a killed tree's processes exit within a few rounds, later under load
INTERVAL = 0.05


def reap_orphans() -> int:
    """Reap the zombie children nobody waits for; a pid is reaped only once it was seen a
    zombie twice (a process started meanwhile is registered by then). Rounds go on while an
    orphan is being killed: a collapsing PID namespace kills its processes asynchronously,
    so one may turn zombie only after the worker's own exit was seen. Returns how many."""
    reaped, seen = 0, set[int]()
    for _ in range(ROUNDS):
        zombies, dying = _orphans()
        ripe = zombies & seen
        for pid in ripe:
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    reaped += 1
        seen = zombies - seen
        if not seen and not dying:
            if not ripe:
                break
            continue  # all reaped: look again at once for what their end left, no wait
        time.sleep(INTERVAL)
    return reaped


def _orphans() -> tuple[set[int], set[int]]:
    """The unmanaged children that are zombies, and those with a SIGKILL pending."""
    zombies, dying = set(), set()
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if child.pid in MANAGED:
                continue
            if child.status() == psutil.STATUS_ZOMBIE:
                zombies.add(child.pid)
            elif _kill_pending(child.pid):
                dying.add(child.pid)
    return zombies, dying


def _kill_pending(pid: int) -> bool:
    """Whether SIGKILL waits to be delivered to pid (Linux's /proc status; False elsewhere)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    bit = 1 << (signal.SIGKILL - 1)
    return any(
        line.startswith(("SigPnd:", "ShdPnd:")) and int(line.split()[1], 16) & bit
        for line in status.splitlines()
    )
