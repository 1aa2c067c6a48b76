"""The kit costs a pytest run nothing until asked: without --plugin-dir, only its options
module is imported; with it, collecting imports neither the checks nor the host, and a run of
FengYu or ERP plugins imports nothing of MCP (conformance/checks/__init__.py)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.startup import imported
from tests.conftest import REPO

SAMPLE = REPO / "sample_plugins" / "fan.summer.markdown"
ERP_SAMPLE = REPO / "sample_plugins" / "hcm-employee"
# What runs items, imported when the first one runs: the checks, the worker and endpoint
# services, the host's process manager, and the input generator they bring.
COLLECTION_NEEDS_NOT = (
    "conformance.checks",
    "conformance.fengyu.services",
    "conformance.fengyu.harness",
    "conformance.erp.endpoints",
    "conformance.properties",
    "reference_host.process.manager",
    "reference_host.host",
    "hypothesis_jsonschema",
)


# What only a run of MCP servers needs: the MCP SDK (the host's launch of a server brings
# it), the kit's server sessions, the MCP checks with their registry, the host's MCP mounts.
MCP_SDK = ("mcp", "mcp_types")
MCP_OURS = ("conformance.mcp", "conformance.checks.mcp", "reference_host.mcp")


def _mcp(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in MCP_SDK or m.startswith(MCP_OURS)]


def _ours(modules: list[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in ("conformance", "reference_host")}


def test_a_run_without_plugin_dir_imports_only_the_options(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")

    modules = imported(tmp_path)

    assert _ours(modules) == {"conformance", "conformance.options", "conformance.pytest_plugin"}


def test_collecting_a_plugin_imports_no_check_and_no_worker_machinery(tmp_path: Path) -> None:
    modules = imported(tmp_path, "--plugin-dir", str(SAMPLE), "--collect-only")

    assert "conformance.pytest_session" in modules
    assert not [m for m in modules if m.startswith(COLLECTION_NEEDS_NOT)]


def test_a_run_of_a_fengyu_plugin_imports_nothing_of_mcp(tmp_path: Path) -> None:
    modules = imported(tmp_path, "--plugin-dir", str(SAMPLE), "--conformance-examples", "5")

    assert "conformance.checks.fengyu_tools" in modules  # the run ran the live checks
    assert not _mcp(modules)


def test_a_run_of_an_erp_plugin_imports_nothing_of_mcp(tmp_path: Path) -> None:
    modules = imported(tmp_path, "--plugin-dir", str(ERP_SAMPLE), "--conformance-examples", "5")

    assert "conformance.checks.erp_endpoints" in modules
    assert not _mcp(modules)
