"""Upgrade checks (spec: fengyu-worker.md#upgrades): what a new version does to canvases saved
on the previous one.

Shared by the FengYu and ERP profiles, which register them for FY-UPG-001 and FY-UPG-002
(fengyu_upgrade.py, erp_upgrade.py): the comparison reads the plugin's files only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conformance.check_registry import CheckContext
from conformance.findings import Finding, NotApplicable
from conformance.previous_version import Upgrade
from conformance.profiles import Plugin

# A FengYu or ERP check's context: the upgrade checks read nothing else of either.
Context = CheckContext[Plugin, Any]


def upgrade(ctx: Context) -> Upgrade:
    if ctx.upgrade is None:
        raise NotApplicable("pass --previous-manifest PATH|git:REF to check an upgrade")
    return ctx.upgrade


def _finding(ctx: Context, head: str, result: Upgrade) -> Finding:
    lines = [head, *(line for c in result.changes.breaking for line in c.describe())]
    file = "manifest.json" if ctx.plugin.profile != "erp" else "metadata/tool/"
    return ctx.finding("\n".join(lines), file, "/version" if file == "manifest.json" else "")


def breaking_upgrade_bumps_major(ctx: Context) -> Iterator[Finding]:
    """FY-UPG-001: a change that breaks saved canvases comes with a new major version."""
    result = upgrade(ctx)
    if result.changes.breaking and not result.major_bumped:
        yield _finding(
            ctx,
            f"{result.previous_version} -> {result.version} "
            "breaks saved canvases without a new major version:",
            result,
        )


def no_canvas_breaking_changes(ctx: Context) -> Iterator[Finding]:
    """FY-UPG-002: no change breaks saved canvases, even with a new major version."""
    result = upgrade(ctx)
    if result.changes.breaking and result.major_bumped:
        yield _finding(
            ctx,
            f"{result.previous_version} -> {result.version} changes what saved canvases rely on:",
            result,
        )
