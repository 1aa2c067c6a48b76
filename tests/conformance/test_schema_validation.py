"""Schema errors land on the requirement whose annotated schema node they come from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from conformance.catalog import load_catalog
from conformance.schema_validation import annotated_requirements, ecma_regex, schema_uri, validate
from tests.conftest import REPO

V2 = schema_uri("fengyu-manifest-v2.schema.json")
SCHEMAS = REPO / "conformance" / "schemas"


def sample() -> dict:
    return json.loads((REPO / "sample_plugins/fan.summer.markdown/manifest.json").read_text())


@pytest.mark.parametrize("path", sorted(SCHEMAS.glob("*.schema.json")), ids=lambda p: p.name)
def test_shipped_schemas_are_valid_2020_12(path: Path) -> None:
    Draft202012Validator.check_schema(json.loads(path.read_text()))


def test_annotations_name_catalog_requirements() -> None:
    for path in SCHEMAS.glob("*.schema.json"):
        assert annotated_requirements(path.name) <= set(load_catalog())


def test_sample_is_valid() -> None:
    assert validate(sample(), V2) == []


def attribute(mutate) -> list[tuple[str, str]]:
    manifest = sample()
    mutate(manifest)
    return [(e.requirement, e.pointer) for e in validate(manifest, V2)]


def test_missing_property_takes_the_requirement_of_its_schema() -> None:
    assert attribute(lambda m: m["aiTools"][0].pop("effect")) == [
        ("FY-MAN-005", "/aiTools/0/effect")
    ]
    assert attribute(lambda m: m.pop("author")) == [("FY-MAN-003", "/author")]


def test_unknown_property_points_at_the_key() -> None:
    assert attribute(lambda m: m["ui"].update(theme="dark")) == [("FY-MAN-003", "/ui/theme")]


def test_errors_inside_referenced_definitions_keep_their_annotation() -> None:
    def subset_violation(m: dict) -> None:
        m["rpc"]["methods"]["render"]["inputSchema"]["properties"]["markdown"]["format"] = "x"

    assert attribute(subset_violation) == [
        ("FY-MAN-011", "/rpc/methods/render/inputSchema/properties/markdown/format")
    ]
    assert attribute(lambda m: m["backend"].update(callTimeoutSeconds=601)) == [
        ("FY-MAN-013", "/backend/callTimeoutSeconds")
    ]


def test_a_string_schema_is_one_finding_not_two() -> None:
    def stringify(m: dict) -> None:
        method = m["rpc"]["methods"]["render"]
        method["inputSchema"] = json.dumps(method["inputSchema"])

    assert attribute(stringify) == [("FY-MAN-010", "/rpc/methods/render/inputSchema")]


def test_reserved_method_name() -> None:
    def reserve(m: dict) -> None:
        m["rpc"]["methods"]["$/fengyu/logging/setLevel"] = {"inputSchema": {"type": "object"}}

    assert attribute(reserve) == [("FY-MAN-012", "/rpc/methods/$~1fengyu~1logging~1setLevel")]


def test_prefix_is_prepended_for_embedded_schemas() -> None:
    errors = validate({"type": "array"}, V2 + "#/$defs/methodSchema", at="/aiTools/0/inputSchema#")
    assert [(e.requirement, e.pointer) for e in errors] == [
        ("FY-MAN-010", "/aiTools/0/inputSchema#/type")
    ]


def test_a_trailing_newline_does_not_pass_an_anchored_pattern() -> None:
    """JSON Schema patterns are ECMA-262: `$` ends the text. Python's `$` also matches
    before a final newline, which let "markdown_render\\n" pass FY-MAN-006 and a version
    "1.0.0\\n" pass FY-MAN-003."""

    def newline_name(m: dict) -> None:
        m["aiTools"][0]["name"] += "\n"

    assert attribute(newline_name) == [("FY-MAN-006", "/aiTools/0/name")]
    assert attribute(lambda m: m.update(version="1.0.0\n")) == [("FY-MAN-003", "/version")]


def test_ecma_regex_reads_only_a_bare_dollar_as_the_end() -> None:
    assert ecma_regex(r"^a$").pattern == r"^a\Z"
    assert ecma_regex(r"^\$[$]$").pattern == r"^\$[$]\Z"
    assert ecma_regex(r"^[a\]$]b$").search("$b")
