"""The kit costs a pytest run nothing until asked: without --plugin-dir, only its options
module is imported; with it, collecting imports neither the checks nor the host."""

from __future__ import annotations

from pathlib import Path

from benchmarks.startup import imported
from tests.conftest import REPO

SAMPLE = REPO / "sample_plugins" / "fan.summer.markdown"
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
