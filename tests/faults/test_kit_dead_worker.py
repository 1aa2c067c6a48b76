"""A worker that never answers, or writes one endless stdout line, costs the kit one wait and
one worker start: FY-WRK-001 fails naming the cause, and every worker, tool and host item
that needs a working worker is skipped naming the same cause, without starting it again."""

from __future__ import annotations

import shlex
import sys
from typing import Any

import pytest

from conformance.fengyu.raw_worker import RawWorker
from reference_host.process.connection import WorkerConnection
from reference_host.process.launch import WorkerSpec
from tests.conftest import DEADLINES, FIXTURE_PLUGINS

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
        ("FY-WRK-001-never-answers", f"no answer within {DEADLINES.handshake:g} s"),
        ("FY-WRK-001-endless-line", "without a newline; the kit stopped reading it"),
    ],
)
def test_dead_worker_fails_one_requirement_and_is_started_once(
    run_kit, monkeypatch: pytest.MonkeyPatch, fixture: str, cause: str
) -> None:
    """Starts are counted where the kit makes them (the worker's sandbox lets it write
    nowhere the test could count them)."""
    plugin = FIXTURE_PLUGINS / fixture
    command = shlex.join([sys.executable, str(plugin / "backend" / "worker.py")])
    starts: list[str] = []
    started = RawWorker.__init__
    connect = WorkerConnection.start.__func__  # type: ignore[attr-defined]

    def raw(self: RawWorker, spec: WorkerSpec, *args: Any, **kwargs: Any) -> None:
        starts.append(spec.plugin_id)
        started(self, spec, *args, **kwargs)

    async def connection(cls: type, spec: WorkerSpec, *args: Any, **kwargs: Any) -> Any:
        starts.append(spec.plugin_id)
        return await connect(cls, spec, *args, **kwargs)

    monkeypatch.setattr(RawWorker, "__init__", raw)
    monkeypatch.setattr(WorkerConnection, "start", classmethod(connection))

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
    assert len(starts) == 1
