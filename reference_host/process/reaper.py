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
import time

import psutil

MANAGED: set[int] = set()
ROUNDS = 10  # a killed tree's processes exit within a few rounds
INTERVAL = 0.05


def reap_orphans() -> int:
    """Reap the zombie children nobody waits for; a pid is reaped only once it was seen a
    zombie twice (a process started meanwhile is registered by then). Returns how many."""
    reaped, seen = 0, set[int]()
    for _ in range(ROUNDS):
        zombies = _orphan_zombies()
        for pid in zombies & seen:
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    reaped += 1
        seen = zombies - seen
        if not zombies:
            break
        time.sleep(INTERVAL)
    return reaped


def _orphan_zombies() -> set[int]:
    found = set()
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if child.pid not in MANAGED and child.status() == psutil.STATUS_ZOMBIE:
                found.add(child.pid)
    return found
