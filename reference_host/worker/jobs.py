"""Background jobs for long worker calls: the *_start / *_status / *_cancel pattern
(spec: fengyu-manifest.md#timeouts), defined in the vendorable SDK module (fengyu_worker), so
a plugin that copies that one file has them too.

    jobs = Jobs()

    def work(handle):
        for step in steps:
            handle.raise_if_cancelled()
            handle.log(f"doing {step}")
        return {"done": len(steps)}

    job_id = jobs.start(work)
    jobs.snapshot(job_id, cursor=0)  # {"jobId", "status", "logs", "cursor", "done", ...}
"""

import fengyu_worker
from fengyu_worker import JobCancelled, JobHandle, Jobs

RUNNING = fengyu_worker.JOB_RUNNING
SUCCEEDED = fengyu_worker.JOB_SUCCEEDED
FAILED = fengyu_worker.JOB_FAILED
CANCELLED = fengyu_worker.JOB_CANCELLED
STATUSES = fengyu_worker.JOB_STATUSES

__all__ = [
    "CANCELLED",
    "FAILED",
    "RUNNING",
    "STATUSES",
    "SUCCEEDED",
    "JobCancelled",
    "JobHandle",
    "Jobs",
]
