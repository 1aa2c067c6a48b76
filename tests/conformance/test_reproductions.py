"""A finding's `reproduce:` command still reproduces it after the kit has exited.

The kit hands a tool's files to it under a scratch folder that is gone once the run ends, so
the printed command makes those files again (in a folder of its own, never in the plugin's),
and pasted into a shell it gets the same answer the kit got.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from conformance.fengyu.syscall_trace import effects_unseen
from conformance.fengyu.tool_files import EXAMPLES, ToolFiles
from tests.conftest import FIXTURE_PLUGINS, copy_plugin

CRASH = "ValueError: invalid literal for int()"
REPRODUCE = "reproduce: "


def _reproduction(lines: list[str]) -> str:
    """The one `reproduce:` command among lines (terminal output or a finding's message);
    with CI set, pytest's short summary repeats the whole finding, so it may appear twice."""
    (command,) = {line.strip()[len(REPRODUCE) :] for line in lines if REPRODUCE in line}
    return command


def _paste(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command run as a user pasting it into a shell would run it."""
    return subprocess.run(
        ["sh", "-c", command], cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )


def _listing(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.long
def test_a_crash_on_a_handed_file_reproduces_from_the_terminal(run_kit, tmp_path: Path) -> None:
    """The tool crashes only on the file and folder it is handed; without them it answers
    that its folder is not granted, which is what the printed command used to show."""
    plugin = copy_plugin(FIXTURE_PLUGINS / "FY-TOOL-001-crashes-on-its-handed-file", tmp_path)
    result = run_kit([plugin], "-k", ":FY-TOOL-001:")
    (finding,) = result.findings("FY-TOOL-001")
    assert CRASH in finding["message"]
    before = _listing(plugin)
    elsewhere = tmp_path / "elsewhere"  # the command names every folder it uses
    elsewhere.mkdir()

    done = _paste(_reproduction(result.result.stdout.lines), elsewhere)

    assert CRASH in done.stderr, done.stdout
    assert done.stdout == ""
    assert done.returncode != 0
    assert _listing(plugin) == before
    assert os.listdir(elsewhere) == []


def test_an_effect_finding_reproduces_from_the_json_report(run_kit, tmp_path: Path) -> None:
    """The tool reads the file it is handed and writes beside it: pasted after the run, the
    command gets the kit's answer, and the file it writes lands outside the plugin."""
    if effects_unseen():
        pytest.skip(effects_unseen())
    plugin = copy_plugin(FIXTURE_PLUGINS / "FY-EFF-002-writes-beside-its-input", tmp_path)
    result = run_kit([plugin], "-k", ":FY-EFF-002:")
    (finding,) = result.findings("FY-EFF-002")
    lines = finding["message"].splitlines()
    (reply,) = [json.loads(line[len("reply: ") :]) for line in lines if line.startswith("reply: ")]
    before = _listing(plugin)

    done = _paste(_reproduction(lines), tmp_path)

    (answer,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert answer.get("result") == reply, done.stderr
    assert _listing(plugin) == before


def test_a_reproduction_makes_its_files_afresh_each_time(run_kit, tmp_path: Path) -> None:
    """Pasted twice, the command hands the tool the same pristine file both times: the
    fixture appends to it, as the kit's calls did before the one reported."""
    if effects_unseen():
        pytest.skip(effects_unseen())
    plugin = copy_plugin(FIXTURE_PLUGINS / "FY-EFF-001-appends-to-its-input", tmp_path)
    result = run_kit([plugin], "-k", ":FY-EFF-001:")
    (finding,) = result.findings("FY-EFF-001")
    command = _reproduction(finding["message"].splitlines())

    answers = [json.loads(_paste(command, tmp_path).stdout) for _ in range(2)]

    assert answers[0] == answers[1]
    assert answers[0]["result"]["summary"] == "1 lines"


def test_a_reproduction_copies_the_examples_whatever_the_tool_is_called(tmp_path: Path) -> None:
    """A plugin's examples are copied into the reproduction's folder, not handed in place, and
    a tool name that JSON and the shell both escape still gets its paths spliced in."""
    tool = 'it\'s "odd"'
    examples = tmp_path / "plugin" / EXAMPLES / tool
    examples.mkdir(parents=True)
    (examples / "a.md").write_text("# a\n")
    files = ToolFiles(tmp_path / "plugin", tool, tmp_path / "scratch" / tool)
    params = {"file": str(files.files[0]), "out": str(files.workdir / "out-1")}
    line = json.dumps({"method": "read", "params": params}, ensure_ascii=False)
    worker = (
        "import json, os; p = json.loads(input())['params']; "
        "print(open(p['file']).read(), os.path.isdir(p['out']), end='')"
    )
    command = f"cd {shlex.quote(str(examples))} && printf '%s\\n' {shlex.quote(line)} | python3 -c "
    text = f"reply: {params['file']}\n{REPRODUCE}{command}{shlex.quote(worker)}"
    message = files.as_shipped(text)
    shutil.rmtree(tmp_path / "scratch")

    done = _paste(_reproduction(message.splitlines()), tmp_path)

    assert done.stdout == "# a\n True", done.stderr
    assert message.splitlines()[0] == "reply: $w/inputs/a.md"
    assert os.listdir(examples) == ["a.md"]


WRITES_INTO_ITS_PACKAGE = '''#!/usr/bin/env python3
"""Greets, and keeps the last name beside its own code: a write the sandbox refuses."""

import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from misbehaving_worker import run


def greet(params):
    (Path(__file__).resolve().parent / "last_greeted.txt").write_text(params["name"])
    return {"success": True, "summary": "greeted", "greeting": "Hello!"}


run({"greet": greet})
'''


def test_a_refusal_of_the_sandbox_reproduces_in_the_sandbox(run_kit, tmp_path: Path) -> None:
    """The kit runs the worker in the sandbox, where a write into the package is refused;
    pasted, the command runs it there too, so it fails the same way and the author's
    folder stays as it was (unconfined, the write succeeded, into the author's folder)."""
    if effects_unseen():
        pytest.skip(effects_unseen())
    plugin = copy_plugin(FIXTURE_PLUGINS / "FY-TOOL-001-answers-internal-error", tmp_path)
    (plugin / "backend" / "worker.py").write_text(WRITES_INTO_ITS_PACKAGE, encoding="utf-8")
    result = run_kit([plugin], "-k", ":FY-TOOL-001:")
    (finding,) = result.findings("FY-TOOL-001")
    assert "Read-only file system" in finding["message"]
    before = _listing(plugin)

    done = _paste(_reproduction(finding["message"].splitlines()), tmp_path)

    (answer,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert "Read-only file system" in answer["error"]["message"], done.stderr
    assert _listing(plugin) == before
