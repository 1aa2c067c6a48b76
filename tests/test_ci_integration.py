"""What a plugin's CI uses: the composite action's kit step, the pre-commit hook, and a
wheel that holds everything the kit needs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from tests.conftest import FIXTURE_PLUGINS, REPO, run_pytest

SAMPLE = REPO / "sample_plugins" / "fan.summer.markdown"
ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
HOOKS = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
TIMEOUT = 600.0  # a hang guard


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    return {**env, **extra}


def _step(name: str) -> dict:
    return next(s for s in ACTION["runs"]["steps"] if s.get("name") == name)


def _run_action(plugin: Path, strict: str = "true") -> subprocess.CompletedProcess[str]:
    """The action's kit step as GitHub runs it (bash -eo pipefail), inputs at their defaults."""
    inputs = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    inputs.update({"plugin-dir": ".", "strict": strict})
    step = _step("Run the kit")
    env = {
        key: re.sub(r"\$\{\{ inputs\.([a-z-]+) \}\}", lambda m: inputs[m.group(1)], value)
        for key, value in step["env"].items()
    }
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=plugin,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def _uploaded(plugin: Path) -> list[Path]:
    report = ACTION["inputs"]["report"]["default"]
    paths = _step("Upload the reports")["with"]["path"].splitlines()
    return [plugin / p.replace("${{ inputs.report }}", report) for p in paths]


def test_the_action_runs_the_kit_and_writes_every_file_it_uploads(tmp_path: Path) -> None:
    assert {"plugin-dir", "strict", "baseline", "report"} <= set(ACTION["inputs"])
    plugin = shutil.copytree(SAMPLE, tmp_path / "plugin")
    done = _run_action(plugin)
    assert done.returncode == 0, done.stdout + done.stderr
    files = _uploaded(plugin)
    assert len(files) == 5 and all(f.is_file() for f in files), files  # json md html sarif xml
    junit = next(f for f in files if f.suffix == ".xml").read_text()
    assert 'classname="conformance.fan.summer.markdown.manifest"' in junit


def test_the_action_fails_on_a_failing_plugin_and_still_writes_its_reports(
    tmp_path: Path,
) -> None:
    plugin = shutil.copytree(FIXTURE_PLUGINS / "FY-MAN-004-dangling-method", tmp_path / "p")
    done = _run_action(plugin)
    assert done.returncode == 1
    report = json.loads(next(f for f in _uploaded(plugin) if f.suffix == ".json").read_text())
    assert any(
        r["requirement"] == "FY-MAN-004" and r["status"] == "failed" for r in report["results"]
    )


def test_the_pre_commit_hook_runs_the_static_suite_on_the_files_it_names(tmp_path: Path) -> None:
    (hook,) = HOOKS
    files = re.compile(hook["files"])
    assert files.search("manifest.json") and files.search("plugins/x/metadata/tool/a.b.c.json")
    assert not files.search("README.md") and not files.search("backend/manifest.json.bak")
    plugin = shutil.copytree(SAMPLE, tmp_path / "plugin")
    done = subprocess.run(
        hook["entry"].replace("python", sys.executable, 1).split(),
        cwd=plugin,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed" in done.stdout.splitlines()[-1] and "worker" not in done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The kit's wheel, built by the build backend installed here (no isolated build
    environment to install first, and no index asked for one)."""
    out = tmp_path_factory.mktemp("dist")
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    subprocess.run([*build, "--quiet", "-w", str(out), str(REPO)], check=True, timeout=TIMEOUT)
    (built,) = out.glob("*.whl")
    return built


@pytest.mark.long
def test_a_wheel_installed_on_its_own_runs_the_kit_from_inside_a_plugin(
    wheel: Path, tmp_path: Path
) -> None:
    """The wheel goes into a fresh venv; its dependencies come from this venv through a .pth
    line (no download), which does not process this venv's own editable install. The venv
    gets no pip of its own (ensurepip installs and compiles one, seconds of CPU each time):
    this venv's pip installs into it."""
    venv = tmp_path / "venv"
    made = [sys.executable, "-m", "venv", "--without-pip", str(venv)]
    subprocess.run(made, check=True, timeout=TIMEOUT)
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    subprocess.run([*install, "--no-deps", "--no-index", str(wheel)], check=True, timeout=TIMEOUT)
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    plugin = shutil.copytree(SAMPLE, tmp_path / "plugin")
    env = _env(PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    where = subprocess.run(
        [str(python), "-c", "import conformance; print(conformance.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(site), where
    done = run_pytest(
        plugin,
        *("--plugin-dir", ".", "--conformance-strict", "-q"),
        env=env,
        timeout=TIMEOUT,
        python=str(python),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    explained = subprocess.run(
        [str(venv / "bin" / "plugin-conformance"), "explain", "FY-FILE-004"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Read more: docs/spec/fengyu-manifest.md#" in explained.stdout
    scaffold = subprocess.run(
        [str(venv / "bin" / "plugin-conformance"), "init", "fengyu", str(tmp_path / "new")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert scaffold.returncode == 0, scaffold.stderr
    assert (tmp_path / "new" / ".github" / "workflows" / "conformance.yml").is_file()
