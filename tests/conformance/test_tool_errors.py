"""FY-TOOL-001 tells an uncaught exception from a business error (spec:
fengyu-worker.md#tool-properties): the fixtures FY-TOOL-001-*internal-error* prove the first
fails; these prove the second still passes, and how each kind of reply is read."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from conformance.checks.fengyu_tools import internal_error
from conformance.fengyu.harness import CallOutcome
from tests.conftest import FIXTURE_PLUGINS, copy_plugin

BUSINESS_ERROR_WORKER = '''#!/usr/bin/env python3
"""An empty name is refused with a business error of the worker's own."""

import sys

sys.dont_write_bytecode = True
from fengyu_worker import RpcError, Worker  # noqa: E402

worker = Worker.from_manifest(__file__)


@worker.method("greet")
def greet(params, ctx):
    if not params["name"]:
        raise RpcError(%s, "say whom to greet")
    return {"success": True, "summary": "greeted", "greeting": f"Hello, {params['name']}!"}


if __name__ == "__main__":
    raise SystemExit(worker.run())
'''


def rpc_error(error: dict[str, Any]) -> CallOutcome:
    return CallOutcome("rpc-error", error, "", "", {})


@pytest.mark.parametrize("code", ['"EMPTY_NAME"', "4001", "-32602"])
def test_a_business_error_on_a_valid_input_passes(run_kit, tmp_path: Path, code: str) -> None:
    """The control of FY-TOOL-001-sdk-raises-on-edge-input: the same refusal of an empty
    name, said as an error of the worker's own (-32000 with data.code EMPTY_NAME, 4001,
    -32602), is an answer."""
    plugin = copy_plugin(FIXTURE_PLUGINS / "FY-TOOL-001-sdk-raises-on-edge-input", tmp_path)
    shutil.copy2(FIXTURE_PLUGINS / "misbehaving_worker.py", tmp_path)
    (plugin / "backend" / "worker.py").write_text(BUSINESS_ERROR_WORKER % code, "utf-8")
    result = run_kit([plugin], "-m", "tools", "-k", "FY-TOOL-001")
    assert result.statuses()["FY-TOOL-001"] == "passed", result.findings("FY-TOOL-001")


@pytest.mark.parametrize(
    ("error", "said"),
    [
        ({"code": -32603, "message": "handler failed: IndexError"}, "code -32603"),
        (
            {"code": -32000, "message": "handler failed", "data": {"code": "INTERNAL_ERROR"}},
            "code -32000, data.code INTERNAL_ERROR",
        ),
        ({"code": -32000, "message": "no row", "data": {"code": "NOT_FOUND"}}, ""),
        ({"code": -32000, "message": "IndexError: string index out of range"}, ""),
        ({"code": -32602, "message": "invalid params"}, ""),
    ],
)
def test_an_internal_error_is_told_by_its_code_or_data_code(
    error: dict[str, Any], said: str
) -> None:
    assert internal_error(rpc_error(error)) == said


def test_a_result_is_never_an_internal_error() -> None:
    outcome = CallOutcome("result", {"code": -32603}, "", "", {})
    assert internal_error(outcome) == ""
