"""The pytest plugin as users meet it: options, test ids, outcomes, reports and baselines."""

from __future__ import annotations

import json
import os
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import psutil
import pytest

from conformance.catalog import load_catalog
from conformance.fengyu import harness
from conformance.report import markdown
from tests.conftest import FIXTURE_PLUGINS, REPO, failures, plugin_with_manifest, run_pytest

SAMPLE = REPO / "sample_plugins" / "fan.summer.markdown"
DANGLING = FIXTURE_PLUGINS / "FY-MAN-004-dangling-method"
# The sample's static items with nothing to look at: it is manifest-first (no
# manifest.base.json, no sidecars), no parameter asks for read-write file access, none declares
# a default, it has no flowNodes and is not official. Not applicable: pytest counts them skipped.
SAMPLE_NOT_APPLICABLE = (
    "FY-MAN-017",
    "FY-MAN-018",
    "FY-MAN-019",
    "FY-MAN-020",
    "FY-MAN-022",
    "FY-MAN-023",
    "FY-MAN-024",
    "FY-MAN-026",
)


def sample_manifest() -> dict:
    return json.loads((SAMPLE / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture
def dangling(tmp_path: Path) -> Path:
    manifest = sample_manifest()
    manifest["aiTools"][0]["method"] = "renderGhost"
    return plugin_with_manifest(tmp_path, manifest, "dangling")


@pytest.fixture
def should_only(tmp_path: Path) -> Path:
    """A plugin whose only finding is a SHOULD: files.read missing for a FileRef parameter.
    With no permissions listed, FY-MAN-028 (no permission twice) is not applicable too."""
    manifest = sample_manifest()
    manifest["permissions"] = []
    return plugin_with_manifest(tmp_path, manifest, "should-only")


def test_inert_without_plugin_dir(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_own(): pass")
    pytester.runpytest().assert_outcomes(passed=1)


def test_plugin_dir_replaces_the_repos_own_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_own(): assert False")
    result = pytester.runpytest("-m", "manifest", "--plugin-dir", str(SAMPLE), "-v")
    result.assert_outcomes(passed=_applicable(), skipped=len(SAMPLE_NOT_APPLICABLE))
    assert "test_own" not in result.stdout.str()


def test_test_ids_name_plugin_requirement_and_title(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "-m", "manifest", "--plugin-dir", str(SAMPLE), "--collect-only", "-q"
    )
    result.stdout.fnmatch_lines([f"{len(_requirements('fengyu-v2'))}/* tests collected*"])
    lines = [line for line in result.stdout.lines if line.startswith("conformance.")]
    assert "conformance.fan.summer.markdown.manifest::FY-MAN-004 aiTools method resolves" in lines
    assert len(lines) == len(_requirements("fengyu-v2"))


def test_list_requirements_prints_the_catalog(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--list-requirements")
    assert result.ret == 0
    for rid, requirement in load_catalog().items():
        result.stdout.fnmatch_lines([f"{rid}*{requirement.level.value}*{requirement.title}*"])


def test_must_failure_prints_file_pointer_requirement_and_fix(
    pytester: pytest.Pytester, dangling: Path
) -> None:
    result = pytester.runpytest("-m", "manifest", "--plugin-dir", str(dangling))
    result.assert_outcomes(passed=_applicable() - 1, failed=1, skipped=len(SAMPLE_NOT_APPLICABLE))
    result.stdout.fnmatch_lines(
        [
            "*FY-MAN-004 (MUST) aiTools method resolves*",
            "*manifest.json:* /aiTools/0/method",
            "*method 'renderGhost' is not a key of rpc.methods (declared: outline, render)",
            "*fix (FY-MAN-004): *",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_each_distinct_fix_is_printed_once(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """Findings bring their own fix instead of the requirement's hint; findings that need the
    same change print it once."""
    manifest = sample_manifest()
    manifest["license"] = "MIT"
    for tool in manifest["aiTools"]:
        tool["effect"] = "delete"
    text = json.dumps(manifest, indent=2).replace('"effect": "delete"', '"effect": 1, "effect": 2')
    plugin = plugin_with_manifest(tmp_path, text, "fixes")
    result = pytester.runpytest("-m", "manifest", "--plugin-dir", str(plugin), "-k", "FY-MAN-00")
    lines = [line.strip() for line in failures(result).splitlines()]
    lines = [line for line in lines if line.startswith("fix (")]
    assert 'fix (FY-MAN-003): remove "license" from the manifest, or correct its spelling ' in (
        "\n".join(lines)
    )
    duplicate_fixes = [line for line in lines if line.startswith("fix (FY-MAN-002)")]
    assert duplicate_fixes == [
        "fix (FY-MAN-002): remove one of the two 'effect' keys, or rename one"
    ]
    assert failures(result).count("key 'effect' appears twice") == 2
    effect_fixes = [line for line in lines if line.startswith("fix (FY-MAN-005)")]
    assert effect_fixes == [
        f'fix (FY-MAN-005): set aiTools[{i}].effect to one of "read", "write", "external" (enum)'
        for i in range(len(manifest["aiTools"]))
    ]
    assert load_catalog()["FY-MAN-005"].hint not in result.stdout.str()


def test_keyword_selection_runs_one_requirement(pytester: pytest.Pytester, dangling: Path) -> None:
    result = pytester.runpytest("-m", "manifest", "--plugin-dir", str(dangling), "-k", "FY-MAN-004")
    result.assert_outcomes(failed=1)


def test_should_finding_warns_and_passes(pytester: pytest.Pytester, should_only: Path) -> None:
    result = pytester.runpytest("-m", "manifest", "--plugin-dir", str(should_only))
    result.assert_outcomes(
        passed=_applicable() - 1, skipped=len(SAMPLE_NOT_APPLICABLE) + 1, warnings=1
    )
    result.stdout.fnmatch_lines(["*ConformanceWarning: FY-FILE-003 (SHOULD)*"])
    assert result.ret == 0


def test_strict_fails_on_should(pytester: pytest.Pytester, should_only: Path) -> None:
    result = pytester.runpytest(
        "-m", "manifest", "--plugin-dir", str(should_only), "--conformance-strict"
    )
    result.assert_outcomes(
        passed=_applicable() - 2, failed=1, skipped=len(SAMPLE_NOT_APPLICABLE) + 1
    )
    result.stdout.fnmatch_lines(["*FY-FILE-003 (SHOULD) file permissions declared*"])


def test_unloadable_manifest_fails_one_requirement_and_skips_the_rest(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    broken = plugin_with_manifest(tmp_path, '{"schemaVersion": 2,,}', "broken")
    result = pytester.runpytest("-m", "manifest", "--plugin-dir", str(broken), "-rs")
    result.assert_outcomes(failed=1, skipped=len(_requirements("fengyu-v2")) - 1)
    result.stdout.fnmatch_lines(["*manifest.json:1", "*manifest.json is not valid JSON*"])


def test_unknown_provider_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "-m", "manifest", "--plugin-dir", str(SAMPLE), "--conformance-provider", "openai,mistral"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--conformance-provider: unknown provider mistral (known: openai, anthropic, gemini)*"]
    )
    assert "Traceback" not in result.stderr.str()


def test_missing_plugin_dir_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-m", "manifest", "--plugin-dir", "no/such/dir")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--plugin-dir no/such/dir: * is not a folder*"])
    assert "Traceback" not in result.stderr.str()


def test_several_plugin_dirs_and_duplicate_ids_get_distinct_labels(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(SAMPLE, copy)
    manifest = sample_manifest()
    for tool in manifest["aiTools"]:
        tool["name"] = "other_" + tool["name"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    result = pytester.runpytest(
        "-m",
        "manifest",
        "--plugin-dir",
        str(SAMPLE),
        "--plugin-dir",
        str(copy),
        "--collect-only",
        "-q",
    )
    assert f"fan.summer.markdown@{copy}.manifest::FY-MAN-001 manifest loads" in result.stdout.str()
    assert f"fan.summer.markdown@{SAMPLE}.manifest::FY-MAN-001 manifest loads" in (
        result.stdout.str()
    )


def test_junit_xml_carries_requirement_properties(
    pytester: pytest.Pytester, dangling: Path
) -> None:
    junit = pytester.path / "junit.xml"
    pytester.runpytest("-m", "manifest", "--plugin-dir", str(dangling), f"--junitxml={junit}")
    cases = ET.parse(junit).getroot().iter("testcase")
    properties = {
        (case.get("classname"), case.get("name")): {
            p.get("name"): p.get("value") for p in case.iter("property")
        }
        for case in cases
    }
    key = ("conformance.fan.summer.markdown.manifest", "FY-MAN-004 aiTools method resolves")
    failing = properties[key]
    assert failing == {
        "requirement": "FY-MAN-004",
        "level": "MUST",
        "plugin": "fan.summer.markdown",
    }


def test_json_report_has_a_record_per_check(run_kit, dangling: Path) -> None:
    kit = run_kit([dangling], "-m", "manifest")
    records = kit.report["results"]
    assert len(records) == len(_requirements("fengyu-v2"))
    not_applicable = [r["requirement"] for r in records if r["status"] == "not-applicable"]
    assert not_applicable == list(SAMPLE_NOT_APPLICABLE)
    failed = [r for r in records if r["status"] == "failed"]
    assert [(r["requirement"], r["plugin"]) for r in failed] == [
        ("FY-MAN-004", "fan.summer.markdown")
    ]
    assert failed[0]["findings"][0]["pointer"] == "/aiTools/0/method"
    assert kit.report["plugins"][0]["file_parameters"] == [
        {
            "tool": "markdown_outline",
            "parameter": "filePath",
            "class": "read-file",
            "route": "B (host injects a matching grant)",
            "by": "marker",
        }
    ]


def test_markdown_summary(run_kit, pytester: pytest.Pytester, dangling: Path) -> None:
    run_kit([dangling], "-m", "manifest")
    md = (pytester.path / "kit-report.md").read_text(encoding="utf-8")
    passed, not_applicable = _applicable() - 1, len(SAMPLE_NOT_APPLICABLE)
    assert (
        f"| fan.summer.markdown | fengyu-v2 | {passed} | 0 | 1 | 0 | 0 | 0 | {not_applicable} |"
    ) in md
    assert "### fan.summer.markdown FY-MAN-004 (MUST, failed): aiTools method resolves" in md
    assert "`/aiTools/0/method`" in md
    assert "## Time per suite" in md
    static = len(_requirements("fengyu-v2"))
    assert f"| fan.summer.markdown | manifest | {static} |" in md


def test_json_records_carry_suite_and_seconds(run_kit, dangling: Path) -> None:
    records = run_kit([dangling], "-m", "manifest").report["results"]
    assert {r["suite"] for r in records} == {"manifest"}
    assert all(isinstance(r["seconds"], float) and r["seconds"] >= 0 for r in records)


def _requirements(profile: str) -> list[str]:
    """Static requirements of a profile: these tests run the kit with `-m manifest`."""
    return _suite_requirements(profile, "manifest")


def _suite_requirements(profile: str, suite: str) -> list[str]:
    return [rid for rid, r in load_catalog().items() if r.applies_to(profile) and r.suite == suite]


def _applicable() -> int:
    """The sample's static items that are checked (and pass, unless a test breaks one)."""
    return len(_requirements("fengyu-v2")) - len(SAMPLE_NOT_APPLICABLE)


def test_plugin_repo_conftest_is_not_loaded(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("raise ImportError('the plugin repo needs something not installed')")
    result = pytester.runpytest("-m", "manifest", "--plugin-dir", str(SAMPLE))
    result.assert_outcomes(passed=_applicable(), skipped=len(SAMPLE_NOT_APPLICABLE))


def test_report_records_skipped_checks_too(run_kit, tmp_path: Path) -> None:
    broken = plugin_with_manifest(tmp_path, "[1, 2", "broken")
    kit = run_kit([broken], "-rs", "-m", "manifest")
    statuses = kit.statuses()
    assert statuses.pop("FY-MAN-001") == "failed"
    assert set(statuses.values()) == {"skipped"}
    assert len(statuses) == len(_requirements("fengyu-v2")) - 1
    kit.result.stdout.fnmatch_lines(["*broken: the plugin's files did not load (FY-MAN-001)"])


def test_reports_carry_the_v2_equivalent_of_a_v1_manifest(
    run_kit, pytester: pytest.Pytester
) -> None:
    kit = run_kit([FIXTURE_PLUGINS / "FY-LEG-001-clean-v1"], "-m", "manifest")
    (plugin,) = kit.report["plugins"]
    assert plugin["v2_equivalent"]["schemaVersion"] == 2
    md = (pytester.path / "kit-report.md").read_text(encoding="utf-8")
    assert "v2 equivalent of its v1 manifest" in md


def test_kit_run_leaves_no_process_behind(pytester: pytest.Pytester) -> None:
    def running() -> set[int]:
        return {
            p.pid
            for p in psutil.Process().children(recursive=True)
            if p.status() != psutil.STATUS_ZOMBIE
        }

    before = running()
    result = pytester.runpytest("--plugin-dir", str(SAMPLE), "-m", "worker or tools")
    assert result.ret == 0
    assert running() <= before


def test_worker_cmd_option_starts_that_command(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """The command runs every worker probe; it does not hide that FengYu itself would find no
    backend/worker.py to start (FY-WRK-012)."""
    plugin = tmp_path / "plugin"
    shutil.copytree(SAMPLE, plugin)
    worker = plugin / "backend" / "worker.py"
    worker.rename(plugin / "backend" / "serve.py")
    items = len(_suite_requirements("fengyu-v2", "worker"))
    # not applicable on the sample: it writes no @fengyu-log: line during the probe
    # (FY-WRK-016) and declares no backend.resources (FY-WRK-020)
    not_applicable = 2
    result = pytester.runpytest(
        "--plugin-dir",
        str(plugin),
        "-m",
        "worker",
        f"--worker-cmd={sys.executable} backend/serve.py",
        "-rs",
    )
    result.assert_outcomes(passed=items - 1 - not_applicable, failed=1, skipped=not_applicable)
    result.stdout.fnmatch_lines(
        [
            "*FY-WRK-012 (MUST) runtime artifact present*",
            "*FengYu runs `python3 -u backend/worker.py` (backend.runtime), but backend/worker.py"
            " is not in the package; the kit ran --worker-cmd *backend/serve.py* for the other"
            " checks",
            "SKIPPED [[]1[]] *: the worker wrote no @fengyu-log: line to stderr during the probe",
            "SKIPPED [[]1[]] *: the manifest declares no backend.resources*",
        ]
    )
    without = pytester.runpytest("--plugin-dir", str(plugin), "-m", "worker", "-rs")
    without.assert_outcomes(failed=1, skipped=items - 1)
    without.stdout.fnmatch_lines(
        [
            "*FY-WRK-012 (MUST) runtime artifact present*",
            "*FengYu runs `python3 -u backend/worker.py` (backend.runtime), but backend/worker.py"
            " is not in the package; nothing else can be started",
            f"SKIPPED [[]{items - 1 - 1}[]] *: FengYu cannot start the worker (FY-WRK-012)*",
        ]
    )


def test_runs_from_inside_a_plugin_with_a_conformance_folder_without_warnings(
    tmp_path: Path,
) -> None:
    """`python -m pytest --plugin-dir .` in a plugin folder: the current directory comes
    first on sys.path and the plugin's own `conformance/examples/` must not be taken for the
    kit; a plugin's run shows no warning of a third-party pytest plugin either."""
    plugin = shutil.copytree(SAMPLE, tmp_path / "plugin")
    assert (plugin / "conformance").is_dir()
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    result = run_pytest(plugin, "--plugin-dir", ".", "-m", "manifest", env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Warning" not in result.stdout + result.stderr
    counts = f" {_applicable()} passed, {len(SAMPLE_NOT_APPLICABLE)} skipped, "
    assert counts in result.stdout.splitlines()[-1]


def test_a_folder_of_plugins_checks_each_plugin_in_it(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "--plugin-dir", str(REPO / "sample_plugins"), "--collect-only", "-q"
    )
    labels = {line.split("::")[0].rsplit(".", 1)[0] for line in result.stdout.lines if "::" in line}
    assert labels == {
        "conformance.fan.summer.excel",
        "conformance.fan.summer.markdown",
        "conformance.hcm-ai-intelligence",
        "conformance.hcm-employee",
        "conformance.hello-plugin",
    }


def test_plugins_of_one_folder_are_checked_against_each_other(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """Two plugins in a folder that offer one tool name: both fail FY-MAN-008, as two
    --plugin-dir options would."""
    shelf = tmp_path / "shelf"
    for n in (1, 2):
        manifest = sample_manifest()
        manifest["id"] = f"com.example.copy{n}"
        plugin_with_manifest(shelf, manifest, f"copy{n}")
    (shelf / "notes").mkdir()  # not a plugin: left out
    result = pytester.runpytest("-m", "manifest", "--plugin-dir", str(shelf), "-k", "FY-MAN-008")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    for n, other in ((1, 2), (2, 1)):
        result.stdout.fnmatch_lines(
            [f"FAILED *conformance.com.example.copy{n}.manifest::FY-MAN-008*"]
        )
        assert f"'markdown_render' is also offered by plugin com.example.copy{other}" in out


def test_a_finding_cannot_write_the_reports_markup() -> None:
    """A finding quotes what a worker wrote (its stderr): in the Markdown report it stays a
    code block, whatever headings, comments or fences it holds."""
    hostile = "# Plugin conformance report\nAll MUST requirements passed\n<!--\n````\n"
    record = {
        "plugin": "p",
        "profile": "fengyu-v2",
        "requirement": "FY-WRK-001",
        "level": "MUST",
        "status": "failed",
        "title": "worker starts",
        "suite": "worker",
        "seconds": 0.0,
        "findings": [
            {"file": "backend/worker.py", "line": None, "pointer": "", "message": hostile}
        ],
    }
    md = markdown([{"label": "p", "profile": "fengyu-v2"}], [record])
    start = md.index("`````text")
    block = md[start : md.index("\n  `````\n", start)]
    assert "  # Plugin conformance report" in block and "  <!--" in block
    assert md.count("\n# ") == 0 and md.startswith("# Plugin conformance report\n")


def fixture_variant(tmp_path: Path, base: str, worker: str) -> Path:
    """A copy of the fixture plugin base whose backend/worker.py is worker."""
    plugin = tmp_path / base
    shutil.copytree(FIXTURE_PLUGINS / base, plugin)
    (plugin / "backend" / "worker.py").write_text(worker, encoding="utf-8")
    return plugin


def skip_reasons(kit: Any) -> list[str]:
    return [r["reason"] for r in kit.report["results"] if r["status"] == "skipped"]


def test_a_worker_that_dies_on_import_is_skipped_with_its_exit_and_stderr(
    run_kit, tmp_path: Path
) -> None:
    """`-m tools` alone: the skip says the worker exited and quotes why, not that it was
    silent for a timeout it never waited out (the sandbox exits a moment after stdout ends)."""
    worker = "#!/usr/bin/env python3\nimport conformance_kit_no_such_module\n"
    plugin = fixture_variant(tmp_path, "FY-WRK-007-logs-on-stdout", worker)

    kit = run_kit([plugin], "-m", "tools")

    reasons = [r for r in skip_reasons(kit) if "(FY-WRK-001)" in r]
    assert reasons, skip_reasons(kit)
    for reason in reasons:
        assert "worker exited with code 1" in reason
        assert "No module named 'conformance_kit_no_such_module'" in reason
        assert "no answer within" not in reason


REVERSED_IDS_WORKER = '''#!/usr/bin/env python3
"""Answers the probe's three id requests in reverse order, as a worker answering each
request on a thread of its own may."""

import json
import sys
import types

from misbehaving_worker import run

HELD = ("id-\\u00fc-1", 4242, 2**53 + 1)


class Reversing:
    def __init__(self, out):
        self.out, self.held = out, []

    def write(self, data):
        if json.loads(data).get("id") not in HELD:
            return self.out.write(data)
        self.held.append(data)
        if len(self.held) == len(HELD):
            for held in reversed(self.held):
                self.out.write(held)
            self.held.clear()
        return len(data)

    def flush(self):
        self.out.flush()


sys.stdout = types.SimpleNamespace(buffer=Reversing(sys.stdout.buffer))
run()
'''


def test_ids_answered_out_of_order_pass_fy_wrk_006(run_kit, tmp_path: Path) -> None:
    """JSON-RPC matches answers by id, not order: only the ids and their types count."""
    plugin = fixture_variant(tmp_path, "FY-WRK-023-ids-as-doubles", REVERSED_IDS_WORKER)

    kit = run_kit([plugin], "-k", "FY-WRK-006 or FY-WRK-007")

    statuses = kit.statuses()
    assert (statuses["FY-WRK-006"], statuses["FY-WRK-007"]) == ("passed", "passed")


def test_a_call_waited_on_is_named_on_the_terminal(
    run_kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run sitting on a hanging call says which plugin, tool and input it waits on."""
    monkeypatch.setattr(harness, "NOTICE_SECONDS", 0.2)  # the fixture's calls hang 1 s

    kit = run_kit([FIXTURE_PLUGINS / "FY-TOOL-001-hangs"], "-k", "FY-TOOL-001")

    assert kit.statuses()["FY-TOOL-001"] == "failed"
    kit.result.stdout.re_match_lines(
        [
            r"^waiting 0\.2 s on fixture\.fy-tool-001-hangs tool 'fixture_greet' "
            r"\(method 'greet'\) with \{.*\} \(timeout 1 s\)$"
        ]
    )


def test_later_items_of_a_hung_tool_are_skipped_naming_fy_tool_001(run_kit) -> None:
    """A tool whose call timed out is not waited on again: its later items are skipped,
    blocked by FY-TOOL-001, whose finding the hang is."""
    kit = run_kit([FIXTURE_PLUGINS / "FY-TOOL-001-hangs"], "-m", "tools")

    assert kit.statuses()["FY-TOOL-001"] == "failed"
    later = [
        r
        for r in kit.report["results"]
        if r["requirement"] in ("FY-TOOL-002", "FY-TOOL-005") and r["tool"] == "fixture_greet"
    ]
    assert len(later) == 2
    for record in later:
        assert record["status"] == "skipped", record
        assert record["blocked_by"] == ["FY-TOOL-001"], record
        assert "hung earlier in this run" in record["reason"]


def test_minus_m_tools_alone_judges_stdout_written_during_tool_calls(run_kit) -> None:
    """FY-WRK-007 judges what the tools suite's calls write, so `-m tools` selects it too:
    a worker writing to fd 1 inside a handler no longer passes a tools-only run."""
    kit = run_kit([FIXTURE_PLUGINS / "FY-WRK-007-writes-during-tool-call"], "-m", "tools")

    assert kit.statuses()["FY-WRK-007"] == "failed"
    assert "in the tools suite" in kit.result.stdout.str()


def test_a_run_that_checked_nothing_says_why(run_kit, tmp_path: Path) -> None:
    """Every item skipped: the summary names the most frequent reasons, so the cause is on
    the screen without -rs."""
    worker = "#!/usr/bin/env python3\nimport conformance_kit_no_such_module\n"
    plugin = fixture_variant(tmp_path, "FY-WRK-007-logs-on-stdout", worker)

    kit = run_kit([plugin], "-m", "tools")

    summary = kit.result.stdout.str().split("nothing checked", 1)[1]
    assert "worker exited with code 1" in summary
