"""The kit's raw worker handle: writes never wait on a worker that stopped reading."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from conformance.fengyu.raw_worker import RawWorker
from reference_host.process.launch import WorkerSpec

BIG = [b"x" * (4 * 1024 * 1024) + b"\n"]  # far more than a pipe buffer holds


def worker(tmp_path: Path, code: str) -> RawWorker:
    spec = WorkerSpec("fan.summer.raw", tmp_path, (sys.executable, "-c", code), tmp_path / "d")
    return RawWorker(spec)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import sys\nfor _ in sys.stdin.buffer: pass", True),  # reads everything
        ("import os, time\nos.close(0)\ntime.sleep(60)", False),  # closed its stdin
        ("import time\ntime.sleep(60)", None),  # alive, never reads: the pipe fills
    ],
    ids=["reads", "closed-stdin", "never-reads"],
)
def test_a_big_write_ends_by_the_deadline(tmp_path: Path, code: str, expected: bool | None) -> None:
    raw = worker(tmp_path, code)
    # Generous where the write ends by itself; short where only the deadline ends it.
    seconds = 1.0 if expected is None else 30.0
    try:
        assert raw.send(BIG, time.monotonic() + seconds) is expected
        if expected is None:
            assert not raw.alive()  # killed, which ended the write
    finally:
        raw.kill()


def test_kill_twice_is_harmless(tmp_path: Path) -> None:
    raw = worker(tmp_path, "import time\ntime.sleep(60)")
    raw.kill()
    raw.kill()
    assert not raw.alive()


def test_rest_reads_what_the_worker_writes_at_its_exit(tmp_path: Path) -> None:
    """A line flushed only at exit is read too: stdout is read to its end, not to EOF on stdin."""
    code = (
        "import atexit, sys\n"
        "out = open(1, 'w', buffering=8192, closefd=False)\n"
        "print('banner at exit', file=out)\n"
        "atexit.register(out.flush)\n"
        "sys.stdin.read()\n"
    )
    raw = worker(tmp_path, code)
    try:
        assert raw.close_stdin(30) == 0
        assert [line.text for line in raw.rest(30)] == ["banner at exit"]
        assert raw.at_eof
    finally:
        raw.kill()


def test_an_exit_is_told_with_its_code_and_stderr(tmp_path: Path) -> None:
    """A worker that dies at once is reported as exited, with its stderr read to the end."""
    raw = worker(tmp_path, "import sys\nsys.stderr.write('cannot start\\n')\nsys.exit(1)")
    try:
        assert raw.next_line(time.monotonic() + 30) is None
        assert raw.at_eof
        assert raw.exit_code(30) == 1
        assert "cannot start" in raw.stderr
    finally:
        raw.kill()
