"""Plugins as FengYu 4 makes them pass the kit (spec: fengyu-worker.md#the-handshake): a worker
that answers as FengYu's own Python SDK does, in strict mode, with nothing reported."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from tests.conftest import FIXTURE_PLUGINS

SDK_LIKE = FIXTURE_PLUGINS / "_fengyu-python-sdk"


def test_a_worker_answering_as_fengyus_python_sdk_passes_strict(run_kit, tmp_path: Path) -> None:
    """-32600 for unparsable input, -32000 METHOD_NOT_FOUND, -32603 INTERNAL_ERROR, answered
    handshakes and cancels, handlers without validation: all of it is FengYu's own SDK."""
    plugin = shutil.copytree(SDK_LIKE, tmp_path / SDK_LIKE.name)
    result = run_kit([plugin], "--conformance-strict")
    assert result.reported() == set(), result.result.stdout.str()
    statuses = result.statuses()
    for rid in ("FY-WRK-002", "FY-WRK-004", "FY-WRK-011", "FY-WRK-013", "FY-WRK-014"):
        assert statuses[rid] == "passed", rid
    assert statuses["FY-TOOL-005"] == "passed"


def test_a_parse_error_without_its_null_id_passes(run_kit, tmp_path: Path) -> None:
    """FengYu's Go SDK drops the null id of a parse error (omitempty); FengYu reads past it."""
    plugin = shutil.copytree(SDK_LIKE, tmp_path / SDK_LIKE.name)
    command = f"{shlex.quote(sys.executable)} -u backend/worker.py go"
    result = run_kit([plugin], "-m", "worker", "--worker-cmd", command)
    statuses = result.statuses()
    assert (statuses["FY-WRK-002"], statuses["FY-WRK-007"]) == ("passed", "passed")


def test_a_linked_worker_fails_fy_wrk_012_and_is_not_run(run_kit, tmp_path: Path) -> None:
    """The kit judges what a host would install: a runtime file that is a link (here to a
    working worker outside the package) is FY-WRK-012's finding, and nothing is started."""
    plugin = shutil.copytree(SDK_LIKE, tmp_path / SDK_LIKE.name)
    outside = tmp_path / "outside.py"
    (plugin / "backend" / "worker.py").rename(outside)
    (plugin / "backend" / "worker.py").symlink_to(outside)
    result = run_kit([plugin], "-m", "worker")
    assert result.reported() == {"FY-WRK-012"}
    (finding,) = result.findings("FY-WRK-012")
    assert "backend/worker.py is a symbolic link" in finding["message"]
    assert result.statuses()["FY-WRK-001"] == "skipped"
