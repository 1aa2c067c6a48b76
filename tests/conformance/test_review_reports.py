"""Reports where reviewers look (issue 38 §2): SARIF 2.1.0, the HTML page, and the comparison
of two runs, each made from the run's JSON report alone.

The run is of two fixture plugins copied into the run's folder, as a plugin repository holds
them: one with a namespace violation (ERP-TOOL-005, a finding with a file and line), one whose
package lacks the file FengYu starts (FY-WRK-012, a setup failure). The documented examples in
docs/guide/examples/reports/ are this run's output; REPORT_EXAMPLES=update writes them again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conformance.reports.diff import compare, format_comparison
from conformance.reports.sarif import FINGERPRINT
from tests.conftest import FIXTURE_PLUGINS, REPO, KitResult
from tests.reference_host.test_console_browser import browser  # noqa: F401 (a fixture)

SARIF_SCHEMA = REPO / "tests" / "fixtures" / "sarif" / "sarif-schema-2.1.0.json"
EXAMPLES = REPO / "docs" / "guide" / "examples" / "reports"
NAMESPACE = "ERP-TOOL-005-dotdot"
NO_WORKER = "FY-WRK-012-legacy-executable"


def _run(pytester: pytest.Pytester, *args: str) -> tuple[KitResult, dict[str, Any], str]:
    for name in (NAMESPACE, NO_WORKER):
        if not (pytester.path / name).exists():
            shutil.copytree(FIXTURE_PLUGINS / name, pytester.path / name)
    result = pytester.runpytest(
        "--plugin-dir",
        NAMESPACE,
        "--plugin-dir",
        NO_WORKER,
        "--conformance-report",
        "report",
        "--conformance-sarif",
        "report.sarif",
        *args,
    )
    report = json.loads((pytester.path / "report.json").read_text())
    sarif = json.loads((pytester.path / "report.sarif").read_text())
    html = (pytester.path / "report.html").read_text()
    return KitResult(result, report), sarif, html


def test_sarif_is_valid_2_1_0_with_a_rule_per_requirement_and_findings_on_their_lines(
    pytester: pytest.Pytester,
) -> None:
    kit, sarif, _ = _run(pytester)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(sarif)
    (run,) = sarif["runs"]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert set(rules) == {"ERP-TOOL-005", "FY-WRK-012"}
    assert rules["ERP-TOOL-005"]["defaultConfiguration"]["level"] == "error"
    assert rules["ERP-TOOL-005"]["properties"]["specification"] == (
        "docs/spec/erp.md#the-namespace-rule"
    )
    assert "Point handlerConfig.path" in rules["ERP-TOOL-005"]["help"]["text"]
    namespace = next(r for r in run["results"] if r["ruleId"] == "ERP-TOOL-005")
    physical = namespace["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"] == {
        "uri": f"{NAMESPACE}/metadata/tool/hello.greeting.get.json",
        "uriBaseId": "SRCROOT",
    }
    record = next(r for r in kit.report["results"] if r["requirement"] == "ERP-TOOL-005")
    assert physical["region"]["startLine"] == record["findings"][0]["line"]
    assert namespace["level"] == "error" and namespace["kind"] == "fail"
    assert run["results"][0]["ruleIndex"] is not None
    # Setup failures: results, and notifications saying the rest was not checked.
    notified = {n["descriptor"]["id"] for n in run["invocations"][0]["toolExecutionNotifications"]}
    assert notified == {"FY-WRK-012"}
    assert all(r["properties"]["setup"] == (r["ruleId"] != "ERP-TOOL-005") for r in run["results"])


def test_a_finding_keeps_its_fingerprint_across_runs(pytester: pytest.Pytester) -> None:
    _, first, _ = _run(pytester)
    _, second, _ = _run(pytester, "-p", "no:randomly")

    def prints(log: dict[str, Any]) -> list[str]:
        return sorted(r["partialFingerprints"][FINGERPRINT] for r in log["runs"][0]["results"])

    assert prints(first) == prints(second)
    assert len(set(prints(first))) == len(prints(first))


def test_the_html_page_shows_each_target_its_areas_and_findings_in_chromium(
    pytester: pytest.Pytester,
    browser: Any,  # noqa: F811
) -> None:
    kit, _, html = _run(pytester)
    page = browser.new_page()
    foreign: list[str] = []
    page.on(
        "request",
        lambda request: (
            foreign.append(request.url) if not request.url.startswith("file:") else None
        ),
    )
    try:
        page.goto((pytester.path / "report.html").as_uri())
        text = page.inner_text("body")
        page.screenshot(path=str(pytester.path / "report.png"), full_page=True)
    finally:
        page.close()
    assert foreign == []  # self-contained: nothing fetched
    assert (pytester.path / "report.png").stat().st_size > 0
    labels = {r["plugin"] for r in kit.report["results"]}
    for label in labels:
        assert label in text
    assert "Setup failure: FY-WRK-012 runtime artifact present" in text
    assert "ERP-TOOL-005 namespace rule (MUST, failed)" in text
    assert "Fix:" in text and "run time" in text
    assert len(re.findall(r"Reproduce:\s+pytest --plugin-dir", text)) == 2  # each rerun line
    assert re.search(r"area\s+failed", text)  # the matrix's header
    assert "<script" not in html


def test_html_escapes_what_a_plugin_wrote() -> None:
    from conformance.reports.html import html_report

    record = {
        "plugin": "x<script>",
        "requirement": "FY-MAN-003",
        "title": "manifest schema",
        "level": "MUST",
        "status": "failed",
        "findings": [{"message": "<img src=x onerror=alert(1)>", "file": "manifest.json"}],
    }
    page = html_report({"kit": {"name": "k", "version": "1"}, "plugins": [], "results": [record]})
    assert "<img" not in page and "<script>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def _record(target: str, requirement: str, status: str, tool: str | None = None) -> dict[str, Any]:
    return {"plugin": target, "requirement": requirement, "status": status, "tool": tool}


def test_diff_tells_regressed_fixed_appeared_and_disappeared_per_target() -> None:
    old = {
        "results": [
            _record("a", "FY-MAN-003", "failed"),
            _record("a", "FY-TOOL-001", "passed", "t1"),
            _record("a", "FY-TOOL-001", "passed", "t2"),
            _record("b", "MCP-CALL-001", "warned", "echo"),
        ]
    }
    new = {
        "results": [
            _record("a", "FY-MAN-003", "passed"),
            _record("a", "FY-TOOL-001", "not-exercised", "t1"),
            _record("a", "FY-TOOL-001", "failed", "t3"),
            _record("c", "MCP-LIF-001", "passed"),
        ]
    }
    comparison = compare(old, new)
    assert [(c.target, c.item) for c in comparison.regressed] == [
        ("a", "FY-TOOL-001 [t1]"),
        ("a", "FY-TOOL-001 [t3]"),
    ]
    assert [c.item for c in comparison.fixed] == ["FY-MAN-003"]
    assert [c.item for c in comparison.appeared] == ["FY-TOOL-001 [t3]", "MCP-LIF-001"]
    assert [(c.target, c.item) for c in comparison.disappeared] == [
        ("a", "FY-TOOL-001 [t2]"),
        ("b", "MCP-CALL-001 [echo]"),
    ]
    assert comparison.targets_added == ["c"] and comparison.targets_removed == ["b"]
    text = format_comparison(comparison)
    assert "  a FY-TOOL-001 [t1]: passed -> not-exercised" in text
    assert text.endswith("2 regressed, 1 fixed, 2 appeared, 2 disappeared\n")


def test_the_diff_command_exits_1_on_a_regression_and_names_a_bad_file(
    pytester: pytest.Pytester,
) -> None:
    _run(pytester)
    fixed = pytester.path / "fixed.json"
    report = json.loads((pytester.path / "report.json").read_text())
    for record in report["results"]:
        if record["requirement"] == "ERP-TOOL-005":
            record["status"], record["findings"] = "passed", []
    fixed.write_text(json.dumps(report))

    def diff(*paths: Path) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "conformance", "diff", *map(str, paths)]
        return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)

    better = diff(pytester.path / "report.json", fixed)
    assert better.returncode == 0, better.stderr
    assert "fixed (1):\n  hello-plugin ERP-TOOL-005: failed -> passed" in better.stdout
    if os.environ.get("REPORT_EXAMPLES") == "update":
        (EXAMPLES / "diff.txt").write_text(better.stdout, "utf-8")
    assert (EXAMPLES / "diff.txt").read_text("utf-8") == better.stdout
    page = (REPO / "docs" / "guide" / "reports.md").read_text("utf-8")
    shown = page.split("$ plugin-conformance diff base.json head.json\n", 1)[1].split("```")[0]
    assert shown == better.stdout, "docs/guide/reports.md shows another diff than the command's"
    worse = diff(fixed, pytester.path / "report.json")
    assert worse.returncode == 1
    assert "regressed (1):" in worse.stdout
    bad = pytester.path / "bad.json"
    bad.write_text('{"results": [{"plugin": "x"}]}')
    refused = diff(bad, fixed)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"error: {bad} /results: expected the list of records a --conformance-report JSON "
        "file holds (each with plugin, requirement and status)\n"
    )


def _normalised(text: str, run_dir: Path) -> str:
    """An output with what differs between machines and runs replaced: the run's folder, its
    start and its length."""
    text = text.replace(run_dir.resolve().as_uri(), "file:///RUN").replace(str(run_dir), "/RUN")
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", "2026-12-07T00:00:00+00:00", text)
    text = re.sub(r'("seconds": )[0-9.e-]+', r"\g<1>0.0", text)
    return re.sub(r"run time [0-9.]+ s", "run time 0.0 s", text)


def test_the_documented_examples_are_this_runs_output(pytester: pytest.Pytester) -> None:
    """docs/guide/reports.md shows these files; REPORT_EXAMPLES=update writes them again."""
    _run(pytester, "-p", "no:randomly", "--conformance-seed", "1")
    made = {
        "report.sarif": (pytester.path / "report.sarif").read_text(),
        "report.html": (pytester.path / "report.html").read_text(),
    }
    made = {name: _normalised(text, pytester.path) for name, text in made.items()}
    if os.environ.get("REPORT_EXAMPLES") == "update":
        EXAMPLES.mkdir(parents=True, exist_ok=True)
        for name, text in made.items():
            (EXAMPLES / name).write_text(text, "utf-8")
    for name, text in made.items():
        kept = (EXAMPLES / name).read_text("utf-8")
        assert kept == text, f"{EXAMPLES / name} is stale: run with REPORT_EXAMPLES=update"


def test_the_actions_compare_step_fails_the_job_on_a_regression(
    pytester: pytest.Pytester,
) -> None:
    """action.yml's compare step, run as GitHub runs a bash step (bash -e -o pipefail), with
    this venv's plugin-conformance on PATH."""
    import yaml

    _run(pytester)
    action = yaml.safe_load((REPO / "action.yml").read_text())
    (step,) = [
        s for s in action["runs"]["steps"] if s.get("name") == "Compare with the earlier run"
    ]
    fixed = json.loads((pytester.path / "report.json").read_text())
    for record in fixed["results"]:
        if record["requirement"] == "ERP-TOOL-005":
            record["status"] = "passed"
    (pytester.path / "base.json").write_text(json.dumps(fixed))
    summary = pytester.path / "summary.md"
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "OLD": "base.json",
        "REPORT": "report",
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=pytester.path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "regressed (1):\n  hello-plugin ERP-TOOL-005: passed -> failed" in done.stdout
    assert summary.read_text().startswith("```text\nregressed (1):")
