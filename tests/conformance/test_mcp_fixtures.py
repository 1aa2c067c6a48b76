"""Every MCP requirement has a fixture server that breaks it, and only it.

Each folder in tests/fixtures/mcp is named `<REQUIREMENT-ID>-<what>` and holds an mcp.json
that starts the shared fixture server (server.py) with one `--defect`. The kit, run on it with
--mcp-config, must report exactly that requirement (plus the SHOULDs its expect.toml lists
under `also`), with a finding that quotes `value` (and none that says `absent`) and a fix that names
`keyword`. Its `args` are passed to the run (the provider fixtures name their provider,
whose requirement the run then makes MUST). The
conforming server and the sample MCP server report nothing, in strict mode.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

import pytest

from conformance.catalog import Level, load_catalog
from conformance.fengyu.syscall_trace import effects_unseen
from tests.conftest import REPO, KitResult

MCP_FIXTURES = REPO / "tests" / "fixtures" / "mcp"
FOLDERS = sorted(p for p in MCP_FIXTURES.iterdir() if p.is_dir() and p.name.startswith("MCP-"))
ID = re.compile(r"^(MCP-[A-Z]+-\d{3})")
SAMPLE = REPO / "sample_plugins" / "mcp-units" / "mcp.json"


def requirement_of(folder: Path) -> str:
    match = ID.match(folder.name)
    assert match, folder.name
    return match.group(1)


def run_on(pytester: pytest.Pytester, config: Path, *args: str) -> KitResult:
    report_base = pytester.path / "kit-report"
    result = pytester.runpytest(
        "--mcp-config", str(config), "--conformance-report", str(report_base), *args
    )
    report_file = report_base.with_suffix(".json")
    report = json.loads(report_file.read_text()) if report_file.exists() else {}
    return KitResult(result, report)


@pytest.mark.parametrize("folder", FOLDERS, ids=[p.name for p in FOLDERS])
def test_fixture_server_reports_exactly_its_requirement(
    pytester: pytest.Pytester, folder: Path
) -> None:
    rid = requirement_of(folder)
    requirement = load_catalog()[rid]
    expect = tomllib.loads((folder / "expect.toml").read_text("utf-8"))
    if rid == "MCP-ANN-001" and effects_unseen() and not os.environ.get("REQUIRE_SANDBOX"):
        pytest.skip(effects_unseen())
    args = expect.get("args", [])
    result = run_on(pytester, folder / "mcp.json", *args)

    assert result.reported() == {rid, *expect.get("also", [])}
    named = requirement.provider is not None and requirement.provider in args
    status = "failed" if requirement.level is Level.MUST or named else "warned"
    assert result.statuses()[rid] == status
    findings = result.findings(rid)
    assert findings and all(f["file"] for f in findings)
    messages = "\n".join(f["message"] for f in findings)
    assert expect["value"] in messages, f"no finding quotes {expect['value']!r}:\n{messages}"
    assert expect.get("absent", "\0") not in messages, messages
    assert any(expect["keyword"] in f["fix"] for f in findings), [f["fix"] for f in findings]
    assert rid in (folder / "README.md").read_text("utf-8")


def test_every_mcp_requirement_has_a_fixture_server() -> None:
    covered = {requirement_of(folder) for folder in FOLDERS}
    mcp = {rid for rid, r in load_catalog().items() if r.applies_to("mcp")}
    assert mcp - covered == set()
    assert covered <= mcp


@pytest.mark.parametrize("config", [MCP_FIXTURES / "_conforming" / "mcp.json", SAMPLE])
def test_conforming_servers_report_nothing_in_strict_mode(
    pytester: pytest.Pytester, config: Path
) -> None:
    result = run_on(pytester, config, "--conformance-strict")
    assert result.reported() == set()
    assert result.result.ret == 0
    eras = {p["label"]: p.get("era") for p in result.report.get("plugins", [])}
    assert set(eras.values()) <= {"2026-07-28"}


def test_a_failing_items_transcript_replays_against_its_server(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """The finding names a JSONL transcript; `mcp-replay` sends its lines to the server
    again, and the banner shows up where it did."""
    from conformance.__main__ import main

    result = run_on(pytester, MCP_FIXTURES / "MCP-STD-001-banner" / "mcp.json", "-m", "lifecycle")
    messages = "\n".join(f["message"] for f in result.findings("MCP-STD-001"))
    match = re.search(r"^transcript: (\S+\.jsonl)$", messages, re.M)
    assert match, messages
    capsys.readouterr()
    assert main(["mcp-replay", match.group(1)]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert "<- units server ready" in shown
    assert shown[0].startswith("started: python ../server.py --defect banner")
    assert shown[-1].startswith("ended: exited")


def test_a_transcript_that_is_not_one_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from conformance.__main__ import main

    bad = tmp_path / "t.jsonl"
    bad.write_text('{"no": "command"}\n', "utf-8")
    assert main(["mcp-replay", str(bad)]) == 2
    assert f"{bad}: line 1 /command" in capsys.readouterr().err
