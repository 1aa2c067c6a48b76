"""The generated CI installs the kit on a runner with nothing of this machine (issue 38 §1).

`plugin-conformance init` vendors a wheel of the running kit (an editable checkout here) into
the plugin's `.conformance/`; the workflow installs that file. The runner is played by a fresh
venv and a copy of the plugin folder away from this repository: the workflow's own install
and kit lines run there. The kit's dependencies come from this venv through a folder that
holds them but not the kit (tests talk only to loopback, so pip gets no index)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
import yaml

from conformance.fengyu.syscall_trace import effects_unseen
from conformance.init_plugin import init, kit_source
from conformance.vendor import FOLDER, INSTALL, WHEEL_NAME, vendor
from tests.conftest import REPO

PIP_TIMEOUT = 600.0  # a hang guard: one local wheel installs in seconds
KIT_TIMEOUT = 900.0
KIT_ENTRIES = ("conformance", "reference_host", "plugin_spec", "fengyu_worker.py")


def _steps(folder: Path) -> list[str]:
    workflow = yaml.safe_load((folder / ".github" / "workflows" / "conformance.yml").read_text())
    return [str(s["run"]) for s in workflow["jobs"]["kit"]["steps"] if "run" in s]


def _dependencies_without_the_kit(into: Path) -> Path:
    """This venv's installed packages, linked into a folder of their own, less the kit and
    its editable hooks: what pip would have fetched for the wheel's Requires-Dist."""
    into.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        name = entry.name.lower()
        if name.startswith((WHEEL_NAME, "_editable_impl_", "__editable__")) or entry.suffix in (
            ".pth",
        ):
            continue
        if entry.name in KIT_ENTRIES:
            continue
        (into / entry.name).symlink_to(entry)
    return into


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv as a CI runner has one: its own site-packages, this venv's dependencies
    on its path, no kit. Its `pip` is this venv's, run by the runner's python (ensurepip
    would install and compile a copy of it, seconds of CPU), so it installs into the runner."""
    root = tmp_path_factory.mktemp("runner")
    venv.create(root / "venv", with_pip=False)
    deps = _dependencies_without_the_kit(root / "deps")
    (site,) = (root / "venv" / "lib").glob("python3*/site-packages")
    (site / "zz_runner_dependencies.pth").write_text(f"{deps}\n", "utf-8")
    pip = root / "venv" / "bin" / "pip"
    pip.write_text('#!/bin/sh\nexec "$(dirname "$0")/python" -m pip "$@"\n', "utf-8")
    pip.chmod(0o755)
    return root / "venv"


def _in_runner(runner: Path, line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": f"{runner / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(cwd.parent),
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "CI": "true",
    }
    return subprocess.run(
        ["bash", "-c", line],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT if line.startswith("pip") else KIT_TIMEOUT,
        check=False,
    )


@pytest.mark.long
def test_the_generated_workflow_installs_the_vendored_kit_and_observes_effects(
    tmp_path: Path, runner: Path
) -> None:
    made = tmp_path / "made" / "notes"
    init("fengyu", made, "com.example.notes")  # the kit here came from a folder: vendored
    plugin = shutil.copytree(made, tmp_path / "elsewhere" / "notes")
    shutil.rmtree(made.parent)
    install, check = [s for s in _steps(plugin) if "pip install" in s or "pytest" in s]
    assert install == INSTALL

    installed = _in_runner(runner, install, plugin)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    where = _in_runner(
        runner, "python -c 'import conformance; print(conformance.__file__)'", plugin
    )
    assert Path(where.stdout.strip()).is_relative_to(runner), where.stdout + where.stderr

    words = shlex.split(check)
    assert words[0] == "pytest"
    ran = _in_runner(runner, shlex.join(["python", "-m", "pytest", *words[1:]]), plugin)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    report = json.loads((plugin / "conformance-report.json").read_text("utf-8"))
    statuses = {r["requirement"]: r["status"] for r in report["results"]}
    assert statuses["FY-TOOL-001"] == "passed"
    if not effects_unseen():  # bubblewrap and strace, as the workflow installs them
        assert statuses["FY-EFF-001"] == "passed"
        assert all(claim["verified"] for claim in report["claims"])


def test_the_workflow_installs_bubblewrap_and_strace_before_the_kit(tmp_path: Path) -> None:
    folder = tmp_path / "greeter"
    init("erp", folder, source=kit_source("git+https://github.com/acme/kit@v1"))
    steps = _steps(folder)
    apt = next(i for i, s in enumerate(steps) if "apt-get install" in s)
    kit = next(i for i, s in enumerate(steps) if "pip install" in s)
    assert apt < kit
    assert {"bubblewrap", "strace"} <= set(steps[apt].split())
    assert not (folder / FOLDER).exists()  # a source a runner reaches: nothing vendored


def test_a_vendored_wheel_is_the_same_bytes_each_time_and_replaces_an_older_one(
    tmp_path: Path,
) -> None:
    older = tmp_path / FOLDER / f"{WHEEL_NAME}-0.0.1-py3-none-any.whl"
    older.parent.mkdir()
    older.write_bytes(b"old")
    first = vendor(tmp_path).read_bytes()
    second = vendor(tmp_path)
    assert second.read_bytes() == first
    assert [p.name for p in (tmp_path / FOLDER).iterdir()] == [second.name]
    with zipfile.ZipFile(second) as wheel:
        names = set(wheel.namelist())
        record = wheel.read(f"{second.name.split('-py3')[0]}.dist-info/RECORD").decode()
    assert "conformance/requirements.toml" in names
    assert "fengyu_worker.py" in names  # the SDK as the one file a plugin copies
    assert not any(n.startswith("fengyu_worker/") for n in names)
    assert "conformance/scaffold/fengyu/.github/workflows/conformance.yml" in names
    assert not any("__pycache__" in n for n in names)
    assert {line.split(",")[0] for line in record.splitlines()} == names


def test_the_vendor_command_names_the_wheel_and_the_install_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "vendor", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = (tmp_path / FOLDER).glob("*.whl")
    assert done.stdout == f"wrote {wheel}\ncommit it; the plugin's CI installs it with: {INSTALL}\n"
