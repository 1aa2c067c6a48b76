"""Values a tool's own words suggest for its inputs, besides what the schema's types allow.

A generated string is never a valid time zone, repository path, workbook or expression, so a
search from the schema alone gets every call of such a tool refused and examines nothing
(spec: mcp.md#calling-tools). The schema and its descriptions often name good values: a
property's `examples`, `default`, `enum` and `const`, and examples its description gives in
the common forms ("IANA time zone (e.g. 'America/New_York', 'Europe/London')", "for example
`main`", "Defaults to 10"). Each is kept only where the property's schema admits it.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable
from typing import TypeVar

from plugin_spec.json_types import JsonArray, JsonObject, JsonValue, loads

# Where a description starts giving examples: the marker, then the values (quoted, or one
# bare word) up to the end of the clause.
MARKER = re.compile(
    r"(?:\be\.\s?g\.|\beg\.|\bfor (?:example|instance)\b|\bexamples?\s*:|\bsuch as\b"
    r"|\bdefaults?\s+(?:to|is)\b|\bdefault\s*[:=])[\s,:]*",
    re.IGNORECASE,
)
QUOTES = {"'": "'", '"': '"', "`": "`", "\u2018": "\u2019", "\u201c": "\u201d"}
SEPARATOR = re.compile(r"(?:[\s,]|\bor\b|\band\b)*", re.IGNORECASE)
BARE = re.compile(r"[^\s,;()\[\]{}]+")
MAX_VALUE = 200  # characters of one example value
MAX_VALUES = 8  # example values taken after one marker

HintPath = tuple[tuple[str, ...], tuple[JsonValue, ...]]
T = TypeVar("T")


def description_examples(text: object) -> list[str]:
    """The example values a description gives, in order, once each: every quoted value after
    a marker ("e.g.", "for example", "such as", "Example:", "defaults to"), or the one bare
    word that follows it when none is quoted."""
    if not isinstance(text, str):
        return []
    found: list[str] = []
    for marker in MARKER.finditer(text):
        found += _values_after(text, marker.end())
    return list(dict.fromkeys(found))


def _values_after(text: str, at: int) -> list[str]:
    values: list[str] = []
    position = at
    while len(values) < MAX_VALUES:
        position = SEPARATOR.match(text, position).end()  # type: ignore[union-attr]
        opening = text[position : position + 1]
        closing = QUOTES.get(opening)
        if closing is None:
            break
        end = text.find(closing, position + 1)
        if end < 0 or end - position > MAX_VALUE or "\n" in text[position:end]:
            break
        values.append(text[position + 1 : end])
        position = end + 1
    if values:
        return [v for v in values if v.strip()]
    bare = BARE.match(text, at)
    word = bare.group().rstrip(".:") if bare else ""
    return [word] if word else []


def candidates(schema: JsonObject) -> JsonArray:
    """A property's suggested values, as its schema gives them: examples, example (OpenAPI),
    default, const, enum, then its description's examples (as text, and as the JSON value the
    text spells, "10" as 10)."""
    values: JsonArray = []
    examples = schema.get("examples")
    if isinstance(examples, list):
        values += examples
    if "example" in schema:
        values.append(schema["example"])
    for key in ("default", "const"):
        if key in schema:
            values.append(schema[key])
    enum = schema.get("enum")
    if isinstance(enum, list):
        values += enum
    for text in description_examples(schema.get("description")):
        values.append(text)
        with contextlib.suppress(ValueError):
            values.append(loads(text))
    return values


def property_hints(
    schema: JsonValue, admits: Callable[[JsonObject, JsonValue], bool], skip: set[tuple[str, ...]]
) -> list[HintPath]:
    """(names leading to it through nested objects, suggested values) of each property with
    suggestions its own schema admits; skip: paths whose values are drawn elsewhere (an
    optional property's default, which with_defaults sends or leaves out)."""
    found: list[HintPath] = []

    def walk(node: JsonValue, path: tuple[str, ...]) -> None:
        properties = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(properties, dict):
            return
        for name, sub in properties.items():
            if not isinstance(sub, dict):
                continue
            here = (*path, name)
            suggested = candidates(sub)
            if here in skip:
                suggested = [v for v in suggested if v != sub.get("default")]
            kept = _unique(v for v in suggested if admits(sub, v))
            if kept:
                found.append((here, tuple(kept)))
            walk(sub, here)

    walk(schema, ())
    return found


def description_seeds(text: object, valid: Callable[[JsonValue], bool]) -> list[JsonObject]:
    """Whole argument objects a tool's description spells as JSON ("Example: {"timezone":
    "UTC"}"), where they are valid."""
    if not isinstance(text, str):
        return []
    decoder = json.JSONDecoder()
    found: list[JsonObject] = []
    for match in re.finditer(r"\{", text):
        try:
            value: JsonValue = decoder.raw_decode(text, match.start())[0]
        except ValueError:
            continue
        if isinstance(value, dict) and value and valid(value):
            found.append(value)
    return _unique(found)


def _unique(values: Iterable[T]) -> list[T]:
    """values once each, as JSON tells them apart (1 and true are two values)."""
    seen: dict[str, T] = {}
    for value in values:
        try:
            key = json.dumps(value, sort_keys=True)
        except (TypeError, ValueError):
            continue
        seen.setdefault(key, value)
    return list(seen.values())
