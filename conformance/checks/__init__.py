"""The kit's checks; importing this package registers every one of them."""

from conformance.checks import (
    erp_endpoints,
    erp_tools,
    fengyu_effects,
    fengyu_files,
    fengyu_host,
    fengyu_legacy,
    fengyu_manifest,
    fengyu_providers,
    fengyu_tools,
    fengyu_worker,
    providers,
    upgrade,
)

__all__ = [
    "erp_endpoints",
    "erp_tools",
    "fengyu_effects",
    "fengyu_files",
    "fengyu_host",
    "fengyu_legacy",
    "fengyu_manifest",
    "fengyu_providers",
    "fengyu_tools",
    "fengyu_worker",
    "providers",
    "upgrade",
]
