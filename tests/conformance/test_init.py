"""`plugin-conformance init`: a new plugin passes the kit in strict mode on its first run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import fengyu_worker
from conformance.init_plugin import InitError, init
from conformance.package_data import SCAFFOLD
from tests.conformance.test_requirement_fixtures import served_backend


def test_a_new_fengyu_plugin_passes_every_suite_in_strict_mode(tmp_path: Path, run_kit) -> None:
    folder = tmp_path / "notes"
    written = {
        p.relative_to(folder).as_posix() for p in init("fengyu", folder, "com.example.notes")
    }
    assert {
        "manifest.json",
        "backend/worker.py",
        "backend/fengyu_worker.py",
        "ui/index.html",
        "conformance/examples/notes_count_words/sample.txt",
        ".github/workflows/conformance.yml",
        "README.md",
    } <= written
    result = run_kit([folder], "--conformance-strict")
    statuses = result.statuses()
    # FengYu's launch, handshake and file marker, each seen by the kit.
    for rid in ("FY-WRK-012", "FY-WRK-013", "FY-WRK-014", "FY-WRK-015", "FY-FILE-001"):
        assert statuses[rid] == "passed", (rid, result.result.stdout.str())
    assert result.reported() == set(), result.result.stdout.str()
    assert result.result.ret == 0
    assert statuses["FY-TOOL-001"] == "passed" and statuses["FY-HOST-002"] == "passed"


def test_a_new_fengyu_plugin_is_a_protocol_4_python_plugin(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    init("fengyu", folder, "com.example.notes")
    manifest = json.loads((folder / "manifest.json").read_text("utf-8"))
    assert manifest["backend"] == {
        "runtime": "python",
        "protocolVersion": 4,
        "callTimeoutSeconds": 30,
    }
    assert manifest["engines"] == {"fengyu": ">=4.0.0 <5.0.0"}
    file_path = manifest["rpc"]["methods"]["countWords"]["inputSchema"]["properties"]["filePath"]
    assert file_path["type"] == "string"
    assert (file_path["format"], file_path["x-fengyu-file-access"]) == ("fengyu-file", "read")
    assert not (folder / "backend" / "worker").exists()


def test_the_sdk_is_vendored_from_its_one_source(tmp_path: Path) -> None:
    """The plugin gets the module's own bytes at init time; the scaffold keeps no copy."""
    folder = tmp_path / "notes"
    init("fengyu", folder)
    vendored = folder / "backend" / "fengyu_worker.py"
    assert vendored.read_bytes() == Path(fengyu_worker.__file__).read_bytes()
    assert not [p for p in SCAFFOLD.rglob("*") if p.name.startswith("fengyu_worker")]


def _system_python() -> str:
    """python3 as `env -i` finds it (no PATH: the default search path), 3.11 or newer."""
    found = shutil.which("python3", path=os.defpath)
    if found is None:
        pytest.skip(f"no python3 on the default path {os.defpath}")
    version = subprocess.run(
        [found, "-c", "import sys; print(sys.version_info >= (3, 11))"],
        capture_output=True,
        text=True,
        check=False,
    )
    if version.stdout.strip() != "True":
        pytest.skip(f"{found} is older than Python 3.11, which the SDK needs")
    return found


def _frames(*messages: dict[str, Any]) -> str:
    return "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages)


def test_a_new_fengyu_plugin_answers_the_handshake_with_nothing_installed(
    tmp_path: Path,
) -> None:
    """Exactly the command FengYu runs, with an empty environment and an isolated Python
    (no project, no site-packages, no PYTHON* variables on its path)."""
    _system_python()
    folder = tmp_path / "notes"
    init("fengyu", folder, "com.example.notes")
    (folder / "hello.txt").write_text("one two three", "utf-8")
    handshake = {
        "protocolVersion": 4,
        "hostVersion": "4.0.0",
        "pluginId": "com.example.notes",
        "pluginVersion": "0.1.0",
        "capabilities": ["cancellation", "locale", "structuredLogs"],
    }
    done = subprocess.run(
        ["env", "-i", "python3", "-I", "-u", "backend/worker.py"],
        input=_frames(
            {"jsonrpc": "2.0", "id": "h", "method": "$/fengyu/initialize", "params": handshake},
            {
                "jsonrpc": "2.0",
                "id": "g",
                "method": "greet",
                "params": {"name": "Li"},
                "_fengyu": {"locale": "zh"},
            },
            {
                "jsonrpc": "2.0",
                "id": "w",
                "method": "countWords",
                "params": {"filePath": "hello.txt"},
            },
            {"jsonrpc": "2.0", "id": "bad", "method": "greet", "params": {}},
        ),
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    replies = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert replies["h"]["result"] == {
        "protocolVersion": 4,
        "runtime": "python",
        "sdkVersion": fengyu_worker.__version__,
        "capabilities": ["cancellation", "locale", "structuredLogs"],
    }
    assert replies["g"]["result"]["greeting"] == "你好, Li!"
    assert replies["w"]["result"]["words"] == 3
    assert replies["bad"]["error"]["code"] == -32602
    assert not list(folder.rglob("__pycache__"))


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
