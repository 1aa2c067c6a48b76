"""The ERP profile's checks: their context and their registry (check_registry.Registry).

The checks are the conformance/checks/erp_*.py modules; conformance.checks.erp_checks()
imports them, which fills ERP_CHECKS. An ERP check sees an ErpPlugin, its ErpTool for
per-tool requirements, and the endpoints as the run calls them (created on first use).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from conformance.check_registry import CheckContext, Registry
from conformance.erp.plugin import ERP, ErpPlugin, ErpTool
from conformance.findings import Finding

if TYPE_CHECKING:  # the services open HTTP clients: only their type is needed here
    from conformance.erp.endpoints import EndpointServices


@dataclass(frozen=True)
class ErpContext(CheckContext[ErpPlugin, ErpTool]):
    """An ERP check's view: endpoints serves the endpoint suite (None for the static and
    upgrade suites)."""

    endpoints: EndpointServices | None = None

    def tool_finding(self, tool: ErpTool, at: str, message: str, fix: str = "") -> Finding:
        """A finding at pointer `at` of one ERP tool file, with its line."""
        return tool.finding(self.requirement.id, at, message, fix)


ERP_CHECKS = Registry[ErpContext]("ERP", (ERP,))
check = ERP_CHECKS.check
