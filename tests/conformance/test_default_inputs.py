"""Defaulted parameters in the tools suite: an optional property with a `default` is left out
of some inputs and sent with exactly its default in others, and both reach the worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.fengyu.harness import ToolHarness
from conformance.strategies import InputSpace, defaulted_properties
from tests.conftest import plugin_with_manifest, tools_manifest

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "default": "hello"},  # required: never left out
        "mode": {"type": "string", "enum": ["fast", "exact"], "default": "fast"},
        "limit": {"type": "integer", "default": 4711},  # no random draw would pick it
        "wrong": {"type": "integer", "default": "ten"},  # invalid: never sent as its default
        "nested": {
            "type": "object",
            "properties": {"depth": {"type": "integer", "default": 2}},
        },
    },
    "required": ["text"],
}
RECORDING_WORKER = """
from misbehaving_worker import run


def record(params):
    return {"success": True, "summary": "recorded"}


run({"method_000": record})
"""


def test_defaulted_properties_are_the_optional_ones_whose_default_is_valid() -> None:
    assert defaulted_properties(SCHEMA) == [
        (("mode",), "fast"),
        (("limit",), 4711),
        (("nested", "depth"), 2),
    ]


@settings(max_examples=200, database=None)
@given(st.data())
def test_every_input_stays_valid_and_keeps_its_required_defaulted_property(
    data: st.DataObject,
) -> None:
    space = InputSpace.of(SCHEMA)
    value = space.draw_valid(data.draw)
    assert "text" in value


def test_inputs_omit_a_defaulted_property_and_send_its_default() -> None:
    """hypothesis finds both kinds quickly: each is one of three choices per property."""
    from hypothesis import find

    space = InputSpace.of(SCHEMA)
    quick = settings(max_examples=200, database=None)
    assert "mode" not in find(space.strategy, lambda v: "mode" not in v, settings=quick)
    sent = find(space.strategy, lambda v: v.get("limit") == 4711, settings=quick)
    assert sent["limit"] == 4711
    nested = find(space.strategy, lambda v: v.get("nested") == {"depth": 2}, settings=quick)
    assert nested["nested"] == {"depth": 2}


def test_both_kinds_reach_the_worker(run_kit, tmp_path: Path, monkeypatch) -> None:
    """The tools suite against a worker whose every call's params are recorded as sent (the
    worker's sandbox lets it write nowhere the test can read): some lack the defaulted
    property, some carry exactly its default."""
    received: list[dict[str, Any]] = []
    call = ToolHarness.call

    def recording(self: ToolHarness, method: str, params: Any, timeout: float) -> Any:
        if isinstance(params, dict):
            received.append(params)
        return call(self, method, params, timeout)

    monkeypatch.setattr(ToolHarness, "call", recording)
    schema = {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "greeting": {"type": "string", "default": "Hello, world"},
        },
        "required": ["text"],
        "additionalProperties": False,
    }
    manifest = tools_manifest("fan.summer.defaults", {"convert_text": schema})
    manifest["backend"] = {"runtime": "python", "protocolVersion": 4}
    root = plugin_with_manifest(tmp_path, manifest, "defaults")
    (root / "backend").mkdir()
    (root / "backend" / "worker.py").write_text(RECORDING_WORKER)
    run_kit([root], "-m", "tools", "-k", "FY-TOOL-001")
    tool_calls = [p for p in received if "text" in p]
    assert any("greeting" not in p for p in tool_calls), tool_calls
    assert any(p.get("greeting") == "Hello, world" for p in tool_calls), tool_calls
