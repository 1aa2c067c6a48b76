"""The upgrade checks (upgrade.py) on an ERP plugin: what its new version does to canvases
saved on the previous one."""

from __future__ import annotations

from conformance.checks import upgrade
from conformance.checks.erp import check

check("FY-UPG-001")(upgrade.breaking_upgrade_bumps_major)
check("FY-UPG-002")(upgrade.no_canvas_breaking_changes)
