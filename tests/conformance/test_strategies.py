"""Input generation: where hypothesis-jsonschema falls short, the kit's wrapper covers the gap."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from jsonschema import Draft202012Validator

from conformance.strategies import GeneratorGap, InputSpace
from plugin_spec.schema_subset import to_json_schema

NULLABLE = {
    "type": "object",
    "properties": {"note": {"type": "string", "nullable": True}},
    "required": ["note"],
}


def test_hypothesis_and_hypothesis_jsonschema_work_together() -> None:
    """hypothesis-jsonschema 0.23.1 uses hypothesis internals removed in 6.170.10 (pinned)."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}

    @settings(max_examples=5, database=None)
    @given(from_schema(schema))
    def generates(value: dict) -> None:
        assert isinstance(value["a"], int)

    generates()


def test_gap_hypothesis_jsonschema_ignores_nullable() -> None:
    @settings(max_examples=60, database=None)
    @given(from_schema(NULLABLE))
    def never_null(value: dict) -> None:
        assert value["note"] is not None

    never_null()


def test_nullable_becomes_a_type_union() -> None:
    assert to_json_schema(NULLABLE)["properties"]["note"] == {"type": ["string", "null"]}
    assert to_json_schema({"enum": ["a"], "nullable": True}) == {"enum": ["a", None]}
    nested = {"type": "array", "items": {"type": "integer", "nullable": True}}
    assert to_json_schema(nested)["items"] == {"type": ["integer", "null"]}


def test_a_property_named_nullable_is_kept() -> None:
    schema = {"type": "object", "properties": {"nullable": {"type": "boolean"}}}
    assert to_json_schema(schema) == schema


def test_wrapped_space_generates_null_for_nullable() -> None:
    space = InputSpace.of(NULLABLE)
    seen: list[object] = []

    @settings(max_examples=100, database=None)
    @given(st.data())
    def collect(data: st.DataObject) -> None:
        seen.append(space.draw_valid(data.draw)["note"])

    collect()
    assert None in seen and any(isinstance(v, str) for v in seen)


def test_generated_values_are_revalidated() -> None:
    space = InputSpace.of({"type": "object"})
    object.__setattr__(space, "validator", Draft202012Validator({"not": {}}))
    with pytest.raises(GeneratorGap, match="which the schema rejects"):
        space.draw_valid(lambda strategy: {})


def test_unusable_schema_is_a_gap_not_a_crash() -> None:
    with pytest.raises(GeneratorGap):
        InputSpace.of({"type": "object", "properties": {"a": {"type": "strin"}}})
    with pytest.raises(GeneratorGap):
        InputSpace.of("not a schema")


def test_mutations_break_the_schema() -> None:
    space = InputSpace.of(
        {
            "type": "object",
            "properties": {"path": {"type": "string"}, "n": {"type": "integer"}, "free": {}},
            "required": ["path"],
        }
    )
    mutations = dict(space.mutations({"path": "/a", "n": 1}))
    assert mutations == {
        "required property 'path' dropped": {"n": 1},
        "property 'path' given a int instead of string": {"path": 12345, "n": 1},
        "property 'n' given a str instead of integer": {"path": "/a", "n": "not a number"},
    }
    assert all(not space.validator.is_valid(v) for v in mutations.values())


def test_a_string_enum_is_broken_by_a_value_it_does_not_list_even_as_text() -> None:
    space = InputSpace.of(
        {"type": "object", "properties": {"lang": {"type": "string", "enum": ["en", "fr"]}}}
    )
    mutations = dict(space.mutations({"lang": "en"}, textual={"lang"}))
    assert mutations == {
        "property 'lang' given 'not-en-fr', not one of its enum": {"lang": "not-en-fr"}
    }
