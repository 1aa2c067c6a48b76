"""The v1 -> v2 migration aid: its output is a v2 manifest the kit accepts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.fengyu.migrate import MigrationError, migrate_v1
from conformance.schema_validation import schema_uri, validate
from tests.conftest import TESTS

CORPUS = TESTS / "data" / "fengyu_realworld"
V2 = schema_uri("fengyu-manifest-v2.schema.json")
V1_CLEAN = [
    "toolchain/spec/fixtures/valid-full.json",
    "toolchain/spec/fixtures/valid-ui-only.json",
    "plugin-cli/test/fixtures/static-plugin/manifest.json",
    "OfficialPlugins/plugin-markdown/manifest.json",
]


def load(name: str) -> dict:
    return json.loads((CORPUS / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", V1_CLEAN)
def test_migrated_manifest_validates_as_v2(name: str) -> None:
    assert validate(migrate_v1(load(name)).manifest, V2) == []


def test_excel_tools_become_methods_and_references() -> None:
    v1 = load("OfficialPlugins/plugin-excel/manifest.json")
    v2 = migrate_v1(v1).manifest
    assert v2["schemaVersion"] == 2
    assert v2["backend"] == {}
    assert [t["method"] for t in v2["aiTools"]] == [t["method"] for t in v1["aiTools"]]
    analyze = v2["rpc"]["methods"]["excel_analyze"]
    assert analyze["inputSchema"] == json.loads(v1["aiTools"][0]["inputSchema"])
    assert v2["aiTools"][0] == {
        "name": "excel_analyze",
        "description": v1["aiTools"][0]["description"],
        "method": "excel_analyze",
        "effect": "read",
        "timeoutSeconds": 30,
    }
    remaining = {e.requirement for e in validate(v2, V2)}
    # The original's one subset issue, a scalar default, is in FengYu's newest subset.
    assert remaining == set(), "the migrated manifest has no schema issue left"


def test_missing_effect_becomes_external_with_a_note() -> None:
    migration = migrate_v1(load("toolchain/spec/fixtures/valid-full.json"))
    assert migration.manifest["aiTools"][0]["effect"] == "external"
    assert any("effect" in note for note in migration.notes)


def test_not_v1_is_refused() -> None:
    with pytest.raises(MigrationError, match="not a v1 manifest"):
        migrate_v1({"schemaVersion": 2})


def test_cli_prints_v2_and_reports_errors_without_traceback(tmp_path: Path) -> None:
    plugin = tmp_path / "p"
    plugin.mkdir()
    (plugin / "manifest.json").write_text((CORPUS / V1_CLEAN[0]).read_text())
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "migrate", str(plugin)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout)["schemaVersion"] == 2
    (plugin / "manifest.json").write_text(
        '{"schemaVersion": 1, "aiTools": [{"name": "a", "inputSchema": "{oops"}]}'
    )
    failed = subprocess.run(
        [sys.executable, "-m", "conformance", "migrate", str(plugin)],
        capture_output=True,
        text=True,
    )
    assert failed.returncode == 2
    assert failed.stderr.startswith("error: /aiTools/0/inputSchema is not valid JSON")
