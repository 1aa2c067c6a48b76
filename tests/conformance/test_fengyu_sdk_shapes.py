"""Plugins built with FengYu's own Go SDK fail no MUST (issue 36): every wire shape FengYu
reads past or reads as its SDK meant it is at most a SHOULD warning, each under its own
requirement (spec: fengyu-worker.md#errors-and-error-codes,
fengyu-worker.md#request-ids-and-notifications)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import FIXTURE_PLUGINS, copy_plugin

# No outputSchema on greet: FengYu takes its null result, so FY-TOOL-001 passes.
NO_OUTPUT_SCHEMA = FIXTURE_PLUGINS / "FY-WRK-021-go-sdk-leaves-out-null-result"
GO_SDK_WORKER = """\
import sys
from misbehaving_worker import run

sys.dont_write_bytecode = True
print('@fengyu-log:{"level": "INFO", "message": "ready"}', file=sys.stderr, flush=True)
run(
    {"greet": lambda params: None},
    omit_null_result=True,
    go_request_errors=True,
    go_notification_replies=True,
    ids_as_doubles="go",
    answer_order="threads",
)
"""


def test_a_worker_answering_as_fengyus_go_sdk_fails_no_must(run_kit, tmp_path: Path) -> None:
    """A handler's `return nil, nil` (no result member), errors without id, answers to the
    notifications FengYu never sends, ids through float64, a goroutine per request: four
    SHOULD warnings, each naming the SDK, and nothing failed."""
    plugins = tmp_path / "plugins"
    folder = copy_plugin(NO_OUTPUT_SCHEMA, plugins)
    shutil.copy2(FIXTURE_PLUGINS / "misbehaving_worker.py", plugins)
    (folder / "expect.toml").unlink()
    (folder / "backend" / "worker.py").write_text(GO_SDK_WORKER, encoding="utf-8")

    result = run_kit([folder])

    statuses = result.statuses()
    assert {rid for rid, status in statuses.items() if status == "failed"} == set()
    warned = {"FY-WRK-021", "FY-WRK-022", "FY-WRK-023", "FY-WRK-024"}
    assert result.reported() == warned, result.result.stdout.str()
    assert {statuses[rid] for rid in warned} == {"warned"}
    for rid in ("FY-WRK-002", "FY-WRK-003", "FY-WRK-005", "FY-WRK-006", "FY-WRK-007"):
        assert statuses[rid] == "passed", rid
    assert statuses["FY-TOOL-001"] == "passed"
    fixes = {rid: " ".join(f["fix"] for f in result.findings(rid)) for rid in warned}
    assert "return nil, nil" in fixes["FY-WRK-021"]
    assert "omitempty" in fixes["FY-WRK-022"]
    assert "float64" in fixes["FY-WRK-023"]
    assert "Go SDK" in fixes["FY-WRK-024"]
