"""fengyu_worker's Jobs: background jobs with logs, results and cooperative cancel."""

from __future__ import annotations

import threading

import pytest

from fengyu_worker import JobHandle, Jobs

WAIT = 30  # a bound on waiting for a job's thread, generous for a loaded machine


def test_a_job_logs_and_returns_its_result() -> None:
    jobs = Jobs()

    def work(handle: JobHandle) -> dict:
        for i in range(3):
            handle.log(f"step {i}")
        return {"steps": 3}

    job = jobs.start(work)
    assert jobs.wait(job, WAIT)
    assert jobs.snapshot(job) == {
        "jobId": job,
        "status": "succeeded",
        "logs": ["step 0", "step 1", "step 2"],
        "cursor": 3,
        "done": True,
        "result": {"steps": 3},
    }
    assert jobs.snapshot(job, cursor=2)["logs"] == ["step 2"]
    assert jobs.snapshot(job, cursor=99) | {"result": None} == {
        "jobId": job,
        "status": "succeeded",
        "logs": [],
        "cursor": 3,
        "done": True,
        "result": None,
    }
    assert jobs.snapshot(job, cursor=0, limit=2)["cursor"] == 2
    assert jobs.running() == []
    assert jobs.cancel(job) is False


def test_a_raising_job_fails_with_its_message() -> None:
    jobs = Jobs()

    def work(handle: JobHandle) -> None:
        raise ValueError("no such sheet")

    job = jobs.start(work)
    jobs.wait(job, WAIT)
    snapshot = jobs.snapshot(job)
    assert (snapshot["status"], snapshot["error"], snapshot["done"]) == (
        "failed",
        "no such sheet",
        True,
    )
    assert "result" not in snapshot


def test_cancel_is_cooperative() -> None:
    jobs = Jobs()
    started = threading.Event()

    def work(handle: JobHandle) -> None:
        started.set()
        while True:
            handle.raise_if_cancelled()
            handle.log("tick")
            threading.Event().wait(0.001)

    job = jobs.start(work)
    assert started.wait(WAIT)
    assert jobs.running() == [job]
    assert jobs.snapshot(job)["status"] == "running"
    assert jobs.snapshot(job)["done"] is False
    assert jobs.cancel(job) is True
    assert jobs.wait(job, WAIT)
    snapshot = jobs.snapshot(job, limit=0)
    assert (snapshot["status"], snapshot["done"]) == ("cancelled", True)
    assert "error" not in snapshot
    assert jobs.snapshot(job)["logs"][-1] == "cancelled"


def test_a_job_that_finishes_despite_cancel_succeeds() -> None:
    jobs = Jobs()
    go = threading.Event()

    def work(handle: JobHandle) -> str:
        go.wait(WAIT)
        return "finished anyway"

    job = jobs.start(work)
    jobs.cancel(job)
    go.set()
    jobs.wait(job, WAIT)
    assert jobs.snapshot(job)["status"] == "succeeded"


def test_logs_and_finished_jobs_are_bounded() -> None:
    jobs = Jobs(keep_finished=2, max_log_lines=3)

    def work(handle: JobHandle) -> None:
        for i in range(10):
            handle.log(str(i))

    ids = [jobs.start(work) for _ in range(4)]
    for job in ids:
        jobs.wait(job, WAIT)
    assert [jobs.snapshot(job) is not None for job in ids].count(True) == 2
    last = jobs.snapshot(ids[-1])
    assert last is not None
    assert (last["logs"], last["cursor"]) == (["7", "8", "9"], 10)
    assert jobs.snapshot(ids[-1], cursor=8)["logs"] == ["8", "9"]


@pytest.mark.parametrize("job_id", ["job_unknown", "", 7, None])
def test_unknown_jobs(job_id: object) -> None:
    jobs = Jobs()
    assert jobs.snapshot(job_id) is None  # type: ignore[arg-type]
    assert jobs.cancel(job_id) is False  # type: ignore[arg-type]
    assert jobs.wait(job_id, 0) is True  # type: ignore[arg-type]


def test_shutdown_cancels_running_jobs() -> None:
    jobs = Jobs()

    def work(handle: JobHandle) -> None:
        while not handle.cancelled:
            threading.Event().wait(0.001)
        handle.raise_if_cancelled()

    job = jobs.start(work)
    jobs.shutdown(timeout=WAIT)
    assert jobs.snapshot(job)["status"] == "cancelled"
