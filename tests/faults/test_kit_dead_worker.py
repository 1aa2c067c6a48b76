"""A worker that never answers, or writes one endless stdout line, costs the kit one wait and
one worker start: FY-WRK-001 fails naming the cause, and every worker, tool and host item
that needs a working worker is skipped naming the same cause, without starting it again."""

from __future__ import annotations

import shlex
import sys

import pytest

from tests.conftest import FIXTURE_PLUGINS

DEPENDENT_SUITES = ("FY-WRK-", "FY-TOOL-", "FY-HOST-")
# Items that have nothing to check whatever the worker does, and so are not applicable before
# they look at it: no file parameter (FY-HOST-002), no declared resources (FY-WRK-020), no
# sensitive parameter (FY-TOOL-004).
STATIC_SKIPS = (
    "no tool has exactly one file-class parameter",
    "the manifest declares no backend.resources",
    "the tool has no parameter marked x-fengyu-sensitive",
)
# FY-WRK-012 looks at the package only: the worker's file is there.
STATIC_CHECKS = ("FY-WRK-001", "FY-WRK-012")


@pytest.mark.parametrize(
    ("fixture", "cause"),
    [
        ("FY-WRK-001-never-answers", "no answer within 10 s"),
        ("FY-WRK-001-endless-line", "without a newline; the kit stopped reading it"),
    ],
)
def test_dead_worker_fails_one_requirement_and_is_started_once(
    run_kit, tmp_path, fixture: str, cause: str
) -> None:
    plugin = FIXTURE_PLUGINS / fixture
    starts = tmp_path / "starts.log"
    command = shlex.join([sys.executable, str(plugin / "backend" / "worker.py"), str(starts)])

    result = run_kit([plugin], "--worker-cmd", command)

    records = result.report["results"]
    failed = [r for r in records if r["status"] == "failed"]
    assert [r["requirement"] for r in failed] == ["FY-WRK-001"]
    assert cause in failed[0]["findings"][0]["message"]
    dependent = [
        r
        for r in records
        if r["requirement"].startswith(DEPENDENT_SUITES)
        and r["requirement"] not in STATIC_CHECKS
        and not r["reason"].startswith(STATIC_SKIPS)
    ]
    assert len(dependent) >= 12
    assert {r["status"] for r in dependent} == {"skipped"}
    assert {tuple(r["blocked_by"]) for r in dependent} == {("FY-WRK-001",)}
    (reason,) = {r["reason"] for r in dependent}
    assert reason.startswith("the worker did not answer its first request (FY-WRK-001): ")
    assert cause in reason
    assert len(starts.read_text().split()) == 1
