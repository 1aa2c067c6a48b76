"""The host's record of worker lineages (DATA/workers) is read at every host start, from a
folder a worker can reach: what is planted there must neither stop the host nor make it
kill a process that does not carry the recorded token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import psutil

from reference_host.process.lineage import new_token
from reference_host.process.record import LineageRecord

START_GUARD = 30.0  # a hang guard: a record read that waits for a FIFO's writer never ends


def end_stale_in_thread(record: LineageRecord) -> tuple[threading.Thread, list[list[int]]]:
    killed: list[list[int]] = []
    thread = threading.Thread(target=lambda: killed.append(record.end_stale()), daemon=True)
    thread.start()
    thread.join(timeout=START_GUARD)
    return thread, killed


def test_a_fifo_planted_as_a_record_does_not_stop_the_host_start(tmp_path: Path) -> None:
    folder = tmp_path / "workers"
    folder.mkdir()
    fifo = folder / new_token()
    os.mkfifo(fifo)
    (folder / new_token()).write_bytes(b"\xff" * 10)  # not JSON either
    thread, killed = end_stale_in_thread(LineageRecord(folder))
    blocked = thread.is_alive()
    if blocked:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # let the thread end
        thread.join(timeout=START_GUARD)
    assert not blocked and killed == [[]], "reading the record waited on a FIFO"
    assert list(folder.iterdir()) == []


def test_a_forged_record_kills_only_what_carries_its_token(tmp_path: Path) -> None:
    """A record names a token, never a pid: one forged to name a running process (as its
    host) or a dead host only leads to the processes carrying that token."""
    folder = tmp_path / "workers"
    folder.mkdir()
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        me = psutil.Process(bystander.pid)
        forged = {"owner": "x", "host_pid": 1, "host_started": 0.0, "pid": bystander.pid}
        (folder / new_token()).write_text(json.dumps(forged))
        (folder / new_token()).write_text(json.dumps({"host_pid": me.pid, "host_started": 0}))
        thread, killed = end_stale_in_thread(LineageRecord(folder))
        assert not thread.is_alive() and killed == [[]]
        assert bystander.poll() is None, "a forged record killed an unrelated process"
    finally:
        bystander.kill()
        bystander.wait(10)
