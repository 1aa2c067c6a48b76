"""The worker SDK's own validator (fengyu_worker.Schema) judges params as python-jsonschema does,
on random schemas of the manifest subset and random values: the SDK a plugin vendors cannot
bring jsonschema along, and a plugin must not pass the kit with one reading of its schema and
meet another in FengYu."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from fengyu_worker import Schema, SchemaError, to_json_schema

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-5, 5, allow_nan=False).map(lambda f: round(f, 1)),
    st.sampled_from(["", "a", "b", "ab", "A1"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "c", "x"]), inner, max_size=3),
    ),
    max_leaves=8,
)
TYPES = st.sampled_from(["object", "array", "string", "integer", "number", "boolean"])


def _object(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"type": st.just("object")},
        optional={
            "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3),
            "required": st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=2),
            "additionalProperties": st.booleans(),
            "nullable": st.booleans(),
            "description": st.just("d"),
        },
    )


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"type": TYPES},
        optional={
            "enum": st.lists(SCALARS, min_size=1, max_size=3),
            "minimum": st.integers(-3, 3),
            "maximum": st.integers(-3, 3),
            "nullable": st.booleans(),
            "title": st.just("t"),
            "x-fengyu-advanced": st.booleans(),
        },
    )


SUBSET = st.recursive(
    _leaf(),
    lambda children: st.one_of(
        _object(children),
        st.fixed_dictionaries(
            {"type": st.just("array"), "items": children}, optional={"nullable": st.booleans()}
        ),
    ),
    max_leaves=6,
)


def _pointers(validator: Draft202012Validator, value: Any) -> set[str]:
    return {"".join(f"/{p}" for p in error.absolute_path) for error in validator.iter_errors(value)}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SUBSET, VALUES)
def test_the_sdk_and_jsonschema_agree_on_subset_schemas(schema: dict[str, Any], value: Any) -> None:
    standard = to_json_schema(schema)
    reference = Draft202012Validator(standard)
    ours = Schema(standard).errors(value)
    assert (not ours) == reference.is_valid(value)
    assert {e.pointer for e in ours} == _pointers(reference, value)


@settings(max_examples=200, deadline=None)
@given(SUBSET, VALUES)
def test_the_messages_are_jsonschemas_for_the_first_failure(
    schema: dict[str, Any], value: Any
) -> None:
    standard = to_json_schema(schema)
    ours = {(e.pointer, e.message) for e in Schema(standard).errors(value)}
    theirs = {
        ("".join(f"/{p}" for p in e.absolute_path), e.message)
        for e in Draft202012Validator(standard).iter_errors(value)
    }
    assert ours == theirs


EXTRA = [
    ({"type": ["string", "null"]}, [None, "a", 1]),
    ({"const": 1}, [1, 1.0, True, "1"]),
    (
        {"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^a"},
        ["a", "ab", "abcd", "ba"],
    ),
    (
        {"type": "array", "minItems": 1, "maxItems": 2, "uniqueItems": True},
        [[], [1], [1, 1], [1, True]],
    ),
    (
        {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "multipleOf": 0.5},
        [0, 0.5, 1, 0.25],
    ),
    ({"type": "integer", "multipleOf": 3}, [3, 4, 6.0]),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, ["a", 1, None]),
    ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, [1, 1.5, "a"]),
    ({"allOf": [{"minimum": 1}, {"maximum": 2}], "not": {"const": 2}}, [1, 2, 3]),
    (
        {"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 1},
        [{}, {"a": 1}, {"a": "x"}],
    ),
    (
        {"type": "object", "propertyNames": {"maxLength": 1}, "maxProperties": 1},
        [{"a": 1}, {"ab": 1}],
    ),
    (
        {"$defs": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/n"}}},
        [{"a": 1}, {"a": "x"}],
    ),
    ({"enum": [[1, 2], {"a": True}]}, [[1, 2], [1, 2.0], {"a": True}, {"a": 1}]),
]


@pytest.mark.parametrize(("schema", "values"), EXTRA, ids=range(len(EXTRA)))
def test_keywords_beyond_the_subset_agree_too(schema: dict[str, Any], values: list[Any]) -> None:
    reference = Draft202012Validator(schema)
    for value in values:
        assert Schema(schema).is_valid(value) == reference.is_valid(value), value


@pytest.mark.parametrize(
    "schema",
    [
        {"type": 5},
        {"type": "text"},
        {"properties": [1]},
        {"required": "a"},
        {"minimum": "1"},
        {"pattern": "("},
        {"$ref": "#/nowhere"},
        {"$ref": "https://example.com/s.json"},
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
        {"allOf": [{"$ref": "#"}]},
        {"if": {"type": "string"}, "then": {"minLength": 1}},
        {"patternProperties": {"^a": {"type": "string"}}},
    ],
)
def test_a_schema_it_cannot_evaluate_says_so(schema: dict[str, Any]) -> None:
    with pytest.raises(SchemaError):
        Schema(schema).errors({"a": 1})
