"""Schema errors read as "found <value>; expected <what>", with a fix for the failing keyword."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from conformance.findings import shown
from conformance.schema_messages import explain, label
from conformance.schema_validation import schema_uri, validate

V2 = schema_uri("fengyu-manifest-v2.schema.json")
ERP = schema_uri("erp-tool.schema.json")


def errors_at(instance: Any, uri: str, at: str) -> list[tuple[str, str, str]]:
    return [(e.requirement, e.message, e.fix) for e in validate(instance, uri) if e.pointer == at]


def method_schema(schema: dict[str, Any]) -> dict[str, Any]:
    return {"rpc": {"methods": {"run": {"inputSchema": schema}}}}


def test_shown_cuts_long_values_and_says_how_long() -> None:
    assert shown("GRPC") == '"GRPC"'
    long = shown("x" * 500)
    assert long.startswith('"xxx') and long.endswith("... (502 characters)")
    assert len(long) < 230


def test_label_reads_pointers_as_property_paths() -> None:
    assert label("/aiTools/0/effect") == "aiTools[0].effect"
    assert label("/aiTools/0/inputSchema#/properties/a") == "aiTools[0].inputSchema.properties.a"
    assert label("", "the result") == "the result"


def test_const_shows_the_found_value_and_names_the_property() -> None:
    ((rid, message, fix),) = errors_at({"handlerType": "GRPC"}, ERP, "/handlerType")
    assert rid == "ERP-TOOL-004"
    assert message == '/handlerType: found "GRPC"; expected "REST" (const)'
    assert fix == 'set handlerType to "REST" (const)'


def test_an_array_input_schema_is_not_told_about_escaped_strings() -> None:
    ((_, message, fix),) = errors_at({"inputSchema": {"type": "array"}}, ERP, "/inputSchema/type")
    assert 'found "array"' in message
    assert fix == 'set inputSchema.type to "object" (const)'
    assert "escaped" not in fix


def test_a_string_schema_is_told_to_be_an_object() -> None:
    manifest = method_schema("{}")  # type: ignore[arg-type]
    ((_, message, fix),) = errors_at(manifest, V2, "/rpc/methods/run/inputSchema")
    assert 'found "{}"' in message and "expected an object, not a string (type)" in message
    assert "escaped JSON string" in fix


@pytest.mark.parametrize(
    ("keyword", "advice"), [("pattern", "description"), ("const", "enum"), ("$ref", "inline")]
)
def test_unsupported_keyword_fix_names_the_keyword_found(keyword: str, advice: str) -> None:
    manifest = method_schema({"type": "object", keyword: "x"})
    at = f"/rpc/methods/run/inputSchema/{keyword.replace('~', '~0')}"
    ((rid, message, fix),) = errors_at(manifest, V2, at)
    assert rid == "FY-MAN-011"
    assert f'found keyword "{keyword}"' in message
    assert f'remove the keyword "{keyword}"' in fix and advice in fix
    assert "oneOf" not in fix


@pytest.mark.parametrize(
    ("prop", "at", "told", "fix"),
    [
        (
            {"type": "integer", "format": "fengyu-file"},
            "/a/type",
            'found "integer"; expected "string" (const): a format marks a file',
            'to "string"',
        ),
        ({"format": "fengyu-directory"}, "/a", 'expected "type" beside "format"', 'add "type"'),
        (
            {"type": "string", "x-fengyu-file-access": "read"},
            "/a",
            'expected "format" beside "x-fengyu-file-access"',
            'or remove "x-fengyu-file-access"',
        ),
        (
            {"type": "string", "format": "fengyu-file", "x-fengyu-file-access": "read-write"},
            "/a/x-fengyu-file-access",
            "a fengyu-file is only ever read",
            'to "read"',
        ),
    ],
)
def test_file_marker_errors_say_which_rule(prop: Any, at: str, told: str, fix: str) -> None:
    """The marker's rules are conditional: each message says what the condition was."""
    manifest = method_schema({"type": "object", "properties": {"a": prop}})
    base = "/rpc/methods/run/inputSchema/properties"
    ((rid, message, found_fix),) = errors_at(manifest, V2, base + at)
    assert rid == "FY-MAN-011"
    assert told in message and fix in found_fix


def test_required_additional_enum_pattern_and_bounds() -> None:
    found = {
        e.pointer: (e.message, e.fix)
        for e in validate(
            {
                "license": "MIT",
                "id": "x",
                "permissions": ["files.delete"],
                "backend": {"callTimeoutSeconds": 0},
            },
            V2,
        )
    }
    assert found["/author"] == (
        '/: found no property "author"; expected it (required)',
        'add the required property "author" to the manifest (required)',
    )
    assert 'found unknown property "license"' in found["/license"][0]
    assert found["/license"][1].startswith('remove "license"')
    assert 'found "files.delete"' in found["/permissions/0"][0]
    assert "set permissions[0] to one of" in found["/permissions/0"][1]
    assert found["/id"][1].startswith("change id to match")
    assert found["/backend/callTimeoutSeconds"] == (
        "/backend/callTimeoutSeconds: found 0; expected at least 1 (minimum)",
        "make backend.callTimeoutSeconds at least 1 (minimum)",
    )


@pytest.mark.parametrize(
    ("schema", "instance", "found", "fix"),
    [
        ({"minLength": 2}, "a", 'found "a"; expected at least 2', "at least 2 character"),
        ({"maxLength": 1}, "ab", 'found "ab"; expected at most 1', "shorten"),
        ({"minItems": 1}, [], "found []; expected at least 1 item", "(minItems)"),
        ({"uniqueItems": True}, [1, 1], "found [1, 1]; expected no repeated", "(uniqueItems)"),
        ({"required": ["success"]}, {}, 'expected the properties "success"', 'add "success"'),
        ({"type": "integer"}, 2.5, "found 2.5; expected an integer, not a number", "integer"),
    ],
)
def test_keywords_outside_the_shipped_schemas(
    schema: dict[str, Any], instance: Any, found: str, fix: str
) -> None:
    (error,) = Draft202012Validator(schema).iter_errors(instance)
    told = explain(error, "", "the result")
    assert found in told.message
    assert fix in told.fix and "the result" in told.fix


def test_alternatives_say_what_each_expected() -> None:
    error = next(
        Draft202012Validator(Draft202012Validator.META_SCHEMA).iter_errors(
            {"properties": {"n": {"type": "integr"}}}
        )
    )
    told = explain(error, "/inputSchema/properties/n/type")
    assert 'found "integr"; expected one of "array"' in told.message
    assert told.message.endswith("or an array, not a string (anyOf)")
    assert told.fix.startswith('set inputSchema.properties.n.type to one of "array"')
