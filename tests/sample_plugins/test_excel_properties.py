"""Property tests of the Excel Splitter worker: any input its schemas admit, in any order.

One worker process serves every example (as a host would keep it running); each answer must
be a result that validates against the method's outputSchema, and nothing may be written
outside the granted output folder.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from tests.sample_plugins.excel_client import EXAMPLE, METHODS, WorkerProcess

PROPERTY_SETTINGS = settings(
    max_examples=int(os.environ.get("EXCEL_PROPERTY_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SHEETS = ["Sales", "Products", "Targets", ""]
HEADERS = ["Region", "region", "Product", "Date", "FY2026 regional targets", ""]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("excel-properties")
    (root / "out").mkdir()
    (root / "not-a-folder").write_text("x")
    (root / "broken.xlsx").write_bytes(b"PK\x03\x04 broken")
    shutil.copy(EXAMPLE, root / "sales.xlsx")
    return root


@pytest.fixture(scope="module")
def worker(sandbox: Path) -> Iterator[WorkerProcess]:
    process = WorkerProcess(sandbox / "worker.stderr")
    yield process
    assert process.close() == 0, process.stderr()


@pytest.fixture
def fresh(worker: WorkerProcess, sandbox: Path) -> WorkerProcess:
    """The shared worker with an empty session, no running job and an empty output folder."""
    worker.call("excel_cancel")
    clear(sandbox / "out")
    return worker


def clear(folder: Path) -> None:
    for path in folder.iterdir():
        path.unlink()


def check_sandbox(sandbox: Path) -> None:
    """Only the output folder gains files; nothing lands beside it."""
    expected = {"out", "not-a-folder", "broken.xlsx", "sales.xlsx", "worker.stderr"}
    assert {p.name for p in sandbox.iterdir()} == expected
    assert all(p.is_file() and p.suffix == ".xlsx" for p in (sandbox / "out").iterdir())


@pytest.mark.parametrize("method", list(METHODS))
def test_every_admitted_input_gets_a_valid_result(
    fresh: WorkerProcess, sandbox: Path, method: str
) -> None:
    """Straight from the inputSchema: with no workbook analyzed, nothing is ever written."""

    @PROPERTY_SETTINGS
    @given(params=from_schema(METHODS[method]["inputSchema"]))
    def answers(params: dict[str, Any]) -> None:
        fresh.call(method, params)

    answers()
    check_sandbox(sandbox)
    assert list((sandbox / "out").iterdir()) == []


SETUPS: list[list[tuple[str, dict[str, Any]]]] = [
    [],
    [("excel_analyze", {"filePath": "SALES"})],
    [("excel_analyze", {"filePath": "SALES"}), ("excel_configure", {"mode": "BY_SHEET"})],
    [
        ("excel_analyze", {"filePath": "SALES"}),
        ("excel_configure", {"mode": "BY_COLUMN", "splitSheet": "Sales", "splitColumn": "Region"}),
    ],
    [
        ("excel_analyze", {"filePath": "SALES"}),
        (
            "excel_complex_config",
            {"action": "add", "sheetName": "Targets", "headerIndex": 2, "columnIndex": 1},
        ),
        ("excel_configure", {"mode": "COMPLEX"}),
    ],
]


def steps(sandbox: Path) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """A call to any tool: schema-generated params, with file, sheet and column parameters
    often drawn from values that exist, so calls get past validation and really split."""
    files = st.sampled_from(
        [str(sandbox / n) for n in ("sales.xlsx", "broken.xlsx", "missing.xlsx", "out")]
    )
    folders = st.sampled_from([str(sandbox / n) for n in ("out", "missing", "not-a-folder")])
    required = {
        "filePath": st.one_of(files, st.text()),
        "outputDir": folders,
        "jobId": st.sampled_from(["LAST", "LAST", "job_0000000000000000", ""]),
    }
    optional = {
        "sheets": st.lists(st.sampled_from(SHEETS), max_size=4),
        "splitSheet": st.sampled_from(SHEETS),
        "sheetName": st.sampled_from(SHEETS),
        "splitColumn": st.sampled_from(HEADERS),
        "headerIndex": st.integers(1, 12),
        "columnIndex": st.integers(1, 6),
        "cursor": st.integers(0, 40),
    }

    def step(method: str) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
        schema = METHODS[method]["inputSchema"]
        present = schema["properties"]
        return st.tuples(
            st.just(method),
            from_schema(schema),
            st.fixed_dictionaries(
                {k: v for k, v in required.items() if k in present},
                optional={k: v for k, v in optional.items() if k in present},
            ),
        ).map(lambda t: (t[0], {**t[1], **t[2]}))

    return st.sampled_from(list(METHODS)).flatmap(step)


def test_any_sequence_of_calls_gets_valid_results(fresh: WorkerProcess, sandbox: Path) -> None:
    """From an empty, analyzed or configured session, any calls: valid results, files only
    in the output folder (the random text of every other parameter still comes through)."""

    @PROPERTY_SETTINGS
    @given(setup=st.sampled_from(SETUPS), calls=st.lists(steps(sandbox), min_size=1, max_size=8))
    def sequence(
        setup: list[tuple[str, dict[str, Any]]], calls: list[tuple[str, dict[str, Any]]]
    ) -> None:
        last_job = ""
        for method, params in [*setup, *calls]:
            if params.get("filePath") == "SALES":
                params = {**params, "filePath": str(sandbox / "sales.xlsx")}
            if params.get("jobId") == "LAST":
                params = {**params, "jobId": last_job}
            result = fresh.call(method, params)
            last_job = result.get("jobId", last_job)
            check_sandbox(sandbox)
        fresh.call("excel_cancel")
        clear(sandbox / "out")

    sequence()


def test_analyzed_and_configured_sequences_write_only_to_the_output_folder(
    fresh: WorkerProcess, sandbox: Path
) -> None:
    """From a configured session, execute with generated prefixes: safe names, right folder."""
    fresh.call("excel_analyze", {"filePath": str(sandbox / "sales.xlsx")})
    fresh.call(
        "excel_configure", {"mode": "BY_COLUMN", "splitSheet": "Sales", "splitColumn": "Region"}
    )
    out = sandbox / "out"

    @PROPERTY_SETTINGS
    @given(prefix=st.text(max_size=300))
    def execute(prefix: str) -> None:
        result = fresh.call("excel_execute", {"outputDir": str(out), "filePrefix": prefix})
        assert result["success"], result
        names = result["files"]["names"]
        assert sorted(p.name for p in out.iterdir()) == sorted(names)
        assert len(names) == 4
        for name in names:
            assert not name.startswith(".") and len(name.encode()) <= 255
        check_sandbox(sandbox)
        clear(out)

    execute()
