"""Every way a call can fail inside the Python worker SDK answers -32603 with `data.code`
INTERNAL_ERROR, as FengYu's Python SDK answers an uncaught exception: the kit (FY-TOOL-001)
and hosts tell it from a business error by that, and a failure that escaped the SDK would
leave the call unanswered or kill the worker (spec: fengyu-worker.md#the-python-worker-sdk)."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from fengyu_worker import RpcError, Worker

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def internal(message: str) -> dict[str, Any]:
    return {"code": -32603, "message": message, "data": {"code": "INTERNAL_ERROR"}}


def answer(worker: Worker, method: str, params: Any) -> dict[str, Any]:
    frame = {"jsonrpc": "2.0", "id": "1", "method": method, "params": params}
    reply = worker.handle(json.dumps(frame).encode())
    assert reply is not None
    return reply


def test_a_sync_handler_that_raises_on_valid_input() -> None:
    worker = Worker({"greet": NAME})
    worker.method("greet")(lambda params, ctx: params["name"][0])
    assert answer(worker, "greet", {"name": ""})["error"] == internal("handler failed: IndexError")


def test_an_async_handler_runs_and_its_exception_is_internal() -> None:
    worker = Worker()

    @worker.method("fine")
    async def fine(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return {"success": True, "summary": "ran"}

    @worker.method("broken")
    async def broken(params: dict[str, Any], ctx: Any) -> None:
        raise KeyError("name")

    assert answer(worker, "fine", {})["result"] == {"success": True, "summary": "ran"}
    assert answer(worker, "broken", {})["error"] == internal("handler failed: KeyError")


def test_a_generator_handler_is_refused_when_registered() -> None:
    def stream(params: dict[str, Any], ctx: Any) -> Any:
        yield {"progress": 1}

    with pytest.raises(TypeError, match="'stream' is a generator"):
        Worker().method("stream")(stream)


def test_a_generator_returned_at_call_time_is_internal() -> None:
    def stream() -> Any:
        yield {"progress": 1}

    worker = Worker()
    worker.method("stream")(lambda params, ctx: stream())
    assert answer(worker, "stream", {})["error"] == internal("handler failed: TypeError")


def test_system_exit_in_a_handler_is_answered() -> None:
    """On a pool thread SystemExit ended the thread silently: the call was never answered."""
    worker = Worker()
    worker.method("quit")(lambda params, ctx: sys.exit(3))
    assert answer(worker, "quit", {})["error"] == internal("handler failed: SystemExit")


def test_a_result_or_error_that_is_not_json_is_internal() -> None:
    """An RpcError whose data is not JSON raised on the call's thread: no answer came."""
    worker = Worker()
    worker.method("odd_result")(lambda params, ctx: {"rows": {1, 2}})

    @worker.method("odd_error")
    def odd_error(params: dict[str, Any], ctx: Any) -> None:
        raise RpcError("NOT_FOUND", "no row", {"rows": {1, 2}})

    result_error = answer(worker, "odd_result", {})["error"]
    assert result_error == internal("the result is not JSON: TypeError")
    assert answer(worker, "odd_error", {})["error"] == internal("the error is not JSON: TypeError")


def test_a_schema_that_cannot_be_evaluated_is_internal() -> None:
    """No input can pass such a schema: the worker's failure, not a business error."""
    worker = Worker({"m": {"type": "object", "if": {"required": ["a"]}}})
    worker.method("m")(lambda params, ctx: {})
    error = answer(worker, "m", {})["error"]
    assert (error["code"], error["data"]) == (-32603, {"code": "INTERNAL_ERROR"})
    assert "cannot be evaluated" in error["message"]


def test_a_failure_preparing_the_params_is_internal(monkeypatch: pytest.MonkeyPatch) -> None:
    worker = Worker({"greet": NAME})
    worker.method("greet")(lambda params, ctx: {})

    def broken(*args: Any) -> Any:
        raise RuntimeError("locale lookup failed")

    monkeypatch.setattr("fengyu_worker._locale", broken)
    assert answer(worker, "greet", {"name": "x"})["error"] == internal(
        "params not prepared: RuntimeError"
    )


def test_a_number_past_pythons_digit_limit_is_a_parse_error_not_a_crash() -> None:
    frame = b'{"jsonrpc":"2.0","id":"1","method":"m","params":{"n":' + b"9" * 5000 + b"}}"
    reply = Worker().handle(frame)
    assert reply is not None and reply["error"]["code"] == -32700


def test_a_business_error_keeps_its_code() -> None:
    worker = Worker()

    @worker.method("find")
    def find(params: dict[str, Any], ctx: Any) -> None:
        raise RpcError("NOT_FOUND", "no such row")

    error = answer(worker, "find", {})["error"]
    assert (error["code"], error["data"]) == (-32000, {"code": "NOT_FOUND"})
