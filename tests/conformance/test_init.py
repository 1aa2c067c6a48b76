"""`plugin-conformance init`: a new plugin passes the kit in strict mode on its first run."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

import pytest
import yaml

import fengyu_worker
from conformance import init_plugin
from conformance.init_plugin import (
    InitError,
    KitSource,
    init,
    kit_source,
    source_from_direct_url,
    source_from_option,
)
from conformance.package_data import SCAFFOLD
from tests.conformance.test_requirement_fixtures import served_backend
from tests.conftest import REPO

PIP_TIMEOUT = 600.0  # a hang guard: a local clone and one wheel build take seconds


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


def run_init(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m conformance init` with args, as a user runs it; its output as text."""
    return subprocess.run(
        [sys.executable, "-m", "conformance", "init", *args],
        capture_output=True,
        text=True,
        check=False,
    )


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
    result = run_init("fengyu", str(folder))
    assert result.returncode == 0, result.stderr
    assert f"wrote {folder / 'manifest.json'}" in result.stdout
    assert result.stdout.endswith(
        f"next: cd {folder} && pytest --plugin-dir . --conformance-strict\n"
    )
    assert '"id": "my.tools"' in (folder / "manifest.json").read_text()
    again = run_init("fengyu", str(folder))
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


def _install_line(folder: Path) -> str:
    """The run of the generated workflow's step that installs the kit."""
    workflow = yaml.safe_load((folder / ".github" / "workflows" / "conformance.yml").read_text())
    (line,) = [
        s["run"] for s in workflow["jobs"]["kit"]["steps"] if "pip" in s.get("run", "").split()
    ]
    return str(line)


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize("profile", ["fengyu", "erp"])
def test_the_workflow_installs_the_kit_from_the_git_commit_it_came_from(
    tmp_path: Path, profile: str
) -> None:
    """A kit installed from git (PEP 610 vcs_info) gives a workflow pinned to that commit, and
    pip installs the kit from that line (a local clone of this repository at HEAD: no network;
    the wheel is built with this venv's hatchling)."""
    clone = tmp_path / "kit"
    _git("clone", "--quiet", str(REPO), str(clone), cwd=tmp_path)
    commit = _git("rev-parse", "HEAD", cwd=clone)
    source = source_from_direct_url(
        {"url": clone.as_uri(), "vcs_info": {"vcs": "git", "commit_id": commit}}
    )
    folder = tmp_path / "plugin"
    init(profile, folder, source=source)
    line = _install_line(folder)
    assert line == f"pip install git+{clone.as_uri()}@{commit}"
    assert line in (folder / "README.md").read_text("utf-8").splitlines()
    pip, install, *requirement = shlex.split(line)
    assert (pip, install) == ("pip", "install")
    target = tmp_path / "installed"
    offline = ["--no-deps", "--no-index", "--no-build-isolation", "--target", str(target)]
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", *requirement, *offline],
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (dist_info,) = target.glob("ai_plugin_conformance-*.dist-info")
    metadata = HeaderParser().parsestr((dist_info / "METADATA").read_text("utf-8"))
    assert metadata["Name"] == "ai-plugin-conformance"
    direct_url = json.loads((dist_info / "direct_url.json").read_text("utf-8"))
    assert direct_url["vcs_info"]["commit_id"] == commit
    assert (target / "conformance" / "init_plugin.py").is_file()
    assert (target / "fengyu_worker.py").is_file()  # the built wheel ships the SDK as one file


def test_a_git_install_of_the_kit_is_pinned_to_its_commit() -> None:
    source = source_from_direct_url(
        {
            "url": "https://github.com/acme/ai-plugin-conformance.git",
            "vcs_info": {"vcs": "git", "commit_id": "0123abc", "requested_revision": "main"},
        }
    )
    assert source == KitSource(
        "ai-plugin-conformance @ git+https://github.com/acme/ai-plugin-conformance.git@0123abc"
    )


def test_a_kit_installed_from_a_local_folder_is_installed_from_it_with_a_warning() -> None:
    source = source_from_direct_url({"url": "file:///src/kit", "dir_info": {"editable": True}})
    assert source.requirement == "ai-plugin-conformance @ file:///src/kit"
    assert source.warning is not None and "this machine only" in source.warning
    assert "--kit-source" in source.warning


def test_kit_source_names_a_git_url_a_requirement_or_a_folder(tmp_path: Path) -> None:
    url = "git+https://github.com/acme/ai-plugin-conformance@v0.1.0"
    assert source_from_option(url) == KitSource(f"ai-plugin-conformance @ {url}")
    assert source_from_option(f"ai-plugin-conformance @ {url}").requirement.endswith(url)
    assert source_from_option(str(tmp_path)).requirement.endswith(tmp_path.as_uri())


def test_a_local_git_source_is_the_bare_url_every_pip_takes() -> None:
    """pip before 23.3 refuses `NAME @ git+file:///...` (no host in the URL)."""
    source = source_from_option("git+file:///src/kit@0123abc")
    assert source.requirement == "git+file:///src/kit@0123abc"
    assert source.warning is not None and "this machine only" in source.warning


def test_an_unpinned_git_source_is_warned() -> None:
    source = source_from_option("git+https://github.com/acme/ai-plugin-conformance")
    assert source.warning is not None and "names no commit or tag" in source.warning


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("git+https://github.com/<owner>/ai-plugin-conformance@<ref>", "holds a placeholder"),
        ("ai-plugin-conformance", "neither a URL pip installs"),
        ("no/such/folder", "neither a URL pip installs"),
    ],
)
def test_kit_source_refuses_what_pip_cannot_install(value: str, message: str) -> None:
    with pytest.raises(InitError, match=message):
        source_from_option(value)


def test_without_an_installed_kit_init_asks_for_a_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No distribution, no direct_url.json: no source is known, and nothing is written."""

    def missing(name: str) -> None:
        raise init_plugin.PackageNotFoundError(name)

    monkeypatch.setattr(init_plugin, "distribution", missing)
    with pytest.raises(InitError, match="pass --kit-source"):
        kit_source()
    with pytest.raises(InitError, match="pass --kit-source"):
        init("fengyu", tmp_path / "new")
    assert not (tmp_path / "new").exists()


def test_a_kit_from_a_folder_of_this_machine_is_vendored_into_the_plugin(
    tmp_path: Path,
) -> None:
    """This kit is installed from its own folder (pip install -e), which no runner has: the
    workflow installs the wheel init vendors into the plugin's .conformance/ (test_vendor.py
    installs it in a fresh venv), and the README says so."""
    folder = tmp_path / "notes"
    done = run_init("fengyu", str(folder))
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    assert _install_line(folder) == "pip install .conformance/ai_plugin_conformance-*.whl"
    (wheel,) = (folder / ".conformance").glob("ai_plugin_conformance-*-py3-none-any.whl")
    assert f"wrote {wheel}" in done.stdout
    readme = (folder / "README.md").read_text("utf-8")
    assert _install_line(folder) in readme.splitlines() and "`.conformance/`" in readme


def test_kit_source_option_sets_the_workflow_install_line(tmp_path: Path) -> None:
    url = "git+https://github.com/acme/ai-plugin-conformance@v0.1.0"
    folder = tmp_path / "greeter"
    done = run_init("erp", str(folder), "--kit-source", url)
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    assert _install_line(folder) == f"pip install 'ai-plugin-conformance @ {url}'"
    generated = "".join(p.read_text("utf-8") for p in folder.rglob("*") if p.is_file())
    assert not re.search(r"__[A-Z_]+__", generated)
