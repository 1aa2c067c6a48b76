"""Upgrade checks (spec: fengyu-worker.md#upgrades): what a new version does to canvases saved
on the previous one."""

from __future__ import annotations

from collections.abc import Iterator

from conformance.check_registry import CheckContext, check
from conformance.findings import Finding, NotApplicable
from conformance.previous_version import Upgrade


def upgrade(ctx: CheckContext) -> Upgrade:
    if ctx.upgrade is None:
        raise NotApplicable("pass --previous-manifest PATH|git:REF to check an upgrade")
    return ctx.upgrade


def _finding(ctx: CheckContext, head: str, result: Upgrade) -> Finding:
    lines = [head, *(line for c in result.changes.breaking for line in c.describe())]
    file = "manifest.json" if ctx.plugin.profile != "erp" else "metadata/tool/"
    return ctx.finding("\n".join(lines), file, "/version" if file == "manifest.json" else "")


@check("FY-UPG-001")
def breaking_upgrade_bumps_major(ctx: CheckContext) -> Iterator[Finding]:
    result = upgrade(ctx)
    if result.changes.breaking and not result.major_bumped:
        yield _finding(
            ctx,
            f"{result.previous_version} -> {result.version} "
            "breaks saved canvases without a new major version:",
            result,
        )


@check("FY-UPG-002")
def no_canvas_breaking_changes(ctx: CheckContext) -> Iterator[Finding]:
    result = upgrade(ctx)
    if result.changes.breaking and result.major_bumped:
        yield _finding(
            ctx,
            f"{result.previous_version} -> {result.version} changes what saved canvases rely on:",
            result,
        )
