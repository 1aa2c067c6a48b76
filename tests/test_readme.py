"""The README stays true: its requirement table lists the catalog, its commands exist."""

from __future__ import annotations

import re

from conformance.catalog import load_catalog
from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_requirement_table_matches_the_catalog() -> None:
    rows = dict(re.findall(r"^\| ((?:FY|ERP)-[A-Z]+-\d{3}) \| (MUST|SHOULD) \|", README, re.M))
    assert rows == {rid: r.level.value for rid, r in load_catalog().items()}


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_test_one() -> None:
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.+?)\n```", quick_start)
    assert len(commands) == 2
    assert commands[0].endswith("pytest --plugin-dir sample_plugins/fan.summer.markdown")
    test_command = commands[1].rsplit("&& ", 1)[1]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()
