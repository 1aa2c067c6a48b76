"""A tool whose every call was refused is not exercised, not a pass (issue 37 section 1).

The fixture MCP server's --picky tools refuse what a search from their schema sends (clock
knows one time zone, status answers only once open was called with the fixture's folder);
offset's description names its zone ("e.g. 'Europe/Warsaw'"). The FengYu fixture
_picky-tool's tool refuses every zone but that one. Without an examples file such items are
`not-exercised`, counted in pytest's summary line, failed by --conformance-strict unless the
baseline lists them; an examples file (with a setup call for status) exercises them all.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from conformance.examples_file import ExamplesError, load_examples
from conformance.exercised import NOT_JUDGED
from conformance.fengyu.syscall_trace import effects_unseen
from conformance.input_hints import candidates, description_examples
from conformance.strategies import InputSpace
from tests.conftest import FIXTURE_PLUGINS, REPO, KitResult

PICKY = REPO / "tests" / "fixtures" / "mcp" / "_picky"
PICKY_TOOL = FIXTURE_PLUGINS / "_picky-tool"
CALLS = ("-k", "MCP-CALL-001 or MCP-ANN-001")
LABEL = "mcp.picky"


@pytest.mark.parametrize(
    ("text", "values"),
    [
        (
            "IANA timezone name (e.g., 'America/New_York', 'Europe/London'). Use 'UTC' as local",
            ["America/New_York", "Europe/London"],
        ),
        ("The repository, for example `/srv/repo`.", ["/srv/repo"]),
        ('A formula such as "=SUM(A1:A3)" or "=A1*2".', ["=SUM(A1:A3)", "=A1*2"]),
        ("Rows to read. Defaults to 10.", ["10"]),
        ("The sheet (default: Sheet1)", ["Sheet1"]),
        ("e.g. America/Chicago", ["America/Chicago"]),
        ("Example: report.xlsx", ["report.xlsx"]),
        ("A time zone, e.g. \u2018Asia/Tokyo\u2019.", ["Asia/Tokyo"]),
        ("Time to convert in 24-hour format (HH:MM)", []),
        (None, []),
    ],
)
def test_a_description_gives_its_examples_in_the_common_forms(
    text: str | None, values: list[str]
) -> None:
    assert description_examples(text) == values


def test_a_property_suggests_its_examples_default_const_enum_and_description_values() -> None:
    schema = {
        "type": "integer",
        "examples": [5],
        "default": 10,
        "enum": [5, 10, 20],
        "description": "Rows, e.g. 20.",
    }
    assert candidates(schema) == [5, 10, 5, 10, 20, "20", 20]


def test_a_search_starts_from_the_suggested_values_and_the_given_arguments() -> None:
    schema = {
        "type": "object",
        "properties": {
            "zone": {"type": "string", "description": "An IANA zone (e.g. 'Europe/Warsaw')."},
            "rows": {"type": "integer", "examples": [3]},
        },
        "required": ["zone", "rows"],
    }
    plain = InputSpace.of(schema)
    seeded = plain.seeded([{"zone": "UTC", "rows": 1}, {"zone": 7}], None, "examples.json /t")

    assert seeded.minimal() == {"zone": "UTC", "rows": 1}
    assert seeded.dropped == (
        "examples.json /t/1 does not match the inputSchema: 7 is not of type 'string'",
    )
    hinted = plain.seeded().strategy
    from hypothesis import find

    assert find(hinted, lambda v: True) == {"zone": "Europe/Warsaw", "rows": 3}


def test_an_examples_file_that_is_not_one_is_refused_naming_its_pointer(tmp_path: Path) -> None:
    bad = tmp_path / "examples.json"
    bad.write_text('{"clock": [{"zone": "UTC"}, "UTC"]}', "utf-8")
    with pytest.raises(ExamplesError, match=r"/clock/1: expected an argument object"):
        load_examples(bad)
    bad.write_text('{"setup": [{"arguments": {}}]}', "utf-8")
    with pytest.raises(ExamplesError, match=r"/setup/0: expected an object with a string 'tool'"):
        load_examples(bad)
    good = tmp_path / "good.json"
    good.write_text(
        '{"clock": [{"zone": "UTC"}], "setup": [{"tool": "open", "arguments": {"f": "r"}}]}',
        "utf-8",
    )
    examples = load_examples(good)
    assert examples.of("clock") == ({"zone": "UTC"},)
    assert examples.of("open") == ({"f": "r"},)  # a setup call's arguments are known to work
    assert [c.tool for c in examples.setup_for({"open", "clock"})] == ["open"]
    assert examples.setup_for({"clock"}) == []


def run_picky(pytester: pytest.Pytester, *args: str) -> KitResult:
    report_base = pytester.path / "kit-report"
    result = pytester.runpytest(
        "--mcp-config", str(PICKY / "mcp.json"), "--conformance-report", str(report_base), *args
    )
    report_file = report_base.with_suffix(".json")
    report = json.loads(report_file.read_text()) if report_file.exists() else {}
    return KitResult(result, report)


def statuses(result: KitResult, requirement: str) -> dict[str, str]:
    return {
        r["tool"]: r["status"] for r in result.report["results"] if r["requirement"] == requirement
    }


def test_a_tool_whose_every_call_was_refused_is_not_exercised(pytester: pytest.Pytester) -> None:
    result = run_picky(pytester, *CALLS)

    assert statuses(result, "MCP-CALL-001") == {
        "echo": "passed",
        "add": "passed",
        "offset": "passed",  # its description names the zone it knows
        "clock": "not-exercised",
        "open": "not-exercised",
        "status": "not-exercised",
    }
    clock = next(
        r
        for r in result.report["results"]
        if r["requirement"] == "MCP-CALL-001" and r["tool"] == "clock"
    )
    assert "--examples-file" in clock["not_exercised"]
    assert clock["last_error"].startswith("isError: unknown time zone")
    assert result.result.ret == 0
    outcomes = result.result.parseoutcomes()
    assert outcomes["not"] == 3 + (0 if effects_unseen() else 2)  # "N not exercised"
    text = result.result.stdout.str()
    assert "3 of 6 tools exercised with a successful call" in text
    assert "not exercised: mcp.picky status: " in text
    assert "no folder is open: call open first" in text

    tools = {t["tool"]: t for t in result.report["tools"]}
    assert set(tools) == {"echo", "add", "offset", "clock", "open", "status"}
    assert tools["clock"]["calls"] > 0 and tools["clock"]["successful_calls"] == 0
    assert tools["offset"]["successful_calls"] > 0 and tools["offset"]["exercised"]
    assert all(t["target"] == LABEL for t in tools.values())
    claims = {(c["tool"], c["claim"]): c for c in result.report["claims"]}
    assert not claims[("clock", "readOnlyHint: true")]["verified"]
    assert not claims[("open", "destructiveHint: false")]["verified"]
    assert claims[("open", "destructiveHint: false")]["why"] == NOT_JUDGED
    assert claims[("echo", "readOnlyHint: true")]["verified"] is not bool(effects_unseen())


def test_strict_fails_a_tool_not_exercised_unless_the_baseline_accepts_it(
    pytester: pytest.Pytester,
) -> None:
    only = ("-k", "MCP-CALL-001")
    strict = run_picky(pytester, *only, "--conformance-strict")
    assert strict.result.ret == 1
    strict.result.assert_outcomes(passed=3, failed=3)
    assert "not exercised, which --conformance-strict fails" in strict.result.stdout.str()

    baseline = pytester.path / "baseline.json"
    entries = [
        {"plugin": LABEL, "requirement": "MCP-CALL-001", "tool": tool, "reason": "needs a zone"}
        for tool in ("clock", "open", "status")
    ]
    baseline.write_text(json.dumps({"expected_failures": entries}), "utf-8")
    accepted = run_picky(
        pytester, *only, "--conformance-strict", "--conformance-baseline", str(baseline)
    )
    assert accepted.result.ret == 0
    accepted.result.assert_outcomes(passed=3, xfailed=3)
    assert statuses(accepted, "MCP-CALL-001")["clock"] == "expected-failure"


def test_an_examples_file_exercises_every_tool(pytester: pytest.Pytester) -> None:
    result = run_picky(
        pytester, *CALLS, "--conformance-strict", "--examples-file", str(PICKY / "examples.json")
    )

    assert set(statuses(result, "MCP-CALL-001").values()) == {"passed"}
    assert result.result.ret == 0
    assert "6 of 6 tools exercised with a successful call" in result.result.stdout.str()
    tools = {t["tool"]: t for t in result.report["tools"]}
    assert all(t["successful_calls"] > 0 for t in tools.values())
    if not effects_unseen():
        claims = {(c["tool"], c["claim"]): c["verified"] for c in result.report["claims"]}
        assert claims[("clock", "readOnlyHint: true")]
        assert claims[("status", "readOnlyHint: true")]  # after the setup call opened it


def test_a_fengyu_tool_refusing_every_call_is_not_exercised_and_an_example_exercises_it(
    run_kit, tmp_path: Path
) -> None:
    plugin = shutil.copytree(PICKY_TOOL, tmp_path / PICKY_TOOL.name)
    selected = ("-k", "FY-TOOL-001 or FY-EFF-001 or FY-EFF-003")
    bare = run_kit([plugin], *selected)
    seeded = run_kit([plugin], *selected, "--examples-file", str(plugin / "examples.json"))

    assert bare.statuses()["FY-TOOL-001"] == "not-exercised"
    assert bare.result.ret == 5  # nothing was checked
    assert "skipped, not applicable or not exercised" in bare.result.stdout.str()
    assert "0 of 1 tools exercised with a successful call" in bare.result.stdout.str()
    (row,) = bare.report["tools"]
    assert row["tool"] == "fixture_zone_time" and row["successful_calls"] == 0
    assert "unknown time zone" in row["last_error"]
    assert seeded.statuses()["FY-TOOL-001"] == "passed"
    (row,) = seeded.report["tools"]
    assert row["successful_calls"] > 0
    claims = {c["claim"]: c for c in seeded.report["claims"]}
    assert claims["effect: read"]["verified"] is not bool(effects_unseen())


def test_a_tool_that_runs_only_as_a_task_is_not_applicable_not_unexercised(
    pytester: pytest.Pytester,
) -> None:
    """server-everything's simulate-research-query (execution.taskSupport "required")
    refuses a plain tools/call, as it should: the kit reported it not-exercised, advised an
    examples file no file could satisfy, and strict failed a server doing what the spec asks
    (issue 37 calibration). Its call items are not applicable, saying why."""
    config = pytester.path / "mcp.json"
    server = REPO / "tests" / "fixtures" / "mcp" / "server.py"
    entry = {"command": sys.executable, "args": [str(server), "--tasks"]}
    config.write_text(json.dumps({"mcpServers": {"tasks": entry}}))
    report_base = pytester.path / "kit-report"
    result = pytester.runpytest(
        "--mcp-config",
        str(config),
        "--conformance-report",
        str(report_base),
        "--conformance-strict",
        "-k",
        "MCP-CALL-001 or MCP-ANN-001 or MCP-UTL-004",
    )
    report = json.loads(report_base.with_suffix(".json").read_text())
    research = {r["requirement"]: r for r in report["results"] if r.get("tool") == "research"}
    assert research["MCP-CALL-001"]["status"] == "not-applicable"
    assert 'taskSupport: "required"' in research["MCP-CALL-001"]["reason"]
    assert research["MCP-ANN-001"]["status"] == "not-applicable"
    assert result.ret == 0, result.stdout.str()[-3000:]
