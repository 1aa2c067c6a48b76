"""pytest settings from a folder the kit checks (issue 35 item 13).

pytest reads pytest.ini (tox.ini, setup.cfg, pyproject.toml) before the kit starts; inside the
checked plugin folder that file is the plugin's, and could deselect checks or load its code
into the kit's unsandboxed process while the run still exited 0 with `failures="0"`. Such a
run is a usage error (exit 4) naming the file, the setting and the fix, unless
--conformance-trust-settings is given; settings that change nothing of what runs pass, and a
conftest.py is never loaded by a kit run at all.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

SAMPLE = REPO / "sample_plugins" / "hello-plugin"
TRUST = "--conformance-trust-settings"
MARK = "ran.txt"  # what the folder's code writes when the kit's process runs it


@pytest.fixture
def plugin(pytester: pytest.Pytester) -> Path:
    """A passing plugin in the folder pytest runs in, as its author runs the kit."""
    shutil.copytree(SAMPLE, pytester.path, dirs_exist_ok=True)
    return pytester.path


def writes_mark(folder: Path) -> str:
    """Python source that leaves MARK in folder: the proof that the kit's process ran it."""
    return f"from pathlib import Path\nPath({str(folder / MARK)!r}).write_text('ran')\n"


def assert_refused(result: pytest.RunResult, settings: str, *found: str) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    error = result.stderr.str()
    assert f"pytest's settings come from {settings}" in error, error
    assert all(what in error for what in found), error
    assert TRUST in error and "folder of your own" in error, error


@pytest.mark.parametrize(
    ("file", "text"),
    [
        ("pytest.ini", '[pytest]\naddopts = -k "not ERP-TOOL-005"\n'),
        ("tox.ini", "[pytest]\naddopts = --deselect x -m manifest\n"),
        ("setup.cfg", "[tool:pytest]\naddopts = --ignore=backend -ra\n"),
        ("pyproject.toml", '[tool.pytest.ini_options]\naddopts = ["-k", "not ERP-TOOL-005"]\n'),
    ],
)
def test_addopts_that_deselect_are_a_usage_error(
    pytester: pytest.Pytester, plugin: Path, file: str, text: str
) -> None:
    (plugin / file).write_text(text)
    result = pytester.runpytest("--plugin-dir", ".", "-m", "manifest")
    assert_refused(result, str(plugin / file), "addopts (")
    assert "-ra" not in result.stderr.str()  # output-only words are not what is refused


def test_a_module_of_the_folder_loaded_with_p_is_a_usage_error(
    pytester: pytest.Pytester, plugin: Path
) -> None:
    """pythonpath puts the folder on sys.path and `-p` imports a module of it into the kit's
    process. pytest imports it before the kit is loaded, so it has run already (its import
    cannot be undone in-process: hence the README's advice to run from a folder of your
    own); the run it wanted to tamper with does not happen."""
    (plugin / "folder_hooks.py").write_text(
        writes_mark(plugin) + "def pytest_collection_modifyitems(items):\n    items.clear()\n"
    )
    (plugin / "pytest.ini").write_text("[pytest]\npythonpath = .\naddopts = -p folder_hooks\n")
    result = pytester.runpytest("--plugin-dir", ".", "-m", "manifest")
    assert_refused(
        result,
        str(plugin / "pytest.ini"),
        "addopts (-p folder_hooks)",
        "pythonpath (.)",
        "pytest imported folder_hooks before the kit started",
    )
    assert "passed" not in result.stdout.str()


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("pythonpath = .", "pythonpath (.)"),
        ("required_plugins = pytest-xdist", "required_plugins (pytest-xdist)"),
        ("filterwarnings = ignore", "filterwarnings (ignore)"),
        ("conformance_worker_env = GITHUB_TOKEN", "conformance_worker_env (GITHUB_TOKEN)"),
    ],
)
def test_other_settings_that_change_what_runs_are_a_usage_error(
    pytester: pytest.Pytester, plugin: Path, text: str, found: str
) -> None:
    """The worker environment too: a plugin's file must not hand its worker the kit's
    tokens."""
    (plugin / "pytest.ini").write_text(f"[pytest]\n{text}\n")
    result = pytester.runpytest("--plugin-dir", ".", "-m", "manifest")
    assert_refused(result, str(plugin / "pytest.ini"), found)


def test_trusted_settings_run_as_before(pytester: pytest.Pytester, plugin: Path) -> None:
    """--conformance-trust-settings: the author's own file decides, as without the kit's
    check, and the header says so for whoever reads the log."""
    (plugin / "pytest.ini").write_text('[pytest]\naddopts = -k "not ERP-TOOL-005"\n')
    result = pytester.runpytest("--plugin-dir", ".", "-m", "manifest", TRUST)
    outcomes = result.parseoutcomes()
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert outcomes == {"passed": 15, "deselected": 8}  # the namespace rule too
    result.stdout.fnmatch_lines(["conformance: pytest's settings come from *pytest.ini*trusted*"])
    plain = pytester.runpytest(
        "--plugin-dir", ".", "-m", "manifest", "-k", "not ERP-TOOL-005", TRUST
    )
    assert plain.parseoutcomes() == outcomes


def test_a_file_cannot_trust_itself(pytester: pytest.Pytester, plugin: Path) -> None:
    """The flag is the user's word on the file: in the file's own addopts it counts for
    nothing."""
    (plugin / "pytest.ini").write_text(f'[pytest]\naddopts = {TRUST} -k "not ERP-TOOL-005"\n')
    result = pytester.runpytest("--plugin-dir", ".", "-m", "manifest")
    assert_refused(result, str(plugin / "pytest.ini"), f"addopts ({TRUST} -k 'not ERP-TOOL-005')")


def test_settings_that_change_nothing_of_what_runs_pass(
    pytester: pytest.Pytester, plugin: Path
) -> None:
    """The layout of the plugin's own tests, output-only addopts and the kit's own defaults
    are configuration an author keeps in the repo."""
    (plugin / "pytest.ini").write_text(
        "[pytest]\ntestpaths = tests\nmarkers =\n    slow: slow\naddopts = -ra -q --tb=short\n"
        "conformance_examples = 5\n"
    )
    result = pytester.runpytest("--plugin-dir", ".", "-m", "manifest")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    assert "settings come from" not in result.stdout.str()


def test_settings_outside_the_checked_folders_are_the_users(
    pytester: pytest.Pytester, plugin: Path
) -> None:
    """A file in a folder of the user's, checking a plugin elsewhere: the user's choice."""
    (plugin / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    inner = shutil.copytree(SAMPLE, plugin / "elsewhere")
    result = pytester.runpytest("--plugin-dir", str(inner), "-m", "manifest")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("where", ["in", "above"])
def test_a_conftest_of_the_folder_is_never_loaded(
    pytester: pytest.Pytester, plugin: Path, where: str
) -> None:
    """pytest loads conftest.py files from the rootdir down to what it collects; a kit run
    turns them off (pytest_plugin.py), so one in the plugin folder or above it up to the
    rootdir deselects nothing and runs nothing, trusted or not."""
    hooks = writes_mark(plugin) + "def pytest_collection_modifyitems(items):\n    items.clear()\n"
    if where == "in":
        folder = plugin
    else:
        folder = shutil.copytree(SAMPLE, plugin / "below")
        (plugin / "pytest.ini").write_text("[pytest]\n")  # the rootdir, above the plugin
    (plugin / "conftest.py").write_text(hooks)
    for trust in ((), (TRUST,)):
        result = pytester.runpytest("--plugin-dir", str(folder), "-m", "manifest", *trust)
        assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
        assert result.parseoutcomes()["passed"] > 0
    assert not (plugin / MARK).exists()


def test_the_folder_of_an_mcp_config_is_checked(pytester: pytest.Pytester) -> None:
    """Its servers run there: the file beside it is theirs (the server is never started)."""
    (pytester.path / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    script = pytester.path / "server.py"
    script.write_text(writes_mark(pytester.path))
    config = pytester.path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"s": {"command": sys.executable, "args": [str(script)]}}})
    )
    result = pytester.runpytest("--mcp-config", str(config), "-m", "lifecycle")
    assert_refused(result, str(pytester.path / "pytest.ini"), "pythonpath (.)")
    assert not (pytester.path / MARK).exists()


def test_an_mcp_server_runs_in_a_checked_folder(pytester: pytest.Pytester) -> None:
    """--mcp-command runs the server in the folder pytest runs in: that folder is checked."""
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    script = pytester.path / "server.py"
    script.write_text(writes_mark(pytester.path))
    result = pytester.runpytest("--mcp-command", f"{sys.executable} {script}", "-m", "lifecycle")
    assert_refused(result, str(pytester.path / "tox.ini"), "addopts (-p no:cacheprovider)")
    assert not (pytester.path / MARK).exists()  # refused before the server was started
