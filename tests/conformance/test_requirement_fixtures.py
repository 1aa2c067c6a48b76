"""Every catalog requirement has fixture plugins that break it, and only it.

Each folder in tests/fixtures/plugins is named `<REQUIREMENT-ID>-<what>` and is a minimal
change from a valid manifest. The kit must report exactly that requirement on it (plus the
FY-LEG-001 warning every v1 manifest gets), with the right status and a located finding.

Each folder also holds an expect.toml: `value`, text the finding's message must quote (what
was found), and `keyword`, text its fix must name (what to change), so that a message which
hides the offending value or a fix meant for another kind of problem fails here. An optional
`needs = ["strace"]` marks a defect only a tool of the machine can see; without it, the
fixture is skipped with that reason. An optional `also` lists SHOULD warnings the defect
cannot help raising beside its own requirement. A value that quotes one of the kit's
deadlines names it, `{deadlines.eof}`: the tests run the kit with scaled deadlines.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import pwd
import re
import shutil
import socket
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.catalog import Level, load_catalog
from conformance.fengyu.syscall_trace import effects_unseen
from conformance.kit import KitRun, Status
from conformance.options import KitOptions
from conformance.rerun import failure_text
from sample_plugins.erp_backends import serve_backends
from tests.conftest import (
    DEADLINES,
    FIXTURE_PLUGINS,
    REPO,
    KitResult,
    copy_plugin,
    plugin_with_manifest,
)

ID_PREFIX = re.compile(r"^((?:FY|ERP)-[A-Z]+-\d{3})")
LEGACY_WARNING = "FY-LEG-001"
SAMPLE_PLUGIN = REPO / "sample_plugins" / "fan.summer.markdown"
FIXTURES = sorted(p for p in FIXTURE_PLUGINS.iterdir() if p.is_dir() and p.name[0] not in "_.")
EXPECT = "expect.toml"
DEADLINE = re.compile(r"\{deadlines\.(\w+)\}")


def requirement_of(folder: Path) -> str:
    match = ID_PREFIX.match(folder.name)
    assert match, f"fixture folder {folder.name} does not start with a requirement id"
    return match.group(1)


def is_v1(folder: Path) -> bool:
    """Whether the folder's manifest loads as a schemaVersion 1 object."""
    try:
        data = json.loads((folder / "manifest.json").read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("schemaVersion") == 1


@contextlib.contextmanager
def served_backend(folder: Path) -> Iterator[str | None]:
    """An ERP fixture's backend/app.py served on 127.0.0.1 (its base URL), else None."""
    app_file = folder / "backend" / "app.py"
    if not (folder / "metadata").is_dir() or not app_file.is_file():
        yield None
        return
    sys.path.insert(0, str(FIXTURE_PLUGINS))
    try:
        spec = importlib.util.spec_from_file_location(f"backend_{folder.name}", app_file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(FIXTURE_PLUGINS))
    with serve_backends(module.app) as url:
        yield url


def silent_url() -> str:
    """A URL on 127.0.0.1 where nothing listens: a port the system just handed out, closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


STATIC_SUITES = {"manifest": {"manifest"}, "upgrade": {"manifest", "upgrade"}}


def kit_arguments(folder: Path, suite: str, base_url: str | None) -> list[str]:
    """The live fixtures run every suite, to prove their one defect shows up under exactly
    one requirement. An endpoints fixture without a backend is checked against a URL nobody
    answers."""
    if suite == "endpoints" and base_url is None:
        return ["--plugin-base-url", silent_url()]
    return ["--plugin-base-url", base_url] if base_url else []


def outcomes(result: KitResult) -> set[tuple[str, str, str]]:
    """Each record's requirement, status and findings (as JSON), whoever judged them."""
    return {
        (r["requirement"], r["status"], json.dumps(r["findings"], sort_keys=True))
        for r in result.report["results"]
    }


@dataclass
class Judged:
    """What the kit reported on a fixture: its JSON report's records and what it printed."""

    kit: KitResult
    printed: str


def judged_by_pytest(run_kit, folder: Path, suite: str, base_url: str | None) -> Judged:
    result = run_kit([folder], *kit_arguments(folder, suite, base_url))
    return Judged(result, result.result.stdout.str())


def judged_in_process(folder: Path, suite: str) -> Judged:
    """A static (or upgrade) fixture holds no worker: its items are judged by the run itself,
    as `-m manifest` (`-m "manifest or upgrade" --previous-manifest previous`) selects them,
    without a pytest session around them. Its records are the JSON report's, and its printed
    text is each failing or warning item's failure text, as pytest shows it."""
    previous = str(folder / "previous") if suite == "upgrade" else None
    options = KitOptions(plugin_dirs=(str(folder),), previous=previous)
    kit = KitRun.load(options, folder.parent)
    records, texts = [], []
    try:
        (plugin,) = kit.plugins
        for target in kit.targets(plugin):
            r = target.requirement
            if not STATIC_SUITES[suite] & {r.suite, *r.also_in}:
                continue
            verdict = kit.judge(target)
            records.append(
                {
                    "plugin": kit.label(plugin),
                    "requirement": r.id,
                    "status": verdict.status.value,
                    "findings": verdict.finding_records(r),
                }
            )
            if verdict.status in (Status.FAILED, Status.WARNED):
                texts.append(failure_text(kit, target, verdict.findings, folder, verdict.seed))
    finally:
        kit.close()
    return Judged(KitResult(None, {"results": records}), "\n".join(texts))


def expectation(folder: Path) -> dict[str, Any]:
    """The fixture's expect.toml: the value its finding quotes (with the deadlines it names
    as this run's kit quotes them), the keyword its fix names."""
    expect = tomllib.loads((folder / EXPECT).read_text("utf-8"))
    if isinstance(expect.get("value"), str):
        expect["value"] = DEADLINE.sub(lambda m: f"{getattr(DEADLINES, m[1]):g}", expect["value"])
    return expect


def expected_reports(folder: Path) -> set[str]:
    """Its own requirement, the legacy warning of a v1 manifest, and the SHOULDs listed
    under `also`: warnings that the fixture's defect cannot help raising (a tool that writes
    through a plain path parameter has a path-like parameter that is not file-class)."""
    expected = {requirement_of(folder), *expectation(folder).get("also", [])}
    if is_v1(folder):
        expected.add(LEGACY_WARNING)
    return expected


@pytest.mark.parametrize("folder", FIXTURES, ids=[p.name for p in FIXTURES])
def test_fixture_reports_exactly_its_requirement(
    run_kit, folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each fixture runs from a copy beside the shared runtime, as in the checkout: a defect
    such as FY-EFF-001 writes into its own folder, and FY-HOST-001 reaches its neighbour."""
    plugins = tmp_path / "plugins"
    folder = copy_plugin(folder, plugins)
    shutil.copy2(FIXTURE_PLUGINS / "misbehaving_worker.py", plugins)
    rid = requirement_of(folder)
    requirement = load_catalog()[rid]
    expect = expectation(folder)
    if rid.startswith("FY-EFF") and effects_unseen() and not os.environ.get("REQUIRE_SANDBOX"):
        pytest.skip(effects_unseen())
    if rid.startswith("FY-EFF"):
        # The user's own HOME, not pytester's under /tmp: the sandbox's /tmp is a fresh one
        # of its own (as FengYu's), where a write under pytester's HOME would just succeed.
        monkeypatch.setenv("HOME", pwd.getpwuid(os.getuid()).pw_dir)
    if requirement.suite in STATIC_SUITES:
        judged = judged_in_process(folder, requirement.suite)
    else:
        with served_backend(folder) as base_url:
            judged = judged_by_pytest(run_kit, folder, requirement.suite, base_url)
    result = judged.kit

    assert result.reported() == expected_reports(folder)
    status = "failed" if requirement.level is Level.MUST else "warned"
    assert result.statuses()[rid] == status
    findings = result.findings(rid)
    assert findings, f"{rid} is reported without findings"
    for finding in findings:
        assert finding["pointer"] or finding["file"], finding
    if requirement.level is Level.MUST:
        assert rid in judged.printed
    messages = "\n".join(f["message"] for f in findings)
    assert expect["value"] in messages, f"no finding quotes {expect['value']!r}:\n{messages}"
    fixes = [f["fix"] for f in findings]
    assert any(expect["keyword"] in fix for fix in fixes), f"no fix names {expect['keyword']!r}"
    rendered = [
        line for line in judged.printed.splitlines() if line.lstrip().startswith(f"fix ({rid}):")
    ]
    assert any(expect["keyword"] in line for line in rendered), rendered


def test_static_fixtures_are_judged_in_process_as_pytest_reports_them(run_kit, tmp_path) -> None:
    """The in-process judgement of static fixtures stands for the kit's pytest run: on a
    static and an upgrade fixture both give the same records and the same fix lines."""
    for name in ("FY-MAN-004-dangling-method", "FY-UPG-001-tool-removed-in-minor"):
        folder = copy_plugin(FIXTURE_PLUGINS / name, tmp_path / name)
        suite = load_catalog()[requirement_of(folder)].suite
        args = ["-m", " or ".join(sorted(STATIC_SUITES[suite]))]
        if suite == "upgrade":
            args += ["--previous-manifest", str(folder / "previous")]
        by_pytest = run_kit([folder], *args)
        in_process = judged_in_process(folder, suite)
        assert outcomes(by_pytest) == outcomes(in_process.kit) != set()
        fix_lines = {
            line.strip()
            for line in by_pytest.result.stdout.lines
            if line.lstrip().startswith("fix (")
        }
        assert fix_lines and fix_lines <= {line.strip() for line in in_process.printed.splitlines()}


def test_every_fixture_has_expectations() -> None:
    """A new fixture must say which value its finding quotes and what its fix names."""
    lacking = [f.name for f in FIXTURES if not (f / EXPECT).is_file()]
    assert lacking == [], f"fixture folders without {EXPECT}: {lacking}"
    for folder in FIXTURES:
        expect = expectation(folder)
        assert set(expect) - {"needs", "also"} == {"value", "keyword"}, folder.name
        also = [load_catalog()[rid] for rid in expect.get("also", [])]
        assert all(r.level is Level.SHOULD for r in also), f"{folder.name}: `also` lists a MUST"
        assert all(isinstance(expect[k], str) and expect[k].strip() for k in ("value", "keyword"))
        assert set(expect.get("needs", [])) <= {"strace"}, folder.name


def test_every_requirement_has_a_fixture() -> None:
    """MCP requirements have fixture servers instead (test_mcp_fixtures.py)."""
    covered = {requirement_of(folder) for folder in FIXTURES}
    plugins = {rid for rid, r in load_catalog().items() if not r.applies_to("mcp")}
    assert plugins - covered == set()


def test_fixture_folders_name_known_requirements() -> None:
    assert {requirement_of(folder) for folder in FIXTURES} <= set(load_catalog())


@pytest.mark.parametrize("folder", FIXTURES, ids=[p.name for p in FIXTURES])
def test_fixture_names_its_requirement(folder: Path) -> None:
    """Grepping a requirement id finds its fixtures."""
    texts = [p.read_bytes().decode("utf-8", "replace") for p in folder.iterdir() if p.is_file()]
    assert any(requirement_of(folder) in text for text in texts)


def test_sample_plugin_reports_nothing(run_kit) -> None:
    result = run_kit([SAMPLE_PLUGIN])
    assert result.reported() == set()
    records = result.report["results"]
    unchecked = [r for r in records if r["status"] in ("skipped", "not-applicable")]
    assert {(r["requirement"], r["tool"]) for r in unchecked} == {
        ("FY-TOOL-003", "markdown_render"),  # no file-class parameter
        ("FY-TOOL-004", "markdown_render"),  # no sensitive parameter to send a canary in
        ("FY-TOOL-004", "markdown_outline"),
        ("FY-PROV-004", "markdown_render"),  # no optional parameter to send as null
        ("FY-PROV-005", "markdown_render"),  # Anthropic's rewrite loosens none of its schema
        ("FY-EFF-002", "markdown_render"),  # a read tool: FY-EFF-001 holds it
        ("FY-EFF-002", "markdown_outline"),
        ("FY-UPG-001", None),  # no --previous-manifest
        ("FY-UPG-002", None),
        ("FY-WRK-020", None),  # no backend.resources declared
        ("FY-WRK-016", None),  # the probe's calls made it write no @fengyu-log: line
        ("FY-MAN-017", None),  # manifest-first: no manifest.base.json, no manifest/ sidecars
        ("FY-MAN-018", None),
        ("FY-MAN-019", None),  # no read-write file input
        ("FY-MAN-020", None),  # no default
        ("FY-MAN-022", None),  # no flowNodes
        ("FY-MAN-023", None),
        ("FY-MAN-024", None),
        ("FY-MAN-026", None),  # not official
    }
    # Nothing failed, so nothing is blocked: each of them had nothing to check.
    assert {(r["status"], tuple(r["blocked_by"])) for r in unchecked} == {("not-applicable", ())}
    result.result.assert_outcomes(passed=len(records) - 19, skipped=19)


def test_tool_name_clash_across_plugins(run_kit, tmp_path: Path) -> None:
    manifest = json.loads((SAMPLE_PLUGIN / "manifest.json").read_text("utf-8"))
    first = plugin_with_manifest(tmp_path, manifest, "first")
    manifest["id"] = "fan.summer.markdown-copy"
    del manifest["aiTools"][1]
    second = plugin_with_manifest(tmp_path, manifest, "second")

    result = run_kit([first, second], "-m", "manifest")

    assert result.reported("fan.summer.markdown") == {"FY-MAN-008"}
    assert result.reported("fan.summer.markdown-copy") == {"FY-MAN-008"}
    assert result.statuses("fan.summer.markdown")["FY-MAN-008"] == "failed"
    assert result.statuses("fan.summer.markdown-copy")["FY-MAN-008"] == "failed"
    messages = [f["message"] for f in result.findings("FY-MAN-008")]
    assert len(messages) == 2
    assert all("markdown_render" in m for m in messages)


def test_erp_derived_names_clash_with_builtins_and_other_plugins(run_kit, tmp_path: Path) -> None:
    source = FIXTURE_PLUGINS / "ERP-TOOL-011-high-risk-not-strict" / "metadata" / "tool"
    tool = json.loads((source / "hello.greeting.get.json").read_text("utf-8"))
    tool["riskLevel"] = "LOW"
    for name, code in (
        ("one", "web.fetch"),
        ("two", "hello.greeting.get"),
        ("three", "hello.greeting.get"),
    ):
        folder = tmp_path / name / "metadata" / "tool"
        folder.mkdir(parents=True)
        (folder / "t.json").write_text(
            json.dumps({**tool, "toolCode": code, "applicationCode": f"app-{name}"})
        )
    result = run_kit([tmp_path / "one", tmp_path / "two", tmp_path / "three"])
    messages = [f["message"] for f in result.findings("ERP-TOOL-009")]
    assert any("web_fetch" in m and "built-in" in m for m in messages)
    assert sum("hello_greeting_get" in m and "also offered by plugin" in m for m in messages) == 2
