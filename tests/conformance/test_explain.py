"""`plugin-conformance explain ID` and `pytest --conformance-explain ID`: one requirement as
a user needs it when a run fails, from the catalog."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conformance.catalog import requirement

RID = "FY-MAN-006"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args], capture_output=True, text=True, check=False
    )


def test_explain_prints_level_rule_reason_examples_fix_and_where_to_read_more() -> None:
    r = requirement(RID)
    result = _cli("explain", RID.lower())
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith(f"{RID}  {r.title}\nMUST: a finding fails the run\n")
    for part in ("Rule:", "Why:", f"Fails {RID}:", "Passes:", "Fix:", f"Read more: {r.doc}"):
        assert part in out
    for line in [*r.fails.splitlines(), *r.passes.splitlines()]:
        assert f"    {line}".rstrip() in out.splitlines()
    assert out.index(f"Fails {RID}:") < out.index("Passes:") < out.index("Fix:")


def test_explain_of_an_unknown_id_fails_and_suggests_the_nearest_ones() -> None:
    result = _cli("explain", "FY-MAN-06")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "'FY-MAN-06' is not a requirement id; did you mean FY-MAN-" in result.stderr
    assert "FY-MAN-006" in result.stderr.split("did you mean", 1)[1].split("?")[0]


def test_pytest_option_prints_the_same_text(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--conformance-explain", "ERP-TOOL-005")
    assert result.ret == 0
    assert result.stdout.str().strip() == _cli("explain", "ERP-TOOL-005").stdout.strip()


def test_pytest_option_with_an_unknown_id_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--conformance-explain", "NOPE-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'NOPE-1' is not a requirement id*"])
