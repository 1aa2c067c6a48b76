"""FY-WRK-020 beyond its fixture: a plugin without backend.resources is skipped with the
reason, the same worker within a roomier declaration passes, and a memory overrun is named
with its MiB (the fixture covers maxProcesses)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURE_PLUGINS, REPO, copy_plugin

FIXTURE = FIXTURE_PLUGINS / "FY-WRK-020-pool-over-max-processes"
MARKDOWN = REPO / "sample_plugins" / "fan.summer.markdown"
HOG = """
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from misbehaving_worker import run

HELD = []


def greet(params):
    if not HELD:
        block = bytearray(160 * 1024 * 1024)
        block[::4096] = b"x" * len(block[::4096])  # touched: resident, not only reserved
        HELD.append(block)
    return {"success": True, "summary": "greeted"}


run({"greet": greet})
"""


def fixture_copy(tmp_path: Path, resources: dict[str, int], worker: str | None = None) -> Path:
    plugins = tmp_path / "plugins"
    folder = copy_plugin(FIXTURE, plugins)
    shutil.copy2(FIXTURE_PLUGINS / "misbehaving_worker.py", plugins)
    manifest = json.loads((folder / "manifest.json").read_text("utf-8"))
    manifest["backend"]["resources"] = resources
    (folder / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    if worker is not None:
        (folder / "backend" / "worker.py").write_text(worker, "utf-8")
    return folder


def record(result: Any, requirement: str) -> dict[str, Any]:
    (found,) = [r for r in result.report["results"] if r["requirement"] == requirement]
    return dict(found)


def test_a_plugin_without_declared_resources_is_skipped_with_the_reason(run_kit) -> None:
    result = run_kit([MARKDOWN], "-m", "worker")
    item = record(result, "FY-WRK-020")
    assert item["status"] == "not-applicable"
    assert "declares no backend.resources" in item["reason"]


def test_the_same_worker_within_a_roomier_declaration_passes(run_kit, tmp_path: Path) -> None:
    result = run_kit([fixture_copy(tmp_path, {"maxProcesses": 3})], "-m", "worker")
    assert record(result, "FY-WRK-020")["status"] == "passed"


def test_a_memory_overrun_names_memory_mb(run_kit, tmp_path: Path) -> None:
    folder = fixture_copy(tmp_path, {"memoryMb": 64}, HOG)
    result = run_kit([folder], "-m", "worker")
    assert result.statuses()["FY-WRK-020"] == "failed"
    (finding,) = result.findings("FY-WRK-020")
    assert finding["pointer"] == "/backend/resources/memoryMb"
    assert "Worker exceeded its memory limit (" in finding["message"]
    assert "/64 MiB)" in finding["message"]
    assert "FY-WRK-020 calling each tool once" in finding["message"]
    assert "memoryMb" in finding["fix"]
