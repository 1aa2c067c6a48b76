"""The Python worker SDK takes a null optional property as an omitted one (FY-PROV-004; spec:
providers.md#what-providers-send): OpenAI's strict mode sends null for every property the
model leaves out, and the SDK drops such nulls before it validates."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fengyu_worker import Worker

SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "language": {"type": "string", "enum": ["en", "de"]},
        "limit": {"type": "integer", "minimum": 1},
        "note": {"type": ["string", "null"]},
        "anything": {},
        "label": {"type": "string", "title": "Label", "x-fengyu-advanced": True},
        "options": {
            "type": "object",
            "properties": {"depth": {"type": "integer"}, "style": {"type": "string"}},
            "required": ["style"],
        },
        "rows": {
            "type": "array",
            "items": {"type": "object", "properties": {"cell": {"type": "string"}}},
        },
    },
    "required": ["text"],
    "additionalProperties": False,
}


@pytest.fixture
def worker() -> Worker:
    worker = Worker({"echo": SCHEMA})

    @worker.method("echo")
    def echo(params: dict[str, Any], ctx: Any) -> Any:
        return params

    return worker


def call(worker: Worker, params: Any) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": params}
    reply = worker.handle(json.dumps(message).encode())
    assert reply is not None
    return reply


@pytest.mark.parametrize("name", ["language", "limit", "label", "options", "rows"])
def test_null_optional_property_is_taken_as_omitted(worker: Worker, name: str) -> None:
    reply = call(worker, {"text": "a b", name: None})
    assert reply.get("result") == {"text": "a b"}, reply


def test_every_null_optional_property_at_once(worker: Worker) -> None:
    """A strict-mode call: every optional property present, every one of them null."""
    params = {"text": "a b", "language": None, "limit": None, "label": None, "options": None}
    assert call(worker, params)["result"] == {"text": "a b"}


def test_null_kept_where_the_schema_admits_it(worker: Worker) -> None:
    reply = call(worker, {"text": "a b", "note": None, "anything": None})
    assert reply["result"] == {"text": "a b", "note": None, "anything": None}


def test_null_for_a_required_property_is_still_invalid(worker: Worker) -> None:
    reply = call(worker, {"text": None})
    assert reply["error"]["code"] == -32602
    assert "None is not of type 'string'" in reply["error"]["message"]


def test_nested_objects_and_array_items(worker: Worker) -> None:
    params = {"text": "t", "options": {"style": "x", "depth": None}, "rows": [{"cell": None}, {}]}
    reply = call(worker, params)
    assert reply["result"] == {"text": "t", "options": {"style": "x"}, "rows": [{}, {}]}


def test_null_for_a_nested_required_property_is_still_invalid(worker: Worker) -> None:
    reply = call(worker, {"text": "t", "options": {"style": None}})
    assert reply["error"]["code"] == -32602


def test_other_values_are_still_validated(worker: Worker) -> None:
    reply = call(worker, {"text": "t", "language": "fr", "limit": None})
    assert reply["error"]["code"] == -32602
    assert "'fr' is not one of" in reply["error"]["message"]


def test_a_method_without_schema_gets_params_as_sent() -> None:
    worker = Worker()

    @worker.method("echo")
    def echo(params: dict[str, Any], ctx: Any) -> Any:
        return params

    reply = worker.handle(b'{"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"x": null}}')
    assert reply is not None and reply["result"] == {"x": None}
