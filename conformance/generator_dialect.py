"""JSON Schema 2020-12 as hypothesis-jsonschema reads it (drafts 4 to 7).

MCP schemas default to 2020-12 (spec: mcp.md#schema-dialect), and the generator ignores the
keywords that draft added or renamed: it would then draw values the schema rejects, or find
none at all. Where a draft-7 keyword says the same, the schema handed to the generator is
translated (prefixItems to an items array, dependentRequired and dependentSchemas to
dependencies, unevaluatedProperties to additionalProperties where nothing else evaluates the
object); where none does, UntranslatableKeyword says which keyword, so the item is skipped with that
reason rather than judged on values nobody can trust. Every drawn value is still validated
against the original schema (strategies.py).
"""

from __future__ import annotations

from plugin_spec.json_types import JsonObject, JsonValue


class UntranslatableKeyword(ValueError):
    """A 2020-12 keyword the generator does not know and no draft-7 keyword says."""


# Keywords of 2020-12 with no draft-7 counterpart the generator knows.
UNTRANSLATABLE = ("minContains", "maxContains", "unevaluatedItems", "$dynamicRef", "$anchor")
# Where another keyword evaluates an object's properties, unevaluatedProperties cannot become
# additionalProperties: it would also refuse what those keywords allow.
EVALUATORS = ("allOf", "anyOf", "oneOf", "not", "if", "$ref", "dependentSchemas")


def for_generator(schema: JsonObject) -> JsonObject:
    """The schema in the keywords hypothesis-jsonschema knows; UntranslatableKeyword when a keyword
    cannot be said that way."""
    for keyword in UNTRANSLATABLE:
        if keyword in schema:
            raise UntranslatableKeyword(
                f"the schema uses {keyword}, a JSON Schema 2020-12 keyword hypothesis-jsonschema "
                "does not know and the kit cannot translate"
            )
    out = {key: _translated_value(key, value) for key, value in schema.items()}
    if "prefixItems" in out:
        prefix = out.pop("prefixItems")
        rest = out.pop("items", None)
        out["items"] = prefix
        if rest is not None:
            out["additionalItems"] = rest
    dependencies: JsonObject = {}
    for keyword in ("dependentRequired", "dependentSchemas"):
        dependent = out.pop(keyword, {})
        if not isinstance(dependent, dict):
            raise TypeError(f"{keyword} is not an object")
        dependencies.update(dependent)
    if dependencies:
        out["dependencies"] = dependencies
    if "unevaluatedProperties" in out:
        if any(k in schema for k in EVALUATORS):
            raise UntranslatableKeyword(
                "the schema uses unevaluatedProperties beside "
                f"{', '.join(k for k in EVALUATORS if k in schema)}: hypothesis-jsonschema does "
                "not know the keyword, and additionalProperties would not say the same there"
            )
        unevaluated = out.pop("unevaluatedProperties")
        out.setdefault("additionalProperties", unevaluated)
    return out


def _translated_value(key: str, value: JsonValue) -> JsonValue:
    """Subschemas translated; names and values (properties' names, enum, const) kept."""
    if key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
        return (
            {name: _translated(sub) for name, sub in value.items()}
            if isinstance(value, dict)
            else value
        )
    if key in ("enum", "const", "required", "dependentRequired", "examples", "default"):
        return value
    return _translated(value)


def _translated(value: JsonValue) -> JsonValue:
    """A subschema, or a list of them, translated; any other value kept."""
    if isinstance(value, list):
        return [_translated(item) for item in value]
    return for_generator(value) if isinstance(value, dict) else value
