"""`plugin-conformance init`: a new plugin passes the kit in strict mode on its first run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conformance.init_plugin import InitError, init
from tests.conformance.test_requirement_fixtures import served_backend


def test_a_new_fengyu_plugin_passes_every_suite_in_strict_mode(tmp_path: Path, run_kit) -> None:
    folder = tmp_path / "notes"
    written = {
        p.relative_to(folder).as_posix() for p in init("fengyu", folder, "com.example.notes")
    }
    assert {
        "manifest.json",
        "backend/worker",
        "ui/index.html",
        "conformance/examples/notes_count_words/sample.txt",
        ".github/workflows/conformance.yml",
        "README.md",
    } <= written
    assert os.access(folder / "backend" / "worker", os.X_OK)
    result = run_kit([folder], "--conformance-strict")
    assert result.result.ret == 0, result.result.stdout.str()
    assert result.reported() == set()
    statuses = result.statuses()
    assert statuses["FY-TOOL-001"] == "passed" and statuses["FY-HOST-002"] == "passed"


def test_a_new_erp_plugin_passes_against_its_own_backend(tmp_path: Path, run_kit) -> None:
    folder = tmp_path / "greeter"
    init("erp", folder)
    tool = folder / "metadata" / "tool" / "greeter.greeting.get.json"
    assert tool.is_file() and (folder / "backend" / "app.py").is_file()
    with served_backend(folder) as url:
        assert url is not None
        result = run_kit([folder], "--conformance-strict", "--plugin-base-url", url)
    assert result.result.ret == 0, result.result.stdout.str()
    assert result.reported() == set()
    assert result.statuses()["ERP-DYN-003"] == "passed"


def test_init_writes_nothing_into_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(InitError, match="is not an empty folder: nothing was written"):
        init("fengyu", tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize(("profile", "plugin_id"), [("fengyu", "notes"), ("erp", "a.b")])
def test_init_refuses_an_id_the_profile_does_not_allow(
    tmp_path: Path, profile: str, plugin_id: str
) -> None:
    with pytest.raises(InitError, match=f"--id {plugin_id!r} is not a {profile} plugin id"):
        init(profile, tmp_path / "new", plugin_id)
    assert not (tmp_path / "new").exists()


def test_the_command_names_the_files_and_the_next_step(tmp_path: Path) -> None:
    folder = tmp_path / "my-tools"
    result = subprocess.run(
        [sys.executable, "-m", "conformance", "init", "fengyu", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"wrote {folder / 'manifest.json'}" in result.stdout
    assert result.stdout.endswith(
        f"next: cd {folder} && pytest --plugin-dir . --conformance-strict\n"
    )
    assert '"id": "my.tools"' in (folder / "manifest.json").read_text()
    again = subprocess.run(
        [sys.executable, "-m", "conformance", "init", "fengyu", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode == 2 and "nothing was written" in again.stderr


def test_the_erp_workflow_waits_until_the_backend_answers(tmp_path: Path) -> None:
    """The generated CI starts the backend in the background; its wait loop must see it up
    before the kit runs (run here against the backend served on loopback)."""
    folder = tmp_path / "greeter"
    init("erp", folder)
    workflow = yaml.safe_load((folder / ".github" / "workflows" / "conformance.yml").read_text())
    start = next(s for s in workflow["jobs"]["kit"]["steps"] if "uvicorn" in s.get("run", ""))
    wait = start["run"].split('python -c "', 1)[1].rsplit('"', 1)[0]
    with served_backend(folder) as url:
        assert url is not None
        port = url.rsplit(":", 1)[1]
        done = subprocess.run(
            [sys.executable, "-c", wait.replace("8080", port)], capture_output=True, text=True
        )
    assert done.returncode == 0, done.stderr
