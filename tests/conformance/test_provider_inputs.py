"""What FY-PROV-004 and FY-PROV-005 send: which properties get null, which rewrites count as
dropping a constraint, and which inputs are outside the inputSchema (spec:
providers.md#what-providers-send). The fixtures FY-PROV-004-* and FY-PROV-005-* run them
against real workers."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from conformance.checks.fengyu_providers import (
    _breaks,
    _just_outside,
    _nullable_optionals,
    _widening,
)
from plugin_spec.providers.judge import judge_tool
from plugin_spec.providers.rules import load_provider


def tool(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def nullable_optionals(schema: dict[str, Any]) -> list[str]:
    sent = judge_tool(load_provider("openai"), "t", schema).sent
    return _nullable_optionals(schema, sent)


def test_fy_prov_004_sends_null_for_optional_properties_that_refuse_it() -> None:
    schema = tool(
        {
            "text": {"type": "string"},
            "language": {"type": "string"},
            "mode": {"enum": ["a", "b"]},
            "note": {"type": ["string", "null"]},
            "hint": {"type": "string", "nullable": True},
            "anything": {},
        },
        ["text"],
    )
    assert nullable_optionals(schema) == ["language", "mode"]


def test_fy_prov_004_has_nothing_to_send_without_optional_properties() -> None:
    assert nullable_optionals(tool({"text": {"type": "string"}}, ["text"])) == []
    assert nullable_optionals({"type": "object"}) == []


def widening(schema: dict[str, Any]) -> list[str]:
    judgement = judge_tool(load_provider("anthropic"), "t", schema)
    return [n.rule.id for n in _widening(judgement)]


@pytest.mark.parametrize(
    "sub",
    [
        {"type": "integer", "minimum": 1},
        {"type": "string", "maxLength": 5},
        {"type": "string", "pattern": "^[a-z]+$"},
        {"oneOf": [{"type": "string"}, {"type": "integer"}]},
    ],
)
def test_fy_prov_005_counts_rewrites_that_admit_more(sub: dict[str, Any]) -> None:
    assert widening(tool({"x": sub}, ["x"]))


@pytest.mark.parametrize(
    "sub",
    [
        {"type": "string"},
        {"type": "string", "nullable": True},
        {"type": "string", "default": "a, b: c", "examples": ["b"]},
        {"type": "string", "format": "regex"},
    ],
)
def test_fy_prov_005_ignores_rewrites_that_bind_nothing_more(sub: dict[str, Any]) -> None:
    assert widening(tool({"x": sub}, ["x"])) == []


def test_fy_prov_005_steps_just_past_each_bound() -> None:
    schema = tool(
        {
            "count": {"type": "integer", "minimum": 1, "maximum": 9},
            "ratio": {"type": "number", "exclusiveMinimum": 0},
            "code": {"type": "string", "minLength": 2, "maxLength": 3},
            "file": {"type": "string", "maxLength": 3},
        },
        [],
    )
    assert _just_outside(schema, {"file"}) == [
        ("count", 0),
        ("count", 10),
        ("ratio", 0),
        ("code", "x"),
        ("code", "xxxx"),
    ]


def test_fy_prov_005_judges_inputs_outside_the_schema_file_parameters_aside() -> None:
    validator = Draft202012Validator(
        tool({"count": {"type": "integer", "minimum": 1}, "file": {"type": "string"}}, [])
    )
    assert _breaks(validator, {"count": 0}, set())
    assert not _breaks(validator, {"count": 1}, set())
    assert not _breaks(validator, {"count": 1, "file": {"id": "ref_1"}}, {"file"})
