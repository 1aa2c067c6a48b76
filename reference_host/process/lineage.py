"""Ending everything a worker started, daemons that left its group and were re-parented too.

A process group and the live descendants are not enough: a child that calls setsid() and
forks again is neither in the worker's group nor, once the worker exits, its descendant.
What every descendant does keep is the environment it inherited, so each worker is started
with a token of its own in LINEAGE_VARIABLE. Once the worker has exited, every process of
our uid whose environment holds that token is stopped (so none can fork meanwhile), then
killed, then reaped when it is ours (see become_subreaper).

Linux only: the environment is read from /proc/<pid>/environ. Elsewhere nothing is found,
and the process group kill is all that remains. A process that rewrites its own environment
and leaves the group is out of reach.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import secrets
import signal
import sys
import time

from reference_host.process.identity import dropped_id

LINEAGE_VARIABLE = "REFERENCE_HOST_LINEAGE"
TOKEN = re.compile(r"^[0-9a-f]{32}$")
PROC = "/proc"
ROUNDS = 50  # scans while stopping: each catches what forked during the one before
REAP_WAIT = 2.0  # a SIGKILLed process is gone at once unless the kernel holds it
PR_SET_CHILD_SUBREAPER = 36


def new_token() -> str:
    """A fresh random token for one worker start (what TOKEN matches)."""
    return secrets.token_hex(16)


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux prctl): orphans of the workers it starts
    are re-parented to it rather than to init, so what end_lineage kills is reaped here
    even where init reaps nothing (a container whose first process is a shell). Whether it
    took effect; False on other platforms."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def carriers(token: str) -> list[int]:
    """Pids of our uid or the sandbox's (this process excluded) whose environment holds
    the token."""
    if not sys.platform.startswith("linux"):
        return []
    entry_bytes = f"\0{LINEAGE_VARIABLE}={token}\0".encode()
    me = os.getpid()
    uids = {os.getuid(), *([dropped] if (dropped := dropped_id()) is not None else [])}
    try:
        names = [entry.name for entry in os.scandir(PROC) if entry.name.isdigit()]
    except OSError:
        return []
    found = []
    for name in names:
        path = f"{PROC}/{name}"
        try:
            if int(name) == me or os.stat(path).st_uid not in uids:
                continue
            with open(f"{path}/environ", "rb") as environ:
                data = environ.read()
        except OSError:
            continue
        if entry_bytes in b"\0" + data:
            found.append(int(name))
    return found


def end_lineage(token: str) -> list[int]:
    """Stop every process carrying the token until a scan finds no new one, then SIGKILL
    and reap them; returns their pids. Call it once the worker itself has been reaped."""
    stopped: list[int] = []
    for _ in range(ROUNDS):
        fresh = [pid for pid in carriers(token) if pid not in stopped]
        if not fresh:
            break
        for pid in fresh:
            _signal(pid, signal.SIGSTOP)
        stopped += fresh
    for pid in stopped:
        _signal(pid, signal.SIGKILL)
    _reap(stopped)
    return stopped


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def _reap(pids: list[int]) -> None:
    """Collect the exit of each of pids that is our child (a re-parented orphan), so no
    zombie is left; others are their parents' business."""
    deadline = time.monotonic() + REAP_WAIT
    waiting = list(pids)
    while waiting:
        for pid in list(waiting):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid  # not ours
            if done:
                waiting.remove(pid)
        if not waiting or time.monotonic() > deadline:
            return
        time.sleep(0.01)
