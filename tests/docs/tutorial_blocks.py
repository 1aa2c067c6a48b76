"""The tutorials' code blocks, run by Sybil as the reader would run them.

Each tutorial runs in a fresh folder of its own, top to bottom:

- a ```sh block runs in bash (`set -euo pipefail`) and must exit 0, or the status its
  `exit=N` option names; a `cd` carries over to the next block, as in a terminal;
- a block with `file=PATH` (```json file=manifest.json) writes PATH, relative to where the
  shell stands; a file that starts with `#!` becomes executable;
- a ```text block right after a ```sh block (prose between them, no other block) is that
  command's output, stdout and stderr as a terminal shows them: the runner compares it with
  what the command printed, line by line, and fails with a diff when they differ. A `...`
  line stands for any number of lines, `...` inside a line for any text (durations,
  temporary paths), and rule lines of `=`, `-` or `_` match at any width (see
  tests/docs/shown_output.py). A ```text block that is not output (code shown, not run)
  says `output=no`; a ```text block elsewhere is shown and not checked;
- any other block without `file=` fails, so the tutorials hold no code that nothing checks.

The commands run with COLUMNS=80, so pytest's output has the width the tutorials show, and
without CI (set, pytest prints whole findings in its short summary and the kit derandomizes):
a reader runs them on their own machine.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sybil import Document, Example, Region, Sybil
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

from tests.docs.shown_output import difference

INFO = re.compile(r"(?P<language>[a-z]+)(?P<options>(?: +[a-z]+=\S+)*) *$\n", re.MULTILINE)
SHOWN = {"text", "console"}
TIMEOUT = 600.0  # a hang guard: each block takes seconds
# Left out of the commands' environment: the test run's own settings, and CI (see above).
READER_UNSET = ("PYTEST_ADDOPTS", "PYTHONPATH", "CI")


def _options(text: str) -> dict[str, str]:
    return dict(option.split("=", 1) for option in text.split())


class TutorialParser:
    def __init__(self) -> None:
        self.lexer = RawFencedCodeBlockLexer(INFO)

    def __call__(self, document: Document) -> Iterator[Region]:
        after_shell = False
        for region in self.lexer(document):
            language = region.lexemes["language"]
            options = _options(region.lexemes["options"])
            source = str(region.lexemes["source"])
            if "file" in options:
                evaluator = write_file
            elif language == "sh":
                evaluator = run_shell
            elif language in SHOWN and after_shell and options.get("output") != "no":
                evaluator = compare_output
            elif language in SHOWN:
                after_shell = False
                continue
            else:
                evaluator = unchecked
            after_shell = evaluator is run_shell
            yield Region(region.start, region.end, (language, options, source), evaluator)


def write_file(example: Example) -> str | None:
    _, options, source = example.parsed
    path = Path(example.namespace["cwd"], options["file"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    if source.startswith("#!"):
        path.chmod(0o755)
    return None


def run_shell(example: Example) -> str | None:
    _, options, source = example.parsed
    state = Path(example.namespace["folder"], ".cwd")
    script = f"set -euo pipefail\n{source}\nprintf '%s' \"$PWD\" > {str(state)!r}\n"
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=example.namespace["cwd"],
        env=example.namespace["env"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    example.namespace["printed"] = done.stdout
    expected = int(options.get("exit", "0"))
    if done.returncode != expected:
        return (
            f"exit status {done.returncode}, expected {expected}:\n{source}\n"
            f"--- output\n{done.stdout}"
        )
    if done.returncode == 0:
        example.namespace["cwd"] = state.read_text()
    return None


def compare_output(example: Example) -> str | None:
    """The shown block against what the command above it printed."""
    _, _, source = example.parsed
    diff = difference(source, example.namespace["printed"])
    if diff is None:
        return None
    return f"the output shown differs from what the command printed:\n{diff}"


def unchecked(example: Example) -> str:
    language, _, source = example.parsed
    return f"a ```{language} block that is neither run nor written (add file=PATH):\n{source}"


def setup(namespace: dict[str, Any]) -> None:
    folder = tempfile.mkdtemp(prefix="tutorial-")
    env = {k: v for k, v in os.environ.items() if k not in READER_UNSET}
    env["COLUMNS"] = "80"
    namespace.update(folder=folder, cwd=folder, env=env, printed="")


def teardown(namespace: dict[str, Any]) -> None:
    shutil.rmtree(namespace["folder"], ignore_errors=True)


TUTORIALS = Sybil(
    parsers=[TutorialParser()],
    path=str(Path(__file__).resolve().parents[2] / "docs"),
    patterns=["tutorials/*.md"],
    setup=setup,
    teardown=teardown,
)
