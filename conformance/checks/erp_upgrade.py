"""The upgrade checks (upgrade.py) on an ERP plugin: what its new version does to canvases
saved on the previous one."""

from __future__ import annotations

from collections.abc import Iterator

from conformance.checks import upgrade
from conformance.checks.erp import ErpContext, check
from conformance.findings import Finding


@check("FY-UPG-001")
def breaking_upgrade_bumps_major(ctx: ErpContext) -> Iterator[Finding]:
    yield from upgrade.breaking_upgrade_bumps_major(ctx)


@check("FY-UPG-002")
def no_canvas_breaking_changes(ctx: ErpContext) -> Iterator[Finding]:
    yield from upgrade.no_canvas_breaking_changes(ctx)
