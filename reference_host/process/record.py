"""The host's record of worker lineages that may still have processes, one file each.

A file is written before a worker starts and removed once its lineage has been ended, so a
host that was killed (SIGKILL, power loss) leaves the files of the workers it ran; the next
host on the same data folder ends those lineages at start. The token is what identifies the
processes: only a process that inherited it carries it, so a pid reused since is never hit.
The writer's pid and start time only tell whether that host still runs (its workers are
then not stale).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import uuid
from pathlib import Path
from typing import Any

import psutil

from plugin_spec.json_files import JsonFileError, read_bounded
from reference_host.process.lineage import TOKEN, end_lineage

log = logging.getLogger("reference_host.worker")
_OPEN: set[str] = set()  # owners of the records open in this process


class LineageRecord:
    """Tokens of one host's workers whose processes have not been ended yet."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.owner = uuid.uuid4().hex
        _OPEN.add(self.owner)

    def add(self, token: str, plugin_id: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        me = psutil.Process()
        entry = {
            "plugin": plugin_id,
            "owner": self.owner,
            "host_pid": me.pid,
            "host_started": me.create_time(),
        }
        (self.folder / token).write_text(json.dumps(entry), encoding="utf-8")

    def remove(self, token: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.folder / token).unlink()

    def end(self, token: str) -> list[int]:
        """End the lineage and forget it; returns the pids killed."""
        killed = end_lineage(token)
        self.remove(token)
        return killed

    def end_stale(self) -> list[int]:
        """End the recorded lineages of hosts that no longer run (a host killed earlier);
        returns the pids killed."""
        killed = []
        for token in self._tokens():
            if _owner_runs(self._entry(token)):
                continue
            pids = self.end(token)
            if pids:
                log.warning("ended %s, left running by an earlier host's worker", pids)
            killed += pids
        return killed

    def close(self) -> list[int]:
        """End what is still recorded as this host's (the host is closing)."""
        killed = [pid for token in self._tokens() if self._mine(token) for pid in self.end(token)]
        _OPEN.discard(self.owner)
        return killed

    def _tokens(self) -> list[str]:
        try:
            return sorted(p.name for p in self.folder.iterdir() if TOKEN.match(p.name))
        except FileNotFoundError:
            return []

    def _entry(self, token: str) -> dict[str, Any]:
        """The entry of a record file; {} when it is not a small regular file of JSON. The
        folder lies in the data folder a worker may reach, so a FIFO there (which a plain
        read waits on forever, at host start) or a huge file must not stop the host."""
        try:
            entry = json.loads(read_bounded(self.folder / token, token))
        except (JsonFileError, ValueError):
            return {}
        return entry if isinstance(entry, dict) else {}

    def _mine(self, token: str) -> bool:
        return self._entry(token).get("owner") == self.owner


def _owner_runs(entry: dict[str, Any]) -> bool:
    """Whether the host that wrote entry still runs: an open record of this process, or
    another process with the recorded pid and start time."""
    if entry.get("owner") in _OPEN:
        return True
    pid, started = entry.get("host_pid"), entry.get("host_started")
    if not isinstance(pid, int) or pid == os.getpid():
        return False
    try:
        return bool(psutil.Process(pid).create_time() == started)
    except (psutil.Error, ValueError):
        return False
