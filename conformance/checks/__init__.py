"""The kit's checks: one registry per profile (fengyu.py, erp.py, mcp.py), filled by the
profile's check modules (fengyu_*.py, erp_*.py, mcp_*.py).

Importing this package imports no check: each function below imports one profile's check
modules, and returns its registry, the first time a run asks for it. A run of FengYu
plugins thus never imports the MCP checks, nor conformance.mcp and the MCP SDK they bring.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.check_registry import Registry
    from conformance.checks.erp import ErpContext
    from conformance.checks.fengyu import FengYuContext
    from conformance.checks.mcp import McpContext


def _import(*modules: str) -> None:
    """Import check modules by their name in sys.modules, not as attributes of this package:
    pytester's in-process runs drop the modules a run imported from sys.modules but leave
    them as the package's attributes, and `from conformance.checks import mcp_calls` would
    take that stale module and fill no freshly imported registry."""
    for module in modules:
        import_module(f"conformance.checks.{module}")


def fengyu_checks() -> Registry[FengYuContext]:
    """The FengYu registry, with every FengYu check registered."""
    _import(
        "fengyu_code_first",
        "fengyu_contract_rules",
        "fengyu_effects",
        "fengyu_files",
        "fengyu_flow_nodes",
        "fengyu_host",
        "fengyu_legacy",
        "fengyu_manifest",
        "fengyu_providers",
        "fengyu_resources",
        "fengyu_sensitive",
        "fengyu_tools",
        "fengyu_upgrade",
        "fengyu_worker",
    )
    from conformance.checks.fengyu import FENGYU_CHECKS

    return FENGYU_CHECKS


def erp_checks() -> Registry[ErpContext]:
    """The ERP registry, with every ERP check registered."""
    _import("erp_endpoints", "erp_providers", "erp_tools", "erp_upgrade")
    from conformance.checks.erp import ERP_CHECKS

    return ERP_CHECKS


def mcp_checks() -> Registry[McpContext]:
    """The MCP registry, with every MCP check registered (this imports conformance.mcp)."""
    _import(
        "mcp_calls",
        "mcp_effects",
        "mcp_lifecycle",
        "mcp_listing",
        "mcp_providers",
    )
    from conformance.checks.mcp import MCP_CHECKS

    return MCP_CHECKS


def unchecked_requirements() -> list[str]:
    """Catalog entries some profile they apply to has no check for (FY-UPG-001 is checked on
    FengYu and ERP plugins: both registries serve it): each one is a defect of the kit."""
    from conformance.catalog import load_catalog

    registries = (fengyu_checks(), erp_checks(), mcp_checks())
    return [
        r.id
        for r in load_catalog().values()
        if any(r.id not in g.served() for g in registries if set(g.profiles) & set(r.profiles))
    ]
