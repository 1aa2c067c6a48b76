"""hypothesis-jsonschema reads drafts 4 to 7: the 2020-12 keywords MCP schemas may use are
translated for it, or the item is skipped naming the keyword (generator_dialect.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from hypothesis_jsonschema import from_schema
from jsonschema import Draft202012Validator

from conformance.strategies import GeneratorGap, InputSpace

PAIR = {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}
TRANSLATED: dict[str, dict[str, Any]] = {
    "prefixItems": {
        "type": "object",
        "properties": {"p": {**PAIR, "items": False, "minItems": 2}},
        "required": ["p"],
    },
    "dependentRequired": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "dependentRequired": {"a": ["b"]},
    },
    "dependentSchemas": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "dependentSchemas": {"a": {"required": ["b"]}},
    },
    "unevaluatedProperties": {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "unevaluatedProperties": False,
    },
}


def drawn(space: InputSpace, examples: int = 60) -> list[Any]:
    values: list[Any] = []

    @settings(max_examples=examples, database=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def draw(data: st.DataObject) -> None:
        values.append(space.draw_valid(data.draw))

    draw()
    return values


def test_the_gap_hypothesis_jsonschema_alone_cannot_generate_for_prefix_items() -> None:
    """Why the translation exists: untranslated, prefixItems is ignored and the array that
    must hold two items may hold none (items: false), so nothing can be drawn."""

    @settings(max_examples=20, database=None, suppress_health_check=list(HealthCheck))
    @given(from_schema(TRANSLATED["prefixItems"]))
    def draw(value: Any) -> None:
        pass

    with pytest.raises(Unsatisfiable):
        draw()


@pytest.mark.parametrize("keyword", TRANSLATED)
def test_translated_keywords_give_only_values_the_2020_12_schema_accepts(keyword: str) -> None:
    schema = TRANSLATED[keyword]
    values = drawn(InputSpace.of(schema))
    assert values
    validator = Draft202012Validator(schema)
    assert all(validator.is_valid(v) for v in values)


def test_dependencies_are_exercised_both_ways() -> None:
    values = drawn(InputSpace.of(TRANSLATED["dependentRequired"]), examples=100)
    assert any("a" in v and "b" in v for v in values)
    assert not any("a" in v and "b" not in v for v in values)


@pytest.mark.parametrize(
    ("schema", "keyword"),
    [
        (
            {
                "type": "object",
                "properties": {"l": {"type": "array", "contains": {"const": 3}, "minContains": 2}},
            },
            "minContains",
        ),
        (
            {
                "type": "object",
                "allOf": [{"properties": {"a": {"type": "integer"}}}],
                "unevaluatedProperties": False,
            },
            "unevaluatedProperties beside allOf",
        ),
    ],
)
def test_untranslatable_keywords_are_a_named_gap(schema: dict[str, Any], keyword: str) -> None:
    with pytest.raises(GeneratorGap, match=keyword):
        InputSpace.of(schema)
