"""Expected-failures baseline: listed failures pass, new ones fail, fixed ones fail as stale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.baseline import BaselineError, load_baseline
from conformance.catalog import load_catalog
from tests.conftest import REPO, plugin_with_manifest

SAMPLE = REPO / "sample_plugins" / "fan.summer.markdown"
# The sample's static items: `-m manifest` runs these. UNCHECKED of them have nothing to look at
# on it (code-first files, a read-write input, a default, flow nodes, official) and are skipped.
UNCHECKED = 8
STATIC = sum(r.suite == "manifest" and r.applies_to("fengyu-v2") for r in load_catalog().values())
STATIC -= UNCHECKED


@pytest.fixture
def dangling(tmp_path: Path) -> Path:
    manifest = json.loads((SAMPLE / "manifest.json").read_text(encoding="utf-8"))
    manifest["aiTools"][0]["method"] = "renderGhost"
    return plugin_with_manifest(tmp_path, manifest, "dangling")


def run_with_baseline(
    pytester: pytest.Pytester, plugin: Path, *entries: tuple[str, str]
) -> pytest.RunResult:
    """Run the kit on plugin with a baseline listing the given (plugin, requirement) pairs."""
    baseline = pytester.path / "baseline.json"
    listed = [{"plugin": p, "requirement": rid, "reason": "known"} for p, rid in entries]
    baseline.write_text(json.dumps({"expected_failures": listed}))
    return pytester.runpytest(
        "-m", "manifest", "--plugin-dir", str(plugin), "--conformance-baseline", str(baseline)
    )


def test_listed_failure_is_expected(pytester: pytest.Pytester, dangling: Path) -> None:
    result = run_with_baseline(pytester, dangling, ("fan.summer.markdown", "FY-MAN-004"))
    result.assert_outcomes(passed=STATIC - 1, xfailed=1, skipped=UNCHECKED)
    assert result.ret == 0


def test_unlisted_failure_still_fails(pytester: pytest.Pytester, dangling: Path) -> None:
    result = run_with_baseline(pytester, dangling, ("fan.summer.markdown", "FY-MAN-003"))
    result.assert_outcomes(passed=STATIC - 2, failed=2, skipped=UNCHECKED)


def test_listed_requirement_that_passes_is_stale(pytester: pytest.Pytester) -> None:
    result = run_with_baseline(pytester, SAMPLE, ("fan.summer.markdown", "FY-MAN-004"))
    result.assert_outcomes(passed=STATIC - 1, failed=1, skipped=UNCHECKED)
    result.stdout.fnmatch_lines(["*stale baseline entry: FY-MAN-004 now passes*"])


def test_entry_for_nothing_checked_fails_the_run(pytester: pytest.Pytester) -> None:
    result = run_with_baseline(pytester, SAMPLE, ("gone.plugin", "FY-MAN-004"))
    result.assert_outcomes(passed=STATIC, failed=1, skipped=UNCHECKED)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "stale baseline entry: gone.plugin FY-MAN-004: the kit checks no such plugin x *",
            "FAILED *conformance.baseline::gone.plugin FY-MAN-004*",
        ]
    )


def test_malformed_baseline_is_a_usage_error(pytester: pytest.Pytester) -> None:
    bad = pytester.path / "baseline.json"
    bad.write_text('{"expected_failures": [{"plugin": 1}]}')
    result = pytester.runpytest(
        "-m", "manifest", "--plugin-dir", str(SAMPLE), "--conformance-baseline", str(bad)
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*baseline.json /expected_failures/0: expected an object*"])


@pytest.mark.parametrize("text", ["[]", "{", '{"expected_failures": {}}'])
def test_load_baseline_names_the_problem(tmp_path: Path, text: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(text)
    with pytest.raises(BaselineError, match=str(path)):
        load_baseline(path)
