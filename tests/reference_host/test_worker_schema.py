"""The worker SDK's own validator (fengyu_worker.Schema) judges params as python-jsonschema does,
on random schemas of the manifest subset and random values: the SDK a plugin vendors cannot
bring jsonschema along, and a plugin must not pass the kit with one reading of its schema and
meet another in FengYu. It evaluates the subset and nothing more: a keyword beyond it is
refused."""

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


BEYOND_THE_SUBSET = [
    {"type": "string", "pattern": "("},
    {"type": "string", "minLength": 2},
    {"const": 1},
    {"type": "number", "exclusiveMinimum": 0},
    {"type": "integer", "multipleOf": 3},
    {"type": "array", "uniqueItems": True},
    {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    {"type": "object", "properties": {"a": {"oneOf": [{"type": "number"}]}}},
    {"type": "object", "additionalProperties": {"type": "integer"}},
    {"type": "object", "propertyNames": {"maxLength": 1}},
    {"$defs": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/n"}}},
    {"if": {"type": "string"}, "then": {"minLength": 1}},
    {"patternProperties": {"^a": {"type": "string"}}},
]


@pytest.mark.parametrize("schema", BEYOND_THE_SUBSET, ids=range(len(BEYOND_THE_SUBSET)))
def test_a_keyword_beyond_the_manifest_subset_is_refused_not_skipped(
    schema: dict[str, Any],
) -> None:
    """FY-MAN-011 refuses these in a manifest, so the SDK a plugin vendors does not carry their
    evaluation; skipping one would let through what the schema says to refuse."""
    with pytest.raises(SchemaError, match="beyond the manifest subset"):
        Schema(schema).errors({"a": 1})


@pytest.mark.parametrize(
    "schema",
    [
        {"type": 5},
        {"type": "text"},
        {"properties": [1]},
        {"required": "a"},
        {"minimum": "1"},
        {"enum": "a"},
        {"items": 3},
        {"additionalProperties": "no"},
    ],
)
def test_a_schema_it_cannot_evaluate_says_so(schema: dict[str, Any]) -> None:
    with pytest.raises(SchemaError):
        Schema(schema).errors({"a": 1})


def test_annotations_are_not_assertions() -> None:
    """What the subset allows besides assertions passes, as in python-jsonschema."""
    schema = {
        "type": "object",
        "description": "d",
        "properties": {
            "file": {"type": "string", "format": "fengyu-file", "x-fengyu-file-access": "read"},
            "mode": {"type": "string", "default": "a", "title": "t", "x-fengyu-advanced": True},
        },
    }
    value = {"file": "not a path at all", "mode": "b"}
    assert Schema(schema).is_valid(value) == Draft202012Validator(schema).is_valid(value)
