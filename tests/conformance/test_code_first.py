"""Code-first FengYu folders (manifest.base.json and manifest/ sidecars) and the engines range.

The fixtures prove each requirement on its own; these tests pin what they cannot: which
folders count as plugins, what a run says about an unbuilt folder, and the range grammar.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.fengyu.code_first import BUILT_MANIFEST, CHECKABLE
from conformance.fengyu.version_range import range_problem
from plugin_spec.plugin_folders import expand, is_erp_plugin, is_plugin_folder
from tests.conftest import TESTS

TEMPLATE = TESTS / "data/fengyu_realworld/toolchain/cli/templates/react-go"
BASE = json.loads(
    (TEMPLATE / "manifest.base@b2534282.json.tpl")
    .read_text("utf-8")
    .replace("{{pluginId}}", "com.example.demo")
    .replace("{{pluginName}}", "Demo")
)


def code_first(root: Path, files: dict[str, object] | None = None) -> Path:
    """A code-first folder: the template's base, plus files (JSON, or text) by relative path."""
    root.mkdir(parents=True)
    (root / "manifest.base.json").write_text(json.dumps(BASE), encoding="utf-8")
    for name, content in (files or {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content), "utf-8")
    return root


def test_a_base_alone_makes_a_fengyu_plugin_folder(tmp_path: Path) -> None:
    plugin = code_first(tmp_path / "catalog" / "demo")
    (plugin / "metadata" / "tool").mkdir(parents=True)
    assert is_plugin_folder(plugin)
    assert not is_erp_plugin(plugin)  # the base makes it FengYu's, as manifest.json would
    assert expand([tmp_path / "catalog"]) == [plugin]


def test_unbuilt_folder_says_what_to_build_and_where_the_manifest_will_be(
    tmp_path: Path, run_kit
) -> None:
    plugin = code_first(tmp_path / "demo", {"manifest/i18n/zh.json": {"name": "演示"}})
    result = run_kit([plugin])
    assert result.reported() == set()
    statuses = result.statuses()
    assert {rid for rid, s in statuses.items() if s == "passed"} <= CHECKABLE
    skipped = [r for r in result.report["results"] if r["status"] == "not-applicable"]
    assert {r["requirement"] for r in skipped} >= {"FY-MAN-004", "FY-WRK-001"}
    for record in skipped:
        if record["requirement"] not in CHECKABLE:
            assert "fengyu build" in record["reason"] and BUILT_MANIFEST in record["reason"]
    header = result.result.stdout.str().split("collected")[0]
    assert "code-first folder" in header and "--plugin-dir" in header


def test_sidecar_problems_name_the_sidecar(tmp_path: Path, run_kit) -> None:
    plugin = code_first(
        tmp_path / "demo",
        {
            "manifest/flow-nodes.json": {"flowNodes": [{"tool": "demo_run", "colour": "#fff"}]},
            "manifest/i18n/zh.json": '{"name": "演示", "name": "示例"}',
            "manifest/i18n/fr.json": {"name": ""},
        },
    )
    result = run_kit([plugin], "-m", "manifest")
    assert result.reported() == {"FY-MAN-002", "FY-MAN-003", "FY-MAN-015"}
    assert [f["file"] for f in result.findings("FY-MAN-003")] == ["manifest/flow-nodes.json"]
    assert [f["file"] for f in result.findings("FY-MAN-002")] == ["manifest/i18n/zh.json"]
    assert [f["file"] for f in result.findings("FY-MAN-015")] == ["manifest/i18n/fr.json"]


def test_a_sidecar_that_is_not_json_fails_loading_but_stops_nothing(
    tmp_path: Path, run_kit
) -> None:
    plugin = code_first(tmp_path / "demo", {"manifest/i18n/zh.json": "{"})
    result = run_kit([plugin], "-m", "manifest")
    assert result.reported() == {"FY-MAN-001"}
    assert result.findings("FY-MAN-001")[0]["file"] == "manifest/i18n/zh.json"
    assert result.statuses()["FY-MAN-003"] == "passed"


@pytest.mark.parametrize(
    "text",
    [
        ">=4.0.0-beta.4 <5.0.0",
        "4.1.0",
        "=4.1.0",
        ">4.0.0 <=4.9.9 || >=5.1.0-rc.1+build.7",
        "  >=4.0.0   <5.0.0  ",
    ],
)
def test_ranges_fengyu_reads(text: str) -> None:
    assert range_problem(text) is None


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("^4.0.0", "'^'"),
        ("~4.1.0", "'~'"),
        ("4.x", "wildcard"),
        ("*", "'*'"),
        (">=4.0.0 <5", "'<5'"),
        (">= 4.0.0", "'>='"),
        (">=4.0.0 ||", "empty alternative"),
        ("v4.0.0", "'v4.0.0'"),
        (">=04.0.0", "'>=04.0.0'"),
    ],
)
def test_ranges_fengyu_refuses_name_the_bad_part(text: str, named: str) -> None:
    problem = range_problem(text)
    assert problem is not None and named in problem


def test_a_folder_without_either_manifest_names_both(tmp_path: Path, run_kit) -> None:
    (tmp_path / "empty").mkdir()
    result = run_kit([tmp_path / "empty"], "-m", "manifest")
    assert result.reported() == {"FY-MAN-001"}
    (finding,) = result.findings("FY-MAN-001")
    assert "manifest.json not found, nor manifest.base.json" in finding["message"]


def test_a_base_that_is_not_json_is_named(tmp_path: Path, run_kit) -> None:
    plugin = code_first(tmp_path / "demo")
    (plugin / "manifest.base.json").write_text("{", encoding="utf-8")
    result = run_kit([plugin], "-m", "manifest")
    assert result.reported() == {"FY-MAN-001"}
    (finding,) = result.findings("FY-MAN-001")
    assert finding["file"] == "manifest.base.json"
    assert "manifest.base.json is not valid JSON" in finding["message"]


def test_an_unbuilt_folder_fails_strict_saying_how_many_checks_could_not_run(
    tmp_path: Path, run_kit
) -> None:
    """FengYu's react-* templates passed with most of the catalog skipped until the build;
    strict mode vouches for the whole catalog, so it fails them, naming the count and the fix."""
    plugin = code_first(tmp_path / "demo")
    lenient = run_kit([plugin], "-m", "manifest")
    strict = run_kit([plugin], "-m", "manifest", "--conformance-strict")

    assert lenient.result.ret == 0
    assert strict.result.ret == 1
    assert strict.reported() == set()  # no item failed: the run did
    unbuilt = [
        r
        for r in strict.report["results"]
        if r["status"] == "not-applicable" and "fengyu build" in r["reason"]
    ]
    text = strict.result.stdout.str()
    assert "checks that could not run" in text
    assert f"{len(unbuilt)} conformance items could not run" in text
    assert "exit status 1" in text and "run the kit on the built package" in text
    assert "--conformance-strict would fail the run" in lenient.result.stdout.str()
