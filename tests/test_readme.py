"""The README and the guides it links stay true: the requirement table covers the catalog, the
quick start's test command is CI's, and the provider matrices are what the command prints."""

from __future__ import annotations

import re

import pytest

from conformance.__main__ import main
from conformance.catalog import load_catalog
from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
REQUIREMENTS_PAGE = REPO / "docs" / "guide" / "requirements.md"
MATRIX_PAGE = REPO / "docs" / "guide" / "providers-matrix.md"


def test_requirement_table_covers_exactly_the_catalog() -> None:
    """Each row gives a range of ids (`FY-MAN-001..015`); together they are the catalog."""
    table = REQUIREMENTS_PAGE.read_text(encoding="utf-8")
    listed = set()
    for prefix, first, last in re.findall(
        r"^\| [^|]+ \| ([A-Z]+-[A-Z]+)-(\d{3})\.\.(\d{3}) \|", table, re.M
    ):
        listed |= {f"{prefix}-{n:03}" for n in range(int(first), int(last) + 1)}
    assert listed == set(load_catalog())


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_test_one() -> None:
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.+?)\n```", quick_start)
    assert len(commands) == 2
    assert commands[0].endswith("pytest --plugin-dir sample_plugins/fan.summer.markdown")
    test_command = commands[1].rsplit("&& ", 1)[1]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()


@pytest.mark.parametrize(
    ("folder", "status"),
    [("sample_plugins", 0), ("tests/data/fengyu_realworld/OfficialPlugins", 1)],
)
def test_provider_matrices_are_what_the_command_prints(folder: str, status: int, capsys) -> None:
    """The tools x providers matrices of docs/guide/providers-matrix.md are
    `plugin-conformance providers FOLDER`; it exits 1 where a provider refuses (Anthropic,
    fan.summer.email's request)."""
    begin, end = f"<!-- provider matrix: {folder} -->\n", "\n<!-- end of provider matrix -->"
    shown = MATRIX_PAGE.read_text(encoding="utf-8").split(begin, 1)[1].split(end, 1)[0]
    assert main(["providers", str(REPO / folder)]) == status
    assert shown == capsys.readouterr().out.strip(), (
        f"docs/guide/providers-matrix.md's matrix for {folder} is stale: paste the output of "
        f"`plugin-conformance providers {folder}` between its markers"
    )


def test_providers_command_says_when_there_is_nothing_to_judge(tmp_path, capsys) -> None:
    """A folder with no plugin tool prints no empty table, but says so, and one that is not a
    folder is an error."""
    assert main(["providers", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "no plugin here has a tool to judge" in captured.err
    assert main(["providers", str(tmp_path / "missing")]) == 2
    assert "is not a folder" in capsys.readouterr().err
