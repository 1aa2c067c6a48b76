"""A hang's `reproduce:` command looks like a hang: stdin stays open past the tool's timeout.

Closing stdin right after the request ends a FengYu SDK worker soon after (running calls get
3 s, then it exits 0), so the printed command used to end quietly, as if the call had worked.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.fengyu.harness import ToolHarness
from reference_host.process.launch import WorkerSpec
from tests.conftest import DEADLINES

TIMEOUT = 1.0
# Never answers a call; at stdin EOF it says how long stdin stayed open after the call came,
# and exits 0 at once, as an SDK worker does once its grace for running calls is over.
HANGING_WORKER = """\
import sys, time
came = None
for line in sys.stdin:
    came = came or time.monotonic()
print(f"stdin stayed open {time.monotonic() - came:.1f} s after the call", file=sys.stderr)
"""


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[ToolHarness]:
    (tmp_path / "worker.py").write_text(HANGING_WORKER, encoding="utf-8")
    spec = WorkerSpec("fan.summer.hang", tmp_path, (sys.executable, "worker.py"), tmp_path / "d")
    harness = ToolHarness(spec, deadlines=DEADLINES)
    yield harness
    harness.close()


def test_a_hang_reproduction_keeps_stdin_open_past_the_timeout(harness: ToolHarness) -> None:
    request = {"jsonrpc": "2.0", "id": "repro-1", "method": "greet", "params": {"name": "a"}}
    command = harness.reproduction(request, TIMEOUT)

    done = subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120
    )

    assert done.stdout == ""  # nothing came back
    (report,) = done.stderr.splitlines()
    open_for = float(report.split()[3])
    assert open_for > TIMEOUT, command  # `sleep` guarantees this lower bound


def test_other_reproductions_close_stdin_after_the_request(harness: ToolHarness) -> None:
    """An answer or a crash needs no wait: the command ends as soon as the worker does."""
    request = {"jsonrpc": "2.0", "id": "repro-1", "method": "greet", "params": {}}
    line = json.dumps(request, separators=(",", ":"))
    worker = harness.spec.shell_command().partition(" && ")[2]

    assert harness.reproduction(request).endswith(f"&& printf '%s\\n' '{line}' | {worker}")
