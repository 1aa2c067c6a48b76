"""Upgrade checks against a previous version given as a folder or as a git ref."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_PLUGINS

MINOR = FIXTURE_PLUGINS / "FY-UPG-001-tool-removed-in-minor"


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


def test_previous_version_from_git(run_kit, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    plugin = repo / "plugin"
    plugin.mkdir(parents=True)
    shutil.copy(MINOR / "previous" / "manifest.json", plugin / "manifest.json")
    git(repo, "init", "-q")
    git(repo, "-c", "user.email=kit@example.invalid", "-c", "user.name=kit", "add", ".")
    git(
        repo,
        "-c",
        "user.email=kit@example.invalid",
        "-c",
        "user.name=kit",
        "commit",
        "-qm",
        "1.0.0",
    )
    shutil.copy(MINOR / "manifest.json", plugin / "manifest.json")
    result = run_kit([plugin], "-m", "upgrade", "--previous-manifest", "git:HEAD")
    assert result.reported() == {"FY-UPG-001"}
    upgrade = result.report["plugins"][0]["upgrade"]
    assert upgrade["from"] == "1.0.0" and upgrade["to"] == "1.1.0"
    assert "fixture.upgrade:fixture_count: tool removed" in upgrade["breaking"]
    assert upgrade["revised"] == ["fixture.upgrade:fixture_render"]


def test_compatible_upgrade_reports_revisions_only(run_kit, tmp_path: Path) -> None:
    previous = json.loads((MINOR / "previous" / "manifest.json").read_text())
    current = json.loads(json.dumps(previous))
    current["version"] = "1.0.1"
    current["aiTools"][0]["description"] = "Render text as HTML."
    current["rpc"]["methods"]["render"]["inputSchema"]["properties"]["width"] = {"type": "integer"}
    (tmp_path / "previous.json").write_text(json.dumps(previous))
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "manifest.json").write_text(json.dumps(current))
    result = run_kit(
        [plugin], "-m", "upgrade", "--previous-manifest", str(tmp_path / "previous.json")
    )
    assert result.reported() == set()
    upgrade = result.report["plugins"][0]["upgrade"]
    assert upgrade["breaking"] == [] and upgrade["revised"] == ["fixture.upgrade:fixture_render"]


def test_unreadable_previous_is_a_usage_error(pytester, tmp_path: Path) -> None:
    result = pytester.runpytest(
        "--plugin-dir", str(MINOR), "--previous-manifest", str(tmp_path / "missing.json")
    )
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--previous-manifest *missing.json*"])
    assert "Traceback" not in result.stderr.str()


def test_without_previous_the_upgrade_items_skip(run_kit) -> None:
    result = run_kit([MINOR], "-m", "upgrade")
    assert set(result.statuses().values()) == {"not-applicable"}
    assert result.result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
