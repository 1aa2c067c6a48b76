"""The simplest instance of a tool schema: built directly, valid, and small."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from conformance.simplest import NoSimpleInstance, simplest_instance
from conformance.strategies import InputSpace
from plugin_spec.schema_subset import to_json_schema

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "object"}, {}),
        ({"type": "object", "properties": {"a": {"type": "string"}}}, {}),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}, "n": {"type": "integer"}},
                "required": ["a", "n"],
            },
            {"a": "", "n": 0},
        ),
        ({"type": "string", "minLength": 3}, "aaa"),
        ({"type": "string", "format": "date"}, "2000-01-01"),
        ({"type": "integer", "minimum": 5}, 5),
        ({"type": "integer", "maximum": -2}, -2),
        ({"type": "integer", "exclusiveMinimum": 0}, 1),
        ({"type": "number", "exclusiveMaximum": 0}, -1),
        ({"type": "integer", "minimum": 7, "multipleOf": 5}, 10),
        ({"type": "number", "minimum": 0.5}, 0.5),
        ({"type": "boolean"}, False),
        ({"type": ["string", "null"]}, ""),
        ({"type": "array", "minItems": 2, "items": {"type": "integer"}}, [0, 0]),
        ({"enum": ["b", "a"]}, "b"),
        ({"const": {"x": 1}}, {"x": 1}),
    ],
)
def test_simplest_instance(schema: dict[str, Any], expected: Any) -> None:
    value = simplest_instance(schema)
    assert value == expected and type(value) is type(expected)
    assert Draft202012Validator(schema).is_valid(value)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^[A-Z]{3}$"},
        {"allOf": [{"type": "string"}]},
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "required": ["a"]},
        {"type": "array", "minItems": 2, "uniqueItems": True},
        {"enum": []},
    ],
)
def test_what_the_walk_does_not_build_is_said(schema: dict[str, Any]) -> None:
    with pytest.raises(NoSimpleInstance):
        simplest_instance(schema)


def test_minimal_falls_back_to_a_search_for_what_the_walk_cannot_build() -> None:
    space = InputSpace.of(
        {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}},
         "required": ["code"]}
    )  # fmt: skip
    value = space.minimal()
    assert space.validator.is_valid(value) and len(value["code"]) == 3


def test_minimal_of_every_sample_tool_is_valid() -> None:
    """The walk handles every tool schema the samples ship, and its answers validate."""
    schemas = []
    for manifest in REPO.glob("sample_plugins/*/manifest.json"):
        methods = json.loads(manifest.read_text())["rpc"]["methods"]
        schemas += [m["inputSchema"] for m in methods.values() if "inputSchema" in m]
    assert schemas
    for schema in schemas:
        translated = to_json_schema(schema)
        value = simplest_instance(translated)
        assert Draft202012Validator(translated).is_valid(value), (schema, value)


leaf = st.sampled_from(
    [
        {"type": "string"},
        {"type": "string", "minLength": 2, "maxLength": 4},
        {"type": "integer", "minimum": -3, "maximum": 9},
        {"type": "number", "exclusiveMinimum": 1.5},
        {"type": "boolean"},
        {"type": ["integer", "null"]},
        {"enum": [3, "x"]},
        {"type": "string", "format": "email"},
    ]
)
schemas = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.builds(
            lambda items, n: {"type": "array", "items": items, "minItems": n},
            inner,
            st.integers(0, 2),
        ),
        st.dictionaries(st.sampled_from("abcd"), inner, max_size=3).flatmap(
            lambda props: st.builds(
                lambda required: {"type": "object", "properties": props, "required": required},
                st.lists(st.sampled_from(sorted(props)), unique=True) if props else st.just([]),
            )
        ),
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(schemas)
def test_the_walk_builds_valid_instances_of_nested_schemas(schema: dict[str, Any]) -> None:
    assert Draft202012Validator(schema).is_valid(simplest_instance(schema))
