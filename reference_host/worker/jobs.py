"""Background jobs for long worker calls: the *_start / *_status / *_cancel pattern
(spec: fengyu-manifest.md#timeouts).

A call that may outlive its timeout starts a job and answers with its id at once; later calls
poll the job's log and result, or ask it to stop. Cancellation is cooperative: the job's
function checks `handle.cancelled` (or calls `handle.raise_if_cancelled()`) between steps.

    jobs = Jobs()

    def work(handle):
        for step in steps:
            handle.raise_if_cancelled()
            handle.log(f"doing {step}")
        return {"done": len(steps)}

    job_id = jobs.start(work)
    jobs.snapshot(job_id, cursor=0)  # {"jobId", "status", "logs", "cursor", "done", ...}

Finished jobs are kept for the last `keep_finished` runs and each job keeps its last
`max_log_lines` lines, so a long-lived worker does not grow without bound.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

RUNNING = "running"
SUCCEEDED = "succeeded"
FAILED = "failed"
CANCELLED = "cancelled"
STATUSES = (RUNNING, SUCCEEDED, FAILED, CANCELLED)


class JobCancelled(Exception):
    """Raised by JobHandle.raise_if_cancelled once cancellation was requested."""


class JobHandle:
    """What a job's function gets: a log to append to and the cancellation flag."""

    def __init__(self, job_id: str, max_log_lines: int) -> None:
        self.id = job_id
        self._max_log_lines = max(1, max_log_lines)
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._finished = threading.Event()
        self._lines: list[str] = []
        self._dropped = 0
        self.status = RUNNING
        self.result: Any = None
        self.error: str | None = None

    @property
    def cancelled(self) -> bool:
        """True once cancellation was requested; the function should stop soon after."""
        return self._cancel.is_set()

    def raise_if_cancelled(self) -> None:
        if self._cancel.is_set():
            raise JobCancelled(f"job {self.id} was cancelled")

    def log(self, message: str) -> None:
        """Append one line to the job's log (older lines are dropped past the bound)."""
        with self._lock:
            self._lines.append(str(message))
            overflow = len(self._lines) - self._max_log_lines
            if overflow > 0:
                del self._lines[:overflow]
                self._dropped += overflow

    def _snapshot(self, cursor: int, limit: int | None) -> dict[str, Any]:
        with self._lock:
            total = self._dropped + len(self._lines)
            start = min(max(cursor, self._dropped), total)
            lines = self._lines[start - self._dropped :]
            if limit is not None:
                lines = lines[: max(0, limit)]
            snapshot: dict[str, Any] = {
                "jobId": self.id,
                "status": self.status,
                "logs": list(lines),
                "cursor": start + len(lines),
                "done": self.status != RUNNING,
            }
            if self.result is not None:
                snapshot["result"] = self.result
            if self.error is not None:
                snapshot["error"] = self.error
            return snapshot


class Jobs:
    """A registry of background jobs, each run on its own daemon thread."""

    def __init__(self, keep_finished: int = 16, max_log_lines: int = 1000) -> None:
        self._keep_finished = max(0, keep_finished)
        self._max_log_lines = max_log_lines
        self._lock = threading.Lock()
        self._jobs: OrderedDict[str, JobHandle] = OrderedDict()

    def start(self, fn: Callable[[JobHandle], Any], name: str = "job") -> str:
        """Run fn(handle) in the background and return the new job's id.

        fn's return value becomes the job's result. An exception fails the job, unless
        cancellation was requested, in which case the job ends cancelled.
        """
        job_id = f"job_{secrets.token_hex(8)}"
        handle = JobHandle(job_id, self._max_log_lines)
        with self._lock:
            self._jobs[job_id] = handle
        thread = threading.Thread(
            target=self._run, args=(handle, fn), name=f"{name}-{job_id}", daemon=True
        )
        thread.start()
        return job_id

    def _run(self, handle: JobHandle, fn: Callable[[JobHandle], Any]) -> None:
        try:
            result = fn(handle)
        except BaseException as exc:
            status, result = (CANCELLED if handle.cancelled else FAILED), None
            error = None if handle.cancelled else (str(exc) or type(exc).__name__)
            if handle.cancelled:
                handle.log("cancelled")
        else:
            status, error = SUCCEEDED, None
        with handle._lock:
            handle.status, handle.result, handle.error = status, result, error
        handle._finished.set()
        self._evict()

    def _evict(self) -> None:
        with self._lock:
            finished = [jid for jid, h in self._jobs.items() if h.status != RUNNING]
            for job_id in finished[: max(0, len(finished) - self._keep_finished)]:
                del self._jobs[job_id]

    def snapshot(
        self, job_id: str, cursor: int = 0, limit: int | None = None
    ) -> dict[str, Any] | None:
        """The job's state and its log lines from cursor on (at most limit), or None if unknown.

        cursor counts lines since the job started; the answer's cursor is where the next
        poll continues. Lines dropped by the log bound are skipped over.
        """
        handle = self._get(job_id)
        return None if handle is None else handle._snapshot(int(cursor), limit)

    def cancel(self, job_id: str) -> bool:
        """Ask a running job to stop; False if it is unknown or already finished."""
        handle = self._get(job_id)
        if handle is None or handle.status != RUNNING:
            return False
        handle._cancel.set()
        return True

    def wait(self, job_id: str, timeout: float | None = None) -> bool:
        """Block until the job finished (True) or timeout passed (False); unknown -> True."""
        handle = self._get(job_id)
        return True if handle is None else handle._finished.wait(timeout)

    def running(self) -> list[str]:
        with self._lock:
            return [jid for jid, h in self._jobs.items() if h.status == RUNNING]

    def shutdown(self, timeout: float = 5.0) -> None:
        """Cancel every running job and give them up to timeout seconds in all to stop."""
        running = self.running()
        for job_id in running:
            self.cancel(job_id)
        deadline = time.monotonic() + timeout
        for job_id in running:
            self.wait(job_id, max(0.0, deadline - time.monotonic()))

    def _get(self, job_id: Any) -> JobHandle | None:
        if not isinstance(job_id, str):
            return None
        with self._lock:
            return self._jobs.get(job_id)
