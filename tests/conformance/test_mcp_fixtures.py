"""Every MCP requirement has a fixture server that breaks it, and only it.

Each folder in tests/fixtures/mcp is named `<REQUIREMENT-ID>-<what>` and holds an mcp.json
that starts the shared fixture server (server.py) with one `--defect`. The kit, run on it with
--mcp-config, must report exactly that requirement (plus the SHOULDs its expect.toml lists
under `also`), with a finding that quotes `value` and a fix that names `keyword`. The
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
from conformance.mcp.services import effects_unseen
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
    result = run_on(pytester, folder / "mcp.json")

    assert result.reported() == {rid, *expect.get("also", [])}
    status = "failed" if requirement.level is Level.MUST else "warned"
    assert result.statuses()[rid] == status
    findings = result.findings(rid)
    assert findings and all(f["file"] for f in findings)
    messages = "\n".join(f["message"] for f in findings)
    assert expect["value"] in messages, f"no finding quotes {expect['value']!r}:\n{messages}"
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
