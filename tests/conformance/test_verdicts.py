"""Verdicts you can trust (issue 11): a pass means checked and fine, one cause gives one
failure, and the printed rerun line reruns the item and fails it the same way."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume
from hypothesis import strategies as st

from conformance.catalog import Level, load_catalog, requirement
from conformance.checks.fengyu import FengYuContext
from conformance.checks.fengyu_worker import (
    no_reply_to_cancel,
    no_reply_to_other_notifications,
    stdout_discipline,
)
from conformance.fengyu.probe import Exchange, Line, Transcript
from conformance.findings import NotApplicable
from conformance.kit import KitRun
from conformance.options import KitOptions
from conformance.properties import find_counterexample
from conformance.rerun import rerun_command
from conformance.search_settings import PropertySettings
from tests.conformance.test_requirement_fixtures import served_backend, silent_url
from tests.conftest import FIXTURE_PLUGINS, REPO, KitResult, failures

SAMPLE = REPO / "sample_plugins" / "fan.summer.markdown"
PER_TOOL_DYN = ("ERP-DYN-001", "ERP-DYN-002", "ERP-DYN-003", "ERP-DYN-005")


def records(result: KitResult, rid: str) -> list[dict[str, Any]]:
    return [r for r in result.report["results"] if r["requirement"] == rid]


def sample_copy(tmp_path: Path, edit: Any = None) -> Path:
    plugin = tmp_path / "plugin"
    shutil.copytree(SAMPLE, plugin)
    if edit is not None:
        path = plugin / "manifest.json"
        manifest = json.loads(path.read_text("utf-8"))
        edit(manifest)
        path.write_text(json.dumps(manifest, indent=2), "utf-8")
    return plugin


def test_no_server_at_the_base_url_is_one_failure(run_kit) -> None:
    url = silent_url()
    result = run_kit([FIXTURE_PLUGINS / "ERP-DYN-004-nothing-listens"], "--plugin-base-url", url)

    (backend,) = records(result, "ERP-DYN-004")
    assert backend["status"] == "failed"
    assert backend["findings"][0]["message"].startswith(f"no server answered at {url}")
    for rid in PER_TOOL_DYN:
        (item,) = records(result, rid)
        assert item["status"] == "skipped", item
        assert item["blocked_by"] == ["ERP-DYN-004"]
        assert f"no server answered at {url}" in item["reason"]
    assert [r["requirement"] for r in result.report["results"] if r["status"] == "failed"] == [
        "ERP-DYN-004"
    ]


def test_endpoint_items_without_base_url_are_not_applicable(run_kit) -> None:
    result = run_kit([FIXTURE_PLUGINS / "ERP-DYN-004-nothing-listens"], "-m", "endpoints")
    items = result.report["results"]
    assert {r["requirement"] for r in items} == {"ERP-DYN-004", *PER_TOOL_DYN}
    assert {(r["status"], tuple(r["blocked_by"])) for r in items} == {("not-applicable", ())}
    assert result.result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.result.stdout.fnmatch_lines(["*nothing checked*", "*no requirement was checked*"])


def test_collect_only_is_not_a_run_that_checked_nothing(pytester: pytest.Pytester) -> None:
    plugin = FIXTURE_PLUGINS / "ERP-DYN-004-nothing-listens"
    result = pytester.runpytest("--plugin-dir", str(plugin), "-m", "endpoints", "--collect-only")
    assert result.ret == pytest.ExitCode.OK


def test_host_check_of_a_plugin_without_tools_is_not_applicable(run_kit, tmp_path: Path) -> None:
    def no_tools(manifest: dict[str, Any]) -> None:
        manifest["aiTools"] = []
        del manifest["i18n"]["zh"]["aiTools"]  # its key would name a tool no longer there

    result = run_kit([sample_copy(tmp_path, no_tools)], "-m", "manifest or host")
    (host,) = records(result, "FY-HOST-001")
    assert host["status"] == "not-applicable", host
    assert "declares no tools" in host["reason"]


def test_missing_description_fails_only_its_requirement(run_kit, tmp_path: Path) -> None:
    def undescribed(manifest: dict[str, Any]) -> None:
        del manifest["aiTools"][0]["description"]

    result = run_kit([sample_copy(tmp_path, undescribed)], "-m", "manifest or host")
    assert result.reported() == {"FY-MAN-009"}
    for rid in ("FY-HOST-001", "FY-HOST-002"):
        (host,) = records(result, rid)
        assert host["status"] == "skipped"
        assert host["reason"] == "because the manifest fails FY-MAN-009"
        assert host["blocked_by"] == ["FY-MAN-009"]


def test_host_check_starts_the_worker_cmd(run_kit, tmp_path: Path) -> None:
    plugin = sample_copy(tmp_path)
    (plugin / "backend" / "worker.py").rename(plugin / "backend" / "serve.py")
    command = f"--worker-cmd={sys.executable} backend/serve.py"

    result = run_kit([plugin], "-m", "host", command)

    assert result.statuses()["FY-HOST-001"] == "passed", result.result.stdout.str()[-3000:]


def test_host_check_reads_the_worker_cmd_ini_key(run_kit, pytester: pytest.Pytester) -> None:
    plugin = sample_copy(pytester.path)  # under the ini file's folder, so pytest reads it
    (plugin / "backend" / "worker.py").rename(plugin / "backend" / "serve.py")
    pytester.makeini(f"[pytest]\nconformance_worker_cmd = {sys.executable} backend/serve.py\n")

    result = run_kit([plugin], "-m", "host")

    assert result.statuses()["FY-HOST-001"] == "passed", result.result.stdout.str()[-3000:]


def test_search_with_every_input_filtered_out_is_not_applicable() -> None:
    def attempt(data: st.DataObject) -> None:
        assume(data.draw(st.integers()) == 123456789)

    with pytest.raises(NotApplicable):
        find_counterexample(attempt, PropertySettings(examples=5))


def test_tool_property_without_mutations_is_not_applicable(run_kit, tmp_path: Path) -> None:
    def open_inputs(manifest: dict[str, Any]) -> None:
        manifest["rpc"]["methods"]["render"]["inputSchema"] = {"type": "object"}

    plugin = sample_copy(tmp_path, open_inputs)
    result = run_kit([plugin], "-m", "tools", "-k", "FY-TOOL-002", "--conformance-examples", "3")

    statuses = {(r["tool"], r["status"]) for r in records(result, "FY-TOOL-002")}
    assert ("markdown_render", "not-applicable") in statuses, result.report["results"]


RERUN = re.compile(r"^\s*rerun: (pytest .*)$", re.MULTILINE)


def rerun_of(result: pytest.RunResult, rid: str) -> list[str]:
    """The argv of the rerun line printed for rid's failure (without `pytest`)."""
    lines = [line for line in RERUN.findall(failures(result)) if f":{rid}:" in line]
    assert len(lines) == 1, result.stdout.str()[-3000:]
    argv = shlex.split(lines[0])
    assert argv[0] == "pytest"
    return argv[1:]


def finding_lines(result: pytest.RunResult, marker: str) -> list[str]:
    lines = failures(result).splitlines()
    return [line.strip() for line in lines if line.strip().startswith(marker)]


def test_rerun_line_of_a_tool_property_reruns_and_fails_the_same_way(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A random search (CI unset: with CI set the kit derandomizes) prints the seed it chose."""
    monkeypatch.delenv("CI", raising=False)
    plugin = FIXTURE_PLUGINS / "FY-TOOL-001-crashes-on-edge-input"
    first = pytester.runpytest("--plugin-dir", str(plugin), "-m", "tools")
    argv = rerun_of(first, "FY-TOOL-001")
    assert "--conformance-seed" in argv and "--conformance-examples" in argv

    again = pytester.runpytest(*argv)

    again.assert_outcomes(failed=1)
    assert "deselected" in again.stdout.str()
    assert finding_lines(again, "request") == finding_lines(first, "request")
    assert rerun_of(again, "FY-TOOL-001") == argv


def test_rerun_line_of_an_erp_endpoint_reruns_and_fails_the_same_way(
    pytester: pytest.Pytester,
) -> None:
    plugin = FIXTURE_PLUGINS / "ERP-DYN-001-server-error-on-empty-name"
    with served_backend(plugin) as url:
        assert url is not None
        first = pytester.runpytest(
            "--plugin-dir", str(plugin), "--plugin-base-url", url, "--erp-tenant", "t 1"
        )
        argv = rerun_of(first, "ERP-DYN-001")
        assert argv[argv.index("--plugin-base-url") + 1] == url
        assert argv[argv.index("--erp-tenant") + 1] == "t 1"

        again = pytester.runpytest(*argv)

    again.assert_outcomes(failed=1)
    assert finding_lines(again, "answer:") == finding_lines(first, "answer:")


def test_rerun_line_carries_the_options_of_the_items_suite(tmp_path: Path) -> None:
    erp = FIXTURE_PLUGINS / "ERP-DYN-004-nothing-listens"
    options = KitOptions(
        plugin_dirs=(str(SAMPLE), str(erp)),
        strict=True,
        worker_cmd="python3 backend/serve.py",
        examples=7,
        base_url="http://127.0.0.1:9",
        tenant="acme",
        actor="bob",
        previous="previous/manifest.json",
        worker_env=("PYTHONPATH", "LANG*"),
    )
    kit = KitRun.load(options, base=REPO)
    sample, backend = kit.plugins
    dirs = ["--plugin-dir", str(SAMPLE), "--plugin-dir", str(erp)]
    render = next(t for t in kit.targets(sample) if t.requirement.id == "FY-TOOL-001")
    assert shlex.split(rerun_command(kit, render, tmp_path, 42)) == [
        "pytest",
        *dirs,
        "--conformance-strict",
        "--worker-cmd=python3 backend/serve.py",
        *("--worker-env", "PYTHONPATH", "--worker-env", "LANG*"),
        *("--conformance-examples", "7", "--conformance-seed", "42"),
        *("-k", f":fan.summer.markdown:FY-TOOL-001:{render.tool_name}:"),
    ]
    dyn = next(t for t in kit.targets(backend) if t.requirement.id == "ERP-DYN-001")
    assert shlex.split(rerun_command(kit, dyn, tmp_path, None))[len(dirs) + 1 :] == [
        "--conformance-strict",
        *("--conformance-examples", "7"),
        *("--plugin-base-url", "http://127.0.0.1:9"),
        *("--erp-tenant", "acme", "--erp-actor", "bob"),
        *("-k", ":fixture-app:ERP-DYN-001:fixture-app.item.search:"),
    ]
    upgrade = next(t for t in kit.targets(sample) if t.requirement.id == "FY-UPG-001")
    assert shlex.split(rerun_command(kit, upgrade, tmp_path, None))[len(dirs) + 1 :] == [
        "--conformance-strict",
        *("--previous-manifest", str(tmp_path / "previous" / "manifest.json")),
        *("-k", ":fan.summer.markdown:FY-UPG-001::"),
    ]


class _Workers:
    """Just enough of WorkerServices for the transcript-reading worker checks."""

    declared = True
    launch_error = None
    command = "backend/worker"
    display = "backend/worker"

    def __init__(self, transcript: Transcript) -> None:
        self._transcript = transcript

    def transcript(self) -> Transcript:
        return self._transcript

    def stray_stdout(self) -> list[Any]:
        return []


def test_replies_to_notifications_are_not_also_stdout_noise() -> None:
    transcript = Transcript("backend/worker")
    transcript.exchanges["start"] = Exchange("start", [], answered=True)
    reply = Line.parse(b'{"jsonrpc": "2.0", "result": null}\n')
    log = Line.parse(b"worker: got a notification\n")
    for name in ("notifications", "set-level", "cancel"):
        transcript.exchanges[name] = Exchange(name, [], [reply, log], answered=True)
    ctx = FengYuContext(SAMPLE, requirement("FY-WRK-007"), workers=_Workers(transcript))

    problems = [f.message.splitlines()[0] for f in stdout_discipline(ctx)]

    assert len(problems) == 3
    assert all("not a JSON object" in p for p in problems)
    cancelled = FengYuContext(SAMPLE, requirement("FY-WRK-005"), workers=_Workers(transcript))
    assert len(list(no_reply_to_cancel(cancelled))) == 1
    notified = FengYuContext(SAMPLE, requirement("FY-WRK-024"), workers=_Workers(transcript))
    assert len(list(no_reply_to_other_notifications(notified))) == 1


def test_nothing_checked_under_xdist_exits_5_once(pytester: pytest.Pytester) -> None:
    plugin = FIXTURE_PLUGINS / "ERP-DYN-004-nothing-listens"
    result = pytester.runpytest("--plugin-dir", str(plugin), "-m", "endpoints", "-n", "2")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert result.stdout.str().count("no requirement was checked") == 1


def test_named_providers_make_their_requirements_must_and_the_rerun_names_them(
    tmp_path: Path,
) -> None:
    """--conformance-provider promotes only the named providers' requirements, leaves the
    host suite unblocked by them, and the rerun line carries the option."""
    kit = KitRun.load(KitOptions(plugin_dirs=(str(SAMPLE),), providers=frozenset({"gemini"})), REPO)
    (sample,) = kit.plugins
    levels = {r.id: r.level for r in kit.requirements_for(sample) if r.provider}
    assert levels["FY-PROV-003"] is Level.MUST
    assert {levels[rid] for rid in ("FY-PROV-001", "FY-PROV-002", "FY-PROV-004")} == {Level.SHOULD}
    gemini = next(t for t in kit.targets(sample) if t.requirement.id == "FY-PROV-003")
    argv = shlex.split(rerun_command(kit, gemini, tmp_path, None))
    assert argv[argv.index("--conformance-provider") + 1] == "gemini"
    assert load_catalog()["FY-PROV-003"].level is Level.SHOULD  # the catalog is unchanged
