"""The Excel Splitter sample plugin: its manifest against the kit, its real worker end to end."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sample_plugins.excel_client import (
    EXAMPLE,
    MANIFEST,
    METHODS,
    PLUGIN,
    REPO,
    SCRIPT,
    WorkerProcess,
    make_workbook,
    sheet_names,
    sheet_rows,
)

BASELINE = REPO / "sample_plugins" / "conformance-baseline.json"
EXAMPLES = REPO / "sample_plugins" / "conformance-examples.json"
OFFICIAL = REPO / "tests/data/fengyu_realworld/OfficialPlugins/plugin-excel/manifest.json"
TOOLS = [
    "excel_analyze",
    "excel_configure",
    "excel_complex_config",
    "excel_execute",
    "excel_execute_start",
    "excel_execute_status",
    "excel_query",
    "excel_cancel",
]
UNRESOLVED_REF = {"id": "ref_123", "name": "x.xlsx", "kind": "file", "access": "read", "size": 1}


@pytest.fixture(scope="module")
def shared_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    process = WorkerProcess(tmp_path_factory.mktemp("excel-worker") / "worker.stderr")
    yield process
    assert process.close() == 0, process.stderr()


@pytest.fixture
def worker(shared_worker: WorkerProcess) -> WorkerProcess:
    """One worker process for the module (as a host keeps it), its session reset per test."""
    assert shared_worker.call("excel_cancel")["success"]
    return shared_worker


@pytest.fixture
def out(tmp_path: Path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def analyzed(worker: WorkerProcess, path: Path = EXAMPLE) -> dict[str, Any]:
    result = worker.call("excel_analyze", {"filePath": str(path)})
    assert result["success"], result
    return result


def configured_then_deleted(worker: WorkerProcess, tmp_path: Path) -> None:
    """Analyze a one-sheet workbook and configure a split by sheet, then delete the workbook."""
    source = make_workbook(tmp_path / "gone.xlsx", {"Data": [("A",), (1,)]})
    analyzed(worker, source)
    worker.call("excel_configure", {"mode": "BY_SHEET"})
    source.unlink()


def executed(worker: WorkerProcess, out: Path, prefix: str | None = None) -> list[str]:
    params = {"outputDir": str(out)} | ({"filePrefix": prefix} if prefix is not None else {})
    result = worker.call("excel_execute", params)
    assert result["success"], result
    names = result["files"]["names"]
    assert result["files"]["count"] == len(names)
    assert sorted(p.name for p in out.iterdir()) == sorted(names)
    return names


def failure(worker: WorkerProcess, method: str, params: dict[str, Any], reason: str) -> str:
    result = worker.call(method, params)
    assert result["success"] is False, result
    assert reason.lower() in result["summary"].lower(), result["summary"]
    return result["summary"]


# The manifest ------------------------------------------------------------------------------


@pytest.mark.long
def test_manifest_passes_the_kit_but_for_its_legacy_launch(
    run_kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample keeps the legacy launch (no backend.runtime, an executable backend/worker):
    FY-WRK-012 says FengYu would look for backend/worker.jar, the samples' baseline expects
    exactly that, and everything else passes. Strict, the tools that work on an analyzed
    workbook are exercised only with the samples' examples file (its setup analyzes one), and
    excel_execute_status, whose job ids come from the session, not at all: the baseline
    accepts that."""
    # backend/worker starts with `#!/usr/bin/env python3`: the interpreter with openpyxl
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    kit = run_kit([PLUGIN])
    assert kit.reported() == {"FY-WRK-012"}, kit.result.stdout.str()
    baselined = run_kit(
        [PLUGIN],
        *("--conformance-baseline", str(BASELINE), "--conformance-strict"),
        *("--examples-file", str(EXAMPLES)),
    )
    assert baselined.statuses()["FY-WRK-012"] == "expected-failure"
    assert baselined.result.ret == 0, baselined.result.stdout.str()
    assert "7 of 8 tools exercised with a successful call" in baselined.result.stdout.str()


def test_tools_carry_over_the_official_plugin() -> None:
    official = json.loads(OFFICIAL.read_text(encoding="utf-8"))
    ours = {tool["name"]: tool for tool in MANIFEST["aiTools"]}
    assert list(ours) == TOOLS == [tool["name"] for tool in official["aiTools"]]
    for tool in official["aiTools"]:
        mine = ours[tool["name"]]
        assert (mine["method"], mine["effect"], mine["timeoutSeconds"]) == (
            tool["method"],
            tool["effect"],
            tool["timeoutSeconds"],
        )
        method = METHODS[mine["method"]]
        assert method["timeoutSeconds"] == tool["timeoutSeconds"]
        for key in ("inputSchema", "outputSchema"):
            theirs = json.loads(tool[key])
            assert set(theirs["properties"]) <= set(method[key]["properties"]), key
            assert theirs.get("required", []) == method[key].get("required", [])
        assert {"success", "summary"} <= set(method["outputSchema"]["required"])


def test_manifest_has_no_default_or_format() -> None:
    def keys(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            for key, value in node.items():
                yield key
                yield from keys(value)
        elif isinstance(node, list):
            for value in node:
                yield from keys(value)

    assert not {"default", "format"} & set(keys(MANIFEST["rpc"]))


def test_worker_is_an_executable_python_script() -> None:
    assert os.access(SCRIPT, os.X_OK)
    assert SCRIPT.read_text(encoding="utf-8").startswith("#!/usr/bin/env python3\n")
    assert EXAMPLE.stat().st_size < 16 * 1024


# Analyze -----------------------------------------------------------------------------------


def test_analyze_lists_sheets_and_headers(worker: WorkerProcess) -> None:
    result = analyzed(worker)
    assert result["sheets"] == ["Sales", "Products", "Targets"]
    details = {d["name"]: d for d in result["sheetDetails"]}
    assert details["Sales"] == {
        "name": "Sales",
        "rows": 13,
        "columns": 5,
        "headers": ["Date", "Region", "Product", "Units", "Revenue"],
    }
    assert details["Targets"]["headers"] == ["FY2026 regional targets"]
    state = worker.call("excel_query")["state"]
    assert state["filePath"] == str(EXAMPLE)
    assert state["sheets"] == result["sheets"]
    assert "mode" not in state


def test_analyze_resets_the_previous_settings(worker: WorkerProcess) -> None:
    analyzed(worker)
    worker.call("excel_configure", {"mode": "BY_SHEET"})
    worker.call(
        "excel_complex_config",
        {"action": "add", "sheetName": "Sales", "headerIndex": 1, "columnIndex": 2},
    )
    analyzed(worker)
    state = worker.call("excel_query")["state"]
    assert "mode" not in state
    assert state["rules"] == []


# The three modes ---------------------------------------------------------------------------


def test_by_sheet_writes_one_workbook_per_sheet(worker: WorkerProcess, out: Path) -> None:
    analyzed(worker)
    assert worker.call("excel_configure", {"mode": "BY_SHEET"})["mode"] == "BY_SHEET"
    names = executed(worker, out)
    assert names == ["Sales.xlsx", "Products.xlsx", "Targets.xlsx"]
    for name in names:
        sheet = name.removesuffix(".xlsx")
        assert sheet_names(out / name) == [sheet]
        assert sheet_rows(out / name) == sheet_rows(EXAMPLE, sheet)


def test_by_sheet_subset_with_prefix(worker: WorkerProcess, out: Path) -> None:
    analyzed(worker)
    result = worker.call("excel_configure", {"mode": "BY_SHEET", "sheets": ["Targets", "Sales"]})
    assert result["success"], result
    assert worker.call("excel_query")["state"]["selectedSheets"] == ["Targets", "Sales"]
    assert executed(worker, out, "q1_") == ["q1_Targets.xlsx", "q1_Sales.xlsx"]


def test_by_column_splits_rows_by_region(worker: WorkerProcess, out: Path) -> None:
    analyzed(worker)
    result = worker.call(
        "excel_configure", {"mode": "BY_COLUMN", "splitSheet": "Sales", "splitColumn": "Region"}
    )
    assert result["success"], result
    names = executed(worker, out)
    assert names == ["North.xlsx", "South.xlsx", "East.xlsx", "West.xlsx"]
    header, *rows = sheet_rows(EXAMPLE, "Sales")
    for name in names:
        region = name.removesuffix(".xlsx")
        assert sheet_names(out / name) == ["Sales"]
        assert sheet_rows(out / name) == [header, *(r for r in rows if r[1] == region)]
    assert sum(len(sheet_rows(out / n)) - 1 for n in names) == len(rows) == 12
    assert len(sheet_rows(out / "North.xlsx")) == 1 + 4


def test_by_column_matches_headers_loosely(worker: WorkerProcess, out: Path) -> None:
    analyzed(worker)
    result = worker.call(
        "excel_configure",
        {"mode": "BY_COLUMN", "splitSheet": "Products", "splitColumn": " category"},
    )
    assert result["success"], result
    assert worker.call("excel_query")["state"]["splitColumn"] == "Category"
    assert executed(worker, out, "cat-") == ["cat-Tools.xlsx", "cat-Electronics.xlsx"]
    assert len(sheet_rows(out / "cat-Electronics.xlsx")) == 3


def test_complex_rules_split_below_their_header_row(worker: WorkerProcess, out: Path) -> None:
    analyzed(worker)
    worker.call("excel_configure", {"mode": "COMPLEX"})
    add = {"action": "add", "sheetName": "Targets", "headerIndex": 2, "columnIndex": 1}
    entries = worker.call("excel_complex_config", add)["entries"]
    assert entries == [
        {"sheetName": "Targets", "headerIndex": 2, "columnIndex": 1, "columnName": "Region"}
    ]
    add = {"action": "add", "sheetName": "Sales", "headerIndex": 1, "columnIndex": 3}
    assert len(worker.call("excel_complex_config", add)["entries"]) == 2
    again = worker.call("excel_complex_config", add)
    assert again["success"] and "already" in again["summary"]
    assert len(worker.call("excel_complex_config", {"action": "list"})["entries"]) == 2
    names = executed(worker, out)
    assert names == [
        "Targets_Region_North.xlsx",
        "Targets_Region_South.xlsx",
        "Targets_Region_East.xlsx",
        "Targets_Region_West.xlsx",
        "Sales_Product_Widget.xlsx",
        "Sales_Product_Gadget.xlsx",
        "Sales_Product_Gizmo.xlsx",
    ]
    title, header, *_ = sheet_rows(EXAMPLE, "Targets")
    north = sheet_rows(out / "Targets_Region_North.xlsx", "Targets")
    assert north == [title, header, ("North", "Q1", 1000), ("North", "Q2", 1200)]
    assert len(sheet_rows(out / "Sales_Product_Widget.xlsx")) == 1 + 5


def test_complex_clear(worker: WorkerProcess, out: Path) -> None:
    analyzed(worker)
    worker.call(
        "excel_complex_config",
        {"action": "add", "sheetName": "Sales", "headerIndex": 1, "columnIndex": 2},
    )
    assert worker.call("excel_complex_config", {"action": "clear"})["entries"] == []
    worker.call("excel_configure", {"mode": "COMPLEX"})
    failure(worker, "excel_execute", {"outputDir": str(out)}, "no rules")


# Jobs --------------------------------------------------------------------------------------


def test_job_runs_to_completion(worker: WorkerProcess, out: Path) -> None:
    analyzed(worker)
    worker.call(
        "excel_configure", {"mode": "BY_COLUMN", "splitSheet": "Sales", "splitColumn": "Region"}
    )
    started = worker.call("excel_execute_start", {"outputDir": str(out), "filePrefix": "job_"})
    assert started["success"], started
    status, lines = worker.wait_job(started["jobId"])
    assert status["status"] == "succeeded"
    assert status["result"]["files"] == {
        "count": 4,
        "names": ["job_North.xlsx", "job_South.xlsx", "job_East.xlsx", "job_West.xlsx"],
    }
    assert lines[0].startswith("splitting sales.xlsx")
    assert lines[-1] == "done: 4 file(s)"
    assert sorted(p.name for p in out.iterdir()) == sorted(status["result"]["files"]["names"])
    again = worker.call("excel_execute_status", {"jobId": started["jobId"], "cursor": 10**30})
    assert again["logs"] == [] and again["cursor"] == len(lines) and again["done"]
    state = worker.call("excel_query")["state"]
    assert (state["jobId"], state["jobStatus"]) == (started["jobId"], "succeeded")


@pytest.fixture(scope="module")
def big_workbook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workbook whose split writes 400 files: slow enough to cancel midway."""
    rows = [("Id", "Key", "Value"), *((i, f"k{i % 400}", i * 1.5) for i in range(12_000))]
    return make_workbook(tmp_path_factory.mktemp("big") / "big.xlsx", {"Data": rows})


def test_cancel_stops_the_job_and_removes_its_files(
    worker: WorkerProcess, out: Path, big_workbook: Path
) -> None:
    analyzed(worker, big_workbook)
    worker.call("excel_configure", {"mode": "BY_COLUMN", "splitColumn": "Key"})
    job = worker.call("excel_execute_start", {"outputDir": str(out)})["jobId"]
    busy = failure(worker, "excel_execute", {"outputDir": str(out)}, "still running")
    assert job in busy
    failure(worker, "excel_execute_start", {"outputDir": str(out)}, "still running")
    cancelled = worker.call("excel_cancel")
    assert cancelled["cancelled"] is True and cancelled["jobId"] == job
    status, lines = worker.wait_job(job)
    assert status["status"] == "cancelled"
    assert "result" not in status
    assert lines[-1] == "cancelled"
    assert list(out.iterdir()) == []
    assert "filePath" not in worker.call("excel_query")["state"]
    assert worker.call("excel_cancel")["cancelled"] is False


def test_stdin_eof_stops_a_running_job_and_exits(tmp_path: Path, big_workbook: Path) -> None:
    process = WorkerProcess(tmp_path / "worker.stderr")
    out = tmp_path / "out"
    out.mkdir()
    analyzed(process, big_workbook)
    process.call("excel_configure", {"mode": "BY_COLUMN", "splitColumn": "Key"})
    assert process.call("excel_execute_start", {"outputDir": str(out)})["success"]
    # 0, not the kill close() falls back to; no files, so the job stopped and cleaned up
    # instead of writing its 400 files to the end
    assert process.close() == 0, process.stderr()
    assert list(out.iterdir()) == []


def test_failed_job_reports_its_error(worker: WorkerProcess, out: Path, tmp_path: Path) -> None:
    configured_then_deleted(worker, tmp_path)
    job = worker.call("excel_execute_start", {"outputDir": str(out)})["jobId"]
    status, _ = worker.wait_job(job)
    assert status["status"] == "failed"
    assert "could not be read" in status["error"]
    assert "failed" in status["summary"]


def test_unknown_job(worker: WorkerProcess) -> None:
    failure(worker, "excel_execute_status", {"jobId": "job_nope"}, "unknown job")


# Business failures -------------------------------------------------------------------------


def test_nothing_works_before_analyze(worker: WorkerProcess, out: Path) -> None:
    for method, params in [
        ("excel_configure", {"mode": "BY_SHEET"}),
        (
            "excel_complex_config",
            {"action": "add", "sheetName": "S", "headerIndex": 1, "columnIndex": 1},
        ),
        ("excel_execute", {"outputDir": str(out)}),
        ("excel_execute_start", {"outputDir": str(out)}),
    ]:
        failure(worker, method, params, "no workbook analyzed")
    assert list(out.iterdir()) == []


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda tmp: str(tmp / "missing.xlsx"), "not found"),
        (lambda tmp: str(tmp), "is a folder"),
        (lambda tmp: "/", "is a folder"),
        (lambda tmp: "", "empty"),
        (lambda tmp: "relative/sales.xlsx", "absolute"),
        (lambda tmp: str(tmp / "notes.txt"), "not an .xlsx"),
        (lambda tmp: str(tmp / "old.xls"), "save .xls files as .xlsx"),
        (lambda tmp: str(tmp / "fake.xlsx"), "could not be read"),
        (lambda tmp: "/dev/null", "not a regular file"),
        (lambda tmp: "/tmp/\x00.xlsx", "not a valid path"),
    ],
)
def test_analyze_rejects_what_is_no_workbook(
    worker: WorkerProcess, tmp_path: Path, make, reason: str
) -> None:
    for name in ("notes.txt", "old.xls", "fake.xlsx"):
        (tmp_path / name).write_bytes(b"not a zip")
    failure(worker, "excel_analyze", {"filePath": make(tmp_path)}, reason)


def test_failed_analyze_keeps_the_session(worker: WorkerProcess, tmp_path: Path) -> None:
    analyzed(worker)
    summary = failure(worker, "excel_analyze", {"filePath": str(tmp_path / "x.xlsx")}, "not found")
    assert "previous session is kept" in summary
    assert worker.call("excel_query")["state"]["filePath"] == str(EXAMPLE)


def test_configure_failures(worker: WorkerProcess) -> None:
    analyzed(worker)
    failure(worker, "excel_configure", {"mode": "BY_SHEET", "sheets": ["Sales", "Nope"]}, "'Nope'")
    failure(
        worker,
        "excel_configure",
        {"mode": "BY_COLUMN", "splitColumn": "Region"},
        "needs splitSheet",
    )
    by_column = {"mode": "BY_COLUMN", "splitSheet": "Sales"}
    failure(worker, "excel_configure", by_column, "needs splitColumn")
    failure(worker, "excel_configure", by_column | {"splitColumn": "Colour"}, "unknown column")
    failure(worker, "excel_configure", by_column | {"splitSheet": "sales"}, "unknown sheet")
    assert "mode" not in worker.call("excel_query")["state"]


def test_complex_rule_failures(worker: WorkerProcess) -> None:
    analyzed(worker)
    add = {"action": "add", "sheetName": "Targets", "headerIndex": 2, "columnIndex": 1}
    failure(worker, "excel_complex_config", add | {"sheetName": "Nope"}, "unknown sheet")
    failure(worker, "excel_complex_config", add | {"headerIndex": 11}, "outside sheet")
    failure(worker, "excel_complex_config", add | {"columnIndex": 4}, "outside sheet")
    failure(worker, "excel_complex_config", {"action": "add", "sheetName": "Targets"}, "needs")
    assert worker.call("excel_complex_config", {"action": "list"})["entries"] == []


def test_execute_needs_a_mode_and_a_writable_folder(
    worker: WorkerProcess, out: Path, tmp_path: Path
) -> None:
    analyzed(worker)
    failure(worker, "excel_execute", {"outputDir": str(out)}, "no split mode")
    worker.call("excel_configure", {"mode": "BY_SHEET"})
    failure(worker, "excel_execute", {"outputDir": str(tmp_path / "missing")}, "does not exist")
    (tmp_path / "file").write_text("x")
    failure(worker, "excel_execute", {"outputDir": str(tmp_path / "file")}, "not a folder")
    failure(worker, "excel_execute_start", {"outputDir": ""}, "empty")
    failure(worker, "excel_execute", {"outputDir": "out"}, "absolute")
    if os.geteuid() != 0:  # root may write anywhere
        out.chmod(0o500)
        try:
            failure(worker, "excel_execute", {"outputDir": str(out)}, "not writable")
        finally:
            out.chmod(0o700)
    assert list(out.iterdir()) == []


def test_source_deleted_after_analyze(worker: WorkerProcess, out: Path, tmp_path: Path) -> None:
    configured_then_deleted(worker, tmp_path)
    failure(worker, "excel_execute", {"outputDir": str(out)}, "could not be read")


# File names from cell values ---------------------------------------------------------------

NASTY = [
    "../evil",
    "a/b\\c",
    "..",
    " .hidden",
    "CON",
    "x" * 400,
    "日本語の地域" * 20,
    "North",
    "north",
    "tab\there",
    "?*<>|:",
    None,
]


def test_file_names_from_values_are_safe(worker: WorkerProcess, tmp_path: Path) -> None:
    out = tmp_path / "nested" / "out"
    out.mkdir(parents=True)
    (out / "North.xlsx").write_bytes(b"keep me")
    rows = [("Name", "Key"), *((i, value) for i, value in enumerate(NASTY))]
    analyzed(worker, make_workbook(tmp_path / "nasty.xlsx", {"Data": rows}))
    worker.call("excel_configure", {"mode": "BY_COLUMN", "splitColumn": "Key"})
    result = worker.call("excel_execute", {"outputDir": str(out), "filePrefix": "../../up/"})
    assert result["success"], result
    names = result["files"]["names"]
    assert len(names) == len(NASTY) == len({n.casefold() for n in names})
    assert sorted(p.name for p in out.iterdir()) == sorted([*names, "North.xlsx"])
    assert (out / "North.xlsx").read_bytes() == b"keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nasty.xlsx", "nested"]
    assert [p.name for p in (tmp_path / "nested").iterdir()] == ["out"]
    for name in names:
        assert name.endswith(".xlsx") and not name.startswith(".")
        assert "/" not in name and "\\" not in name and ".." not in name
        assert len(name.encode()) <= 255
        assert name.split(".")[0].upper() != "CON"
    total = sum(len(sheet_rows(out / n)) - 1 for n in names)
    assert total == len(NASTY)


# Protocol-level rejections -----------------------------------------------------------------


def test_unresolved_file_ref_is_invalid_params(worker: WorkerProcess) -> None:
    error = worker.error("excel_analyze", {"filePath": UNRESOLVED_REF})
    assert error["code"] == -32602
    assert error["data"][0]["pointer"] == "/filePath"
    error = worker.error("excel_execute", {"outputDir": UNRESOLVED_REF | {"kind": "directory"}})
    assert error["code"] == -32602


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("excel_analyze", {}),
        ("excel_configure", {"mode": "BY_ROW"}),
        ("excel_configure", {"mode": "BY_SHEET", "sheets": "Sales"}),
        ("excel_complex_config", {"action": "add", "headerIndex": 0}),
        ("excel_complex_config", {"action": "add", "columnIndex": -3}),
        ("excel_complex_config", {"action": "add", "columnIndex": 16385}),
        ("excel_complex_config", {"action": "add", "headerIndex": True}),
        ("excel_execute_status", {"jobId": "job_x", "cursor": -1}),
        ("excel_execute_status", {"jobId": 7}),
    ],
)
def test_params_outside_the_schema_are_invalid(
    worker: WorkerProcess, method: str, params: dict[str, Any]
) -> None:
    assert worker.error(method, params)["code"] == -32602
    assert worker.call("excel_query")["success"]


def test_float_integers_and_lone_surrogates_are_handled(worker: WorkerProcess) -> None:
    analyzed(worker)
    add = {"action": "add", "sheetName": "Sales", "headerIndex": 1.0, "columnIndex": 2.0}
    assert worker.call("excel_complex_config", add)["entries"][0]["columnIndex"] == 2
    worker.call("excel_configure", {"mode": "BY_SHEET"})
    for method, key, params in [
        ("excel_configure", "splitColumn", {"mode": "BY_COLUMN", "splitSheet": "Sales"}),
        ("excel_configure", "splitSheet", {"mode": "BY_COLUMN"}),
        ("excel_configure", "sheets", {"mode": "BY_SHEET"}),
        ("excel_analyze", "filePath", {}),
        ("excel_execute_status", "jobId", {}),
        ("excel_execute", "outputDir", {}),
        ("excel_execute_start", "outputDir", {}),
    ]:
        value = ["SURROGATE"] if key == "sheets" else "SURROGATE"
        message = {"jsonrpc": "2.0", "id": key, "method": method, "params": params | {key: value}}
        frame = json.dumps(message).replace("SURROGATE", "/x\\ud800y")
        reply = worker.send_raw(frame.encode(), key)
        assert reply["result"]["success"] is False, reply
    assert worker.call("excel_query")["success"]


def test_unknown_method(worker: WorkerProcess) -> None:
    assert worker.error("excel_split", {})["code"] == -32601
