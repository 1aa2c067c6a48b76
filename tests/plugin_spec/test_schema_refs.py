"""Refs resolve inside the schema only (plugin_spec.schema_refs): which refs are external, and
the registry that refuses to retrieve them."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing.exceptions import Unresolvable

from plugin_spec.schema_refs import DOCUMENT_ONLY, ExternalRef, external_refs

EXTERNAL: list[tuple[dict[str, Any], list[tuple[str, str]]]] = [
    (
        {"properties": {"a": {"$ref": "file:///etc/passwd"}}},
        [("/properties/a/$ref", "file:///etc/passwd")],
    ),
    ({"properties": {"a": {"$ref": "/etc/passwd"}}}, [("/properties/a/$ref", "/etc/passwd")]),
    # An absolute path against a file: base is a file: URL again.
    ({"$id": "file:///", "items": {"$ref": "/etc/passwd"}}, [("/items/$ref", "/etc/passwd")]),
    ({"$id": "http://127.0.0.1:9/a/", "items": {"$ref": "b.json"}}, [("/items/$ref", "b.json")]),
    (
        {"anyOf": [{"$ref": "http://127.0.0.1:9/x.json#/s"}]},
        [("/anyOf/0/$ref", "http://127.0.0.1:9/x.json#/s")],
    ),
    ({"properties": {"a/b": {"$ref": "x.json"}}}, [("/properties/a~1b/$ref", "x.json")]),
    # The meta-schema too: jsonschema would take its bundled copy, but it is not in the schema.
    (
        {"$defs": {"m": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}},
        [("/$defs/m/$ref", "https://json-schema.org/draft/2020-12/schema")],
    ),
    (
        {"$defs": {"m": {"$dynamicAnchor": "m"}}, "not": {"$dynamicRef": "http://x.invalid/#m"}},
        [("/not/$dynamicRef", "http://x.invalid/#m")],
    ),
]

INSIDE: list[dict[str, Any]] = [
    {"properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": "string"}}},
    {"$anchor": "top", "properties": {"a": {"$ref": "#top"}}},
    {"properties": {"a": {"$ref": "#"}}},
    # A subschema named with $id is inside the document, whatever its URI looks like.
    {
        "$defs": {"s": {"$id": "http://127.0.0.1:9/x.json", "type": "string"}},
        "properties": {"a": {"$ref": "http://127.0.0.1:9/x.json"}},
    },
    {
        "$id": "file:///etc/passwd",
        "properties": {"a": {"$ref": "file:///etc/passwd#/$defs/s"}},
        "$defs": {"s": {}},
    },
    {"$defs": {"m": {"$dynamicAnchor": "m"}}, "not": {"$dynamicRef": "#m"}},
    # Data, not refs: enum values and defaults are never resolved.
    {"properties": {"a": {"enum": [{"$ref": "file:///etc/passwd"}], "default": {"$ref": "x"}}}},
    # In the document but pointing at nothing: no retrieval asked for, the validator's finding.
    {"properties": {"a": {"$ref": "#/$defs/missing"}}},
]


@pytest.mark.parametrize(("schema", "expected"), EXTERNAL, ids=range(len(EXTERNAL)))
def test_refs_outside_the_schema_are_found_with_their_pointer(
    schema: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert [(ref.pointer, ref.ref) for ref in external_refs(schema)] == expected


@pytest.mark.parametrize("schema", INSIDE, ids=range(len(INSIDE)))
def test_refs_inside_the_schema_are_not_external(schema: dict[str, Any]) -> None:
    assert external_refs(schema) == []


def test_the_description_names_the_place_and_the_ref() -> None:
    ref = ExternalRef("/properties/a/$ref", "$ref", "file:///etc/passwd")
    told = ref.describe("/rpc/methods/m/inputSchema")
    assert told.startswith(
        "/rpc/methods/m/inputSchema/properties/a/$ref: $ref 'file:///etc/passwd'"
    )
    assert "inside the schema only" in told


def test_a_validator_on_the_registry_refuses_what_the_schema_does_not_hold() -> None:
    validator = Draft202012Validator(
        {"properties": {"a": {"$ref": "file:///etc/passwd"}}}, registry=DOCUMENT_ONLY
    )
    with pytest.raises(Unresolvable):
        validator.is_valid({"a": 1})


def test_a_validator_on_the_registry_resolves_subschemas_named_by_id() -> None:
    validator = Draft202012Validator(INSIDE[3], registry=DOCUMENT_ONLY)
    assert validator.is_valid({"a": "x"}) and not validator.is_valid({"a": 1})
