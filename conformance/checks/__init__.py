"""The kit's checks; importing this package registers every one of them."""

from conformance.checks import (
    erp_endpoints,
    erp_tools,
    fengyu_code_first,
    fengyu_contract_rules,
    fengyu_effects,
    fengyu_flow_nodes,
    fengyu_files,
    fengyu_host,
    fengyu_legacy,
    fengyu_manifest,
    fengyu_providers,
    fengyu_sensitive,
    fengyu_tools,
    fengyu_worker,
    providers,
    upgrade,
)

__all__ = [
    "erp_endpoints",
    "erp_tools",
    "fengyu_code_first",
    "fengyu_contract_rules",
    "fengyu_effects",
    "fengyu_flow_nodes",
    "fengyu_files",
    "fengyu_host",
    "fengyu_legacy",
    "fengyu_manifest",
    "fengyu_providers",
    "fengyu_sensitive",
    "fengyu_tools",
    "fengyu_worker",
    "providers",
    "upgrade",
]
