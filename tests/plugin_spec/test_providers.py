"""The provider rule sets and the judge, without the kit: every rule is dated, sourced and
known to the judge, its own example breaks it, and rewrites say exactly what is sent."""

from __future__ import annotations

import copy
import datetime
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from jsonschema import Draft202012Validator

from plugin_spec.providers import checks
from plugin_spec.providers.judge import Verdict, fits, judge_set, judge_tool
from plugin_spec.providers.rules import PROVIDERS, Outcome, Rule, all_providers, load_provider
from plugin_spec.tool_definition import model_schema

RULES = [rule for provider in all_providers() for rule in provider.rules]
OPENAI, ANTHROPIC, GEMINI = (load_provider(p) for p in PROVIDERS)


def rule_ids(noted: Any) -> set[str]:
    return {n.rule.id for n in noted}


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_every_rule_is_sourced_dated_and_known(rule: Rule) -> None:
    assert rule.source.title.strip()
    assert re.fullmatch(r"https://[^\s/]+\.[^\s/]+/\S*", rule.source.url), rule.source.url
    assert isinstance(rule.read, datetime.date)
    assert datetime.date(2024, 1, 1) <= rule.read <= datetime.date.today()
    assert isinstance(rule.outcome, Outcome)
    assert rule.text.strip()
    assert rule.check in checks.TOOL_CHECKS or rule.check in checks.SET_CHECKS
    # The rule file's idea of a whole-set check is the judge's.
    assert rule.whole_set == (rule.check in checks.SET_CHECKS)


def test_rule_ids_are_unique_and_name_their_provider() -> None:
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    for rule in RULES:
        assert rule.id.startswith(f"{rule.provider.upper()}-"), rule.id


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_every_rule_is_broken_by_its_example(rule: Rule) -> None:
    provider = load_provider(rule.provider)
    tools = [(name, rule.fails.input_schema) for name in rule.fails.tool_names()]
    if rule.whole_set:
        assert rule.id in rule_ids(judge_set(provider, tools))
        return
    judged = [judge_tool(provider, name, schema) for name, schema in tools]
    noted = set().union(*(rule_ids(j.rejections) | rule_ids(j.changes) for j in judged))
    assert rule.id in noted
    side = "rejections" if rule.outcome is Outcome.REJECTS else "changes"
    assert all(n.rule.outcome is Outcome.REJECTS for j in judged for n in j.rejections)
    assert rule.id in set().union(*(rule_ids(getattr(j, side)) for j in judged))


def test_openai_closes_objects_and_makes_optional_properties_nullable() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer", "enum": [1, 2]}},
        "required": ["a"],
    }
    judged = judge_tool(OPENAI, "pick", schema)
    assert judged.verdict is Verdict.REWRITTEN
    assert judged.rejections == ()
    assert rule_ids(judged.changes) == {"OPENAI-CLOSED", "OPENAI-REQUIRED"}
    assert judged.sent == {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": ["integer", "null"], "enum": [1, 2, None]},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }


def test_openai_makes_an_untyped_optional_property_an_anyof_with_null() -> None:
    schema = {
        "type": "object",
        "properties": {"c": {"description": "A code.", "enum": ["x", "y"]}},
        "additionalProperties": False,
    }
    sent = judge_tool(OPENAI, "pick", schema).sent
    assert sent["properties"]["c"] == {
        "description": "A code.",
        "anyOf": [{"enum": ["x", "y"]}, {"type": "null"}],
    }
    assert sent["required"] == ["c"]


def anthropic_sent(properties: dict[str, Any]) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    judged = judge_tool(ANTHROPIC, "tool", schema)
    assert judged.rejections == ()
    return judged.sent["properties"]


def test_anthropic_moves_constraints_into_the_description() -> None:
    sent = anthropic_sent(
        {
            "code": {"type": "string", "description": "A code.", "minimum": 1, "maxLength": 3},
            "bare": {"type": "string", "pattern": "^[A-Z]+$"},
        }
    )
    assert sent["code"] == {
        "type": "string",
        "description": "A code.\n\n{minimum: 1, maxLength: 3}",
    }
    assert sent["bare"] == {"type": "string", "description": "{pattern: ^[A-Z]+$}"}


def test_anthropic_keeps_supported_formats_and_min_items_only() -> None:
    sent = anthropic_sent(
        {
            "page": {"type": "string", "format": "uri"},
            "expr": {"type": "string", "format": "regex"},
            "one": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "two": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        }
    )
    assert sent["page"] == {"type": "string", "format": "uri"}
    assert sent["expr"] == {"type": "string", "description": "{format: regex}"}
    assert sent["one"] == {"type": "array", "items": {"type": "string"}, "minItems": 1}
    assert sent["two"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "{minItems: 2}",
    }


def test_anthropic_turns_one_of_into_any_of_and_closes_objects() -> None:
    schema = {
        "type": "object",
        "properties": {
            "key": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "meta": {"type": "object", "properties": {}, "additionalProperties": True},
        },
        "required": ["key", "meta"],
    }
    judged = judge_tool(ANTHROPIC, "tool", schema)
    assert judged.verdict is Verdict.REWRITTEN
    assert rule_ids(judged.changes) == {"ANTHROPIC-CLOSED", "ANTHROPIC-OPEN", "ANTHROPIC-ONEOF"}
    assert judged.sent == {
        "type": "object",
        "properties": {
            "key": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "meta": {"type": "object", "properties": {}, "additionalProperties": False},
        },
        "required": ["key", "meta"],
        "additionalProperties": False,
    }


def test_anthropic_keeps_only_the_description_beside_a_ref() -> None:
    schema = {
        "type": "object",
        "properties": {"code": {"$ref": "#/$defs/code", "description": "A code.", "default": "A"}},
        "required": ["code"],
        "additionalProperties": False,
        "$defs": {"code": {"type": "string"}},
    }
    sent = judge_tool(ANTHROPIC, "tool", schema).sent
    assert sent["properties"]["code"] == {"$ref": "#/$defs/code", "description": "A code."}


CLEAN_FOR_GEMINI = {
    "type": "object",
    "properties": {
        "sheet": {"type": "string", "description": "Sheet name.", "nullable": True},
        "rows": {"type": "integer", "minimum": 1, "maximum": 100},
        "mode": {"type": "string", "enum": ["fast", "full"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    },
    "required": ["rows"],
}


def test_gemini_accepts_a_clean_schema_unchanged() -> None:
    judged = judge_tool(GEMINI, "read_sheet", CLEAN_FOR_GEMINI)
    assert judged.verdict is Verdict.ACCEPTED
    assert judged.sent == CLEAN_FOR_GEMINI
    assert judge_set(GEMINI, [("read_sheet", CLEAN_FOR_GEMINI)]) == []


def test_set_limits_count_the_whole_request() -> None:
    twenty = [(f"tool_{i:02d}", {"type": "object", "properties": {}}) for i in range(20)]
    assert judge_set(ANTHROPIC, twenty) == []
    assert rule_ids(judge_set(ANTHROPIC, [*twenty, ("one_more", {})])) == {"ANTHROPIC-STRICT-TOOLS"}
    # 12 + 12 optional parameters are 24, the most Anthropic takes; one more is too many.
    twelve = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(12)}}
    assert judge_set(ANTHROPIC, [("a", twelve), ("b", twelve)]) == []
    thirteen = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(13)}}
    assert rule_ids(judge_set(ANTHROPIC, [("a", twelve), ("b", thirteen)])) == {
        "ANTHROPIC-OPTIONAL"
    }


SCHEMAS_TO_JUDGE = [
    CLEAN_FOR_GEMINI,
    *(r.fails.input_schema for r in RULES if not r.id.startswith("OPENAI-PROPERTIES")),
    {
        "type": "object",
        "properties": {
            "a": {"description": "untyped"},
            "b": {"type": "string", "format": "regex", "minLength": 2, "description": "B."},
            "c": {"oneOf": [{"type": "object", "properties": {"x": {"type": "integer"}}}]},
            "d": {"type": "array", "items": {"type": "integer", "enum": [1]}, "minItems": 3},
        },
    },
]


@pytest.mark.parametrize("provider", all_providers(), ids=PROVIDERS)
@pytest.mark.parametrize("schema", SCHEMAS_TO_JUDGE)
def test_judging_never_changes_the_schema_it_is_given(provider: Any, schema: Any) -> None:
    before = copy.deepcopy(schema)
    judge_tool(provider, "tool", schema)
    judge_set(provider, [("tool", schema), ("other", schema)])
    assert schema == before


@settings(max_examples=300, deadline=None)
@given(st.from_regex(r"[a-zA-Z0-9_-]{1,64}", fullmatch=True))
def test_every_name_the_profiles_allow_needs_no_repair(name: str) -> None:
    """Why the kit checks no name uniqueness of its own per provider: a name FY-MAN-006 and
    ERP-TOOL-009 allow is taken as it is by OpenAI and Anthropic, and Gemini only refuses one
    that starts with a digit or a hyphen (spec: providers.md#the-whole-request)."""
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    for provider in all_providers():
        refused = rule_ids(judge_tool(provider, name, schema).rejections)
        name_rules = {r for r in refused if r.endswith("-NAME")}
        expected = (
            {"GEMINI-NAME"} if provider.id == "gemini" and name[0] in "0123456789-" else set()
        )
        assert name_rules == expected, (provider.id, name)


# Schemas from a small grammar: leaves are drawn by hypothesis-jsonschema from LEAF, a schema
# of leaf schemas; objects, arrays, anyOf/oneOf/allOf and a $ref to $defs nest them.
LEAF: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {"enum": ["string", "integer", "number", "boolean", "null", ["string", "null"]]},
        "description": {"type": "string", "maxLength": 8},
        "format": {"enum": ["uri", "regex", "date-time", "email"]},
        "enum": {"type": "array", "items": {"type": ["string", "integer"]}, "maxItems": 3},
        "const": {"type": ["string", "integer"]},
        "minimum": {"type": "integer"},
        "maxLength": {"type": "integer", "minimum": 0},
        "pattern": {"enum": ["^a", "[0-9]+"]},
        "nullable": {"type": "boolean"},
        "default": {"type": "string", "maxLength": 3},
        "not": {"enum": [{"type": "null"}, {"const": ""}]},
    },
    "additionalProperties": False,
}
NAMES = st.sampled_from(["a", "b", "c/d", "e~f", "g h"])


def objects(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """An object node, with or without its type (an untyped one is what
    test_openai_nullable_on_an_untyped_object_with_optional_properties pins down)."""
    return st.builds(
        lambda typed, props, required, closed, extra: {
            **({"type": "object"} if typed else {}),
            "properties": props,
            **({"required": sorted(set(required) & set(props))} if required else {}),
            **({"additionalProperties": closed} if closed is not None else {}),
            **extra,
        },
        st.booleans(),
        st.dictionaries(NAMES, children, max_size=3),
        st.lists(NAMES, max_size=3),
        st.one_of(st.none(), st.booleans(), children),
        st.fixed_dictionaries({}, optional={"description": st.just("An object.")}),
    )


def nested(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        objects(children),
        st.builds(
            lambda items, n: {"type": "array", "items": items, **n},
            children,
            st.fixed_dictionaries({}, optional={"minItems": st.integers(0, 3)}),
        ),
        st.builds(
            lambda key, bs: {key: bs},
            st.sampled_from(["anyOf", "oneOf", "allOf"]),
            st.lists(children, min_size=1, max_size=3),
        ),
        st.builds(
            lambda d: {"$ref": "#/$defs/leaf", **d},
            st.fixed_dictionaries(
                {}, optional={"description": st.just("R."), "default": st.just("x")}
            ),
        ),
    )


SCHEMAS = st.builds(
    lambda root, leaf: {**root, **({"$defs": {"leaf": leaf}} if leaf is not None else {})},
    objects(st.recursive(from_schema(LEAF), nested, max_leaves=8)),
    st.none() | from_schema(LEAF),
)


@settings(max_examples=300, deadline=None)
@given(SCHEMAS)
def test_judging_random_schemas_never_raises_and_sends_valid_json_schema(schema: Any) -> None:
    Draft202012Validator.check_schema(schema)
    before = copy.deepcopy(schema)
    for provider in all_providers():
        judged = judge_tool(provider, "tool", schema)
        Draft202012Validator.check_schema(judged.sent)
        judge_set(provider, [("tool", schema), ("other", judged.sent)])
        if not judged.rejections:  # accepted as is exactly when nothing was changed
            assert (judged.verdict is Verdict.ACCEPTED) == (judged.sent == schema)
    assert schema == before


def test_openai_nullable_on_an_untyped_object_with_optional_properties() -> None:
    """The parent's rewrite makes x nullable before x's own optional y is made required:
    x is named an object (keeping its properties in place), not wrapped in an anyOf."""
    schema = {"type": "object", "properties": {"x": {"properties": {"y": {"type": "string"}}}}}
    sent = judge_tool(OPENAI, "tool", schema).sent
    Draft202012Validator.check_schema(sent)
    assert sent["properties"]["x"] == {
        "type": ["object", "null"],
        "properties": {"y": {"type": ["string", "null"]}},
        "required": ["y"],
        "additionalProperties": False,
    }


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "properties",
                    "required",
                    "items",
                    "anyOf",
                    "oneOf",
                    "$ref",
                    "$defs",
                    "enum",
                    "additionalProperties",
                    "minimum",
                    "format",
                    "minItems",
                    "description",
                    "nullable",
                    "x",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(JSON)
def test_judging_any_json_never_raises(schema: Any) -> None:
    """A manifest's schema is untrusted: whatever JSON it holds (a null required, a string
    where a list belongs), every provider judges it without an exception."""
    for provider in all_providers():
        judge_tool(provider, "tool", schema)
        judge_set(provider, [("tool", schema)])


def test_fits_lists_at_most_twenty_refusals_per_tool() -> None:
    """A hostile schema breaks a rule many times; the host's answer stays small."""
    schema = {"type": "object", "properties": {f"p{i}": {"description": "?"} for i in range(30)}}
    gemini = fits([("many", schema)])["gemini"]
    lines = gemini["rejected"]["many"]
    assert len(lines) == 21 and lines[-1] == "... and 10 more"
    assert all(line.startswith("GEMINI-TYPED") for line in lines[:20])


def test_the_model_schema_drops_fengyus_annotations_and_keeps_values() -> None:
    schema = {
        "type": "object",
        "properties": {
            "file": {"type": "string", "format": "fengyu-file", "x-fengyu-file-access": "read"},
            "x-fengyu-named": {"type": "string", "format": "date"},
            "mode": {"enum": [{"format": "fengyu-file"}], "default": {"x-fengyu-sensitive": 1}},
            "odd": {"type": "string", "format": ["fengyu-file"]},
        },
    }
    assert model_schema(schema) == {
        "type": "object",
        "properties": {
            "file": {"type": "string"},
            "x-fengyu-named": {"type": "string", "format": "date"},
            "mode": {"enum": [{"format": "fengyu-file"}], "default": {"x-fengyu-sensitive": 1}},
            "odd": {"type": "string", "format": ["fengyu-file"]},
        },
    }


def test_the_model_schema_of_a_very_deep_schema_does_not_raise() -> None:
    schema: dict = {"type": "string"}
    for _ in range(5000):
        schema = {"type": "array", "items": schema}
    assert model_schema(schema)["type"] == "array"
