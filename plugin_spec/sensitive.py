"""Sensitive inputs (spec: host.md#sensitive-inputs): the values of a call that are secrets.

FengYu marks a credential or secret `x-fengyu-sensitive: true` on its property schema and says
such a value is never logged or exposed. The host shows the mask in their place wherever a
call is shown (tool and approval events, the console, workflow runs) while the worker still
gets the value; the kit sends a canary there and fails a worker that lets it out. Both read
the marker here, so they agree on which values are secret.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

from plugin_spec.json_types import JsonValue, ReadOnlyJson
from plugin_spec.secret_search import Redaction

MARKER = "x-fengyu-sensitive"
MASK = "[sensitive]"
# Schemas nest; a marker deeper than this is not looked for (a manifest is at most 64 deep).
MAX_DEPTH = 64
# Arguments that do not parse cannot be masked value by value, so they are hidden whole.
HIDDEN = f"{MASK} (arguments that are not a JSON object, for a tool with sensitive inputs)"
# A secret shorter than this is not searched for in free text: it would mask ordinary words.
MIN_REDACTED = 4


def is_sensitive(schema: ReadOnlyJson) -> bool:
    return isinstance(schema, Mapping) and schema.get(MARKER) is True


def sensitive_pointers(schema: ReadOnlyJson, at: str = "") -> Iterator[str]:
    """JSON pointers (into the schema) of every property marked sensitive, nested ones too."""
    yield from _pointers(schema, at, 0)


def _pointers(schema: ReadOnlyJson, at: str, depth: int) -> Iterator[str]:
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return
    if is_sensitive(schema):
        yield at
        return
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, sub in properties.items():
            yield from _pointers(sub, f"{at}/properties/{_escape(str(name))}", depth + 1)
    yield from _pointers(schema.get("items"), f"{at}/items", depth + 1)


def has_sensitive(schema: ReadOnlyJson) -> bool:
    return next(sensitive_pointers(schema), None) is not None


def mask(value: JsonValue, schema: ReadOnlyJson) -> JsonValue:
    """value with every sensitive value in it replaced by MASK (a new structure)."""
    return _mask(value, schema, 0)


def _mask(value: JsonValue, schema: ReadOnlyJson, depth: int) -> JsonValue:
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return value
    if is_sensitive(schema):
        return MASK
    properties = schema.get("properties")
    if isinstance(value, Mapping) and isinstance(properties, Mapping):
        return {key: _mask(item, properties.get(key), depth + 1) for key, item in value.items()}
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        return [_mask(item, items, depth + 1) for item in value]
    return value


def secrets(value: ReadOnlyJson, schema: ReadOnlyJson) -> list[str]:
    """The sensitive values in value, as text, longest first: what a redaction looks for."""
    found: list[str] = []
    _collect(value, schema, 0, found)
    return sorted({s for s in found if len(s) >= MIN_REDACTED}, key=len, reverse=True)


def _collect(value: ReadOnlyJson, schema: ReadOnlyJson, depth: int, found: list[str]) -> None:
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return
    if is_sensitive(schema):
        if isinstance(value, str):
            found.append(value)
        elif value is not None:
            found.append(json.dumps(value, ensure_ascii=False))
        return
    properties = schema.get("properties")
    if isinstance(value, Mapping) and isinstance(properties, Mapping):
        for key, item in value.items():
            _collect(item, properties.get(key), depth + 1, found)
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        for item in value:
            _collect(item, items, depth + 1, found)


def mask_arguments(arguments: str, schema: ReadOnlyJson) -> str:
    """A call's JSON arguments as they may be shown: each sensitive value masked. Text is
    returned unchanged when the tool has no sensitive input or none was sent, and hidden
    whole when it does not parse (its secrets cannot be told apart)."""
    if not has_sensitive(schema):
        return arguments
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):
        return HIDDEN
    if not isinstance(value, dict):
        return HIDDEN
    masked = mask(value, schema)
    return arguments if masked == value else json.dumps(masked, ensure_ascii=False)


def redact(text: str, values: list[str]) -> str:
    """text with every occurrence of each secret replaced by MASK: as it is, JSON-escaped
    (as it appears inside JSON text) and, for one of 8 characters or more, encoded or split
    (secret_search.py says which spellings)."""
    return Redaction(values, [text], MASK).apply(text) if values else text


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")
