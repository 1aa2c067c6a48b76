"""Declared resources kept while the kit runs the worker (fengyu-worker.md#declared-resources).

The tool harness's worker is watched throughout the run (conformance/fengyu/resource_watch.py);
this check reports what was seen. When no tool item has started that worker in this process
(`-m worker`, or the items spread over several processes), it starts it and calls each tool
once with its simplest valid input, so that a worker that grows on a call is still seen.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from conformance.checks.fengyu import FengYuContext, check
from conformance.fengyu.resource_watch import KIT_INTERVAL, SeenOverrun
from conformance.findings import Finding, NotApplicable

SETTLE_SAMPLES = 3  # samples after the last call, so an overrun it caused is seen


@check("FY-WRK-020")
def declared_resources_kept(ctx: FengYuContext) -> Iterator[Finding]:
    workers = ctx.workers
    if workers is None or not workers.declared:
        raise NotApplicable("the plugin declares no worker")
    if not workers.resources:
        raise NotApplicable(
            "the manifest declares no backend.resources (memoryMb, maxProcesses): "
            "FengYu sets no limit to check"
        )
    if workers.launch_error is not None or not workers.answers_at_start:
        raise NotApplicable(workers.start_failure())
    workers.exercise("FY-WRK-020")
    time.sleep(SETTLE_SAMPLES * KIT_INTERVAL)  # an overrun the last call caused is seen
    for seen in workers.overruns.seen:
        yield _finding(ctx, seen)


def _finding(ctx: FengYuContext, seen: SeenOverrun) -> Finding:
    overrun = seen.what
    if overrun.limit == "memory":
        what = f"{overrun.seen} MiB resident, {overrun.declared} MiB declared"
        fix = (
            "keep the resident memory of the worker and every process it starts under "
            "backend.resources.memoryMb (stream large inputs, free caches), or raise memoryMb "
            "to what the worker needs (at most 8192)"
        )
    else:
        what = f"{overrun.seen} processes, {overrun.declared} declared"
        fix = (
            "keep the worker and every process it starts (helpers, pools, shells) at or "
            "under backend.resources.maxProcesses, or raise maxProcesses to the most it "
            "runs at once (at most 64)"
        )
    message = (
        f"the worker's process tree went over {overrun.field}: {what}\n"
        f'FengYu would log "{overrun.message}", mark the plugin FAILED (fault '
        "RESOURCE_LIMIT), fail its pending calls and kill the worker\n"
        f"seen in the {seen.step}"
    )
    pointer = "/" + overrun.field.replace(".", "/")
    return ctx.manifest_finding(pointer, message, fix)
