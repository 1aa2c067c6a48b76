"""The kit's schema-level verdict on a manifest equals that of FengYu's published schema.

FengYu's schema @b2534282 (tests/data, test data only) is run with jsonschema's Draft 7, its
patterns read as ECMA-262 reads them (Ajv, FengYu's validator: `$` ends the text, `\\d` is
ASCII). The kit's side is its own schema, the one its manifest suite validates with. Both
judge FengYu's corpus, manifests generated from FengYu's schema (hypothesis-jsonschema, on the
parts it handles fast) and single mutations of valid manifests.

Where the verdicts differ, every error of the side that refuses must be one of the kit's
documented departures (KIT_ACCEPTS, KIT_REFUSES; docs/spec/fengyu-manifest.md, section
"Where the kit departs from FengYu's schema").
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from jsonschema import Draft7Validator, ValidationError, validators
from jsonschema.protocols import Validator

from conformance.schema_validation import SchemaError, ecma_regex, schema_uri, validate
from tests.conftest import TESTS

CORPUS = TESTS / "data" / "fengyu_realworld"
FENGYU_SCHEMA = CORPUS / "toolchain" / "spec" / "manifest.schema@b2534282.json"
KIT_SCHEMA = schema_uri("fengyu-manifest-v2.schema.json")
TEMPLATE = CORPUS / "toolchain/cli/templates/react-python/manifest.base@b2534282.json.tpl"
SUBSET_KEYWORDS = {
    "type", "title", "description", "properties", "items", "required", "enum", "nullable",
    "minimum", "maximum", "default", "format", "additionalProperties",
}  # fmt: skip
PROPERTIES = settings(
    max_examples=120,
    deadline=None,
    database=None,
    derandomize=bool(os.environ.get("CI")),
    suppress_health_check=list(HealthCheck),
)


@cache
def _ecma(pattern: str) -> re.Pattern[str]:
    return re.compile(ecma_regex(pattern).pattern, re.ASCII)


def _pattern(v: Validator, pattern: str, instance: Any, _: Any) -> Iterator[ValidationError]:
    if v.is_type(instance, "string") and not _ecma(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    v: Validator, patterns: dict[str, Any], instance: Any, _: Any
) -> Iterator[ValidationError]:
    if not v.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _ecma(pattern).search(key):
                yield from v.descend(value, subschema, path=key, schema_path=pattern)


def _additional(
    v: Validator, allowed: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not v.is_type(instance, "object"):
        return
    patterns = [_ecma(p) for p in schema.get("patternProperties", {})]
    extras = [
        k
        for k in instance
        if k not in schema.get("properties", {}) and not any(p.search(k) for p in patterns)
    ]
    if allowed is False and extras:
        yield ValidationError(f"Additional properties are not allowed ({extras!r})")
    elif isinstance(allowed, dict):
        for key in extras:
            yield from v.descend(instance[key], allowed, path=key)


# Draft 7 with ECMA-262 patterns, as Ajv runs FengYu's schema.
FengYuValidator = validators.extend(  # type: ignore[no-untyped-call]
    Draft7Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional,
    },
)


@cache
def fengyu_validator() -> Validator:
    validator: Validator = FengYuValidator(json.loads(FENGYU_SCHEMA.read_text("utf-8")))
    return validator


def fengyu_errors(manifest: Any) -> list[ValidationError]:
    return list(fengyu_validator().iter_errors(manifest))


def kit_errors(manifest: Any) -> list[SchemaError]:
    return validate(manifest, KIT_SCHEMA)


# ---- the documented decisions: each names which side refuses and recognises its errors ----


def _protocol_one(error: ValidationError) -> bool:
    """protocolVersion 1: the newest host constants accept it, FengYu's schema says const 4."""
    return list(error.absolute_path) == ["backend", "protocolVersion"] and error.instance == 1


def _extras(error: ValidationError) -> set[str]:
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return set()
    declared = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
    return {k for k in error.instance if k not in declared}


def _any_hint_or_nested_additional(error: ValidationError) -> bool:
    """A nested schema with an x-fengyu-* hint FengYu does not list, or with a boolean
    additionalProperties: the kit accepts both, FengYu's subset does not."""
    extras = _extras(error)
    in_subset = "jsonSchemaSubset" in json.dumps(list(error.schema_path)) or (
        isinstance(error.schema, dict)
        and "x-fengyu-sensitive" in error.schema.get("properties", {})
    )
    return (
        in_subset
        and bool(extras)
        and all(k.startswith("x-fengyu-") or k == "additionalProperties" for k in extras)
    )


def _top_level_keyword(error: ValidationError) -> bool:
    """A method's top-level schema using a subset keyword beyond type, description,
    properties, required and additionalProperties: the kit reads it as any nested schema."""
    path = list(error.absolute_path)
    extras = _extras(error)
    top = len(path) == 4 and path[:2] == ["rpc", "methods"]
    return (
        top
        and bool(extras)
        and all(k in SUBSET_KEYWORDS or k.startswith("x-fengyu-") for k in extras)
    )


KIT_ACCEPTS: dict[str, Callable[[ValidationError], bool]] = {
    "protocolVersion 1 is accepted": _protocol_one,
    "any x-fengyu-* hint, and additionalProperties at any depth": _any_hint_or_nested_additional,
    "subset keywords at the top of a method schema": _top_level_keyword,
}
# The kit refuses more than FengYu's schema only under these requirements: portable tool names
# (FY-MAN-006) and non-blank tool descriptions (FY-MAN-009).
KIT_REFUSES = {"FY-MAN-006", "FY-MAN-009"}


def differences(manifest: Any) -> list[str]:
    """What about the two verdicts is not a documented decision (empty: they agree)."""
    kit, fengyu = kit_errors(manifest), fengyu_errors(manifest)
    if bool(kit) == bool(fengyu):
        return []
    if kit:
        return [
            f"kit only: {e.requirement} {e.message}"
            for e in kit
            if e.requirement not in KIT_REFUSES
        ]
    return [
        f"FengYu only: {'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in fengyu
        if not any(decision(e) for decision in KIT_ACCEPTS.values())
    ]


# ---- the corpus ----


def _v2(path: Any) -> bool:
    data = json.loads(path.read_text("utf-8"))
    return isinstance(data, dict) and data.get("schemaVersion") == 2


V2_MANIFESTS = [p for p in sorted(CORPUS.rglob("*.json")) if p != FENGYU_SCHEMA and _v2(p)]


@pytest.mark.parametrize("path", V2_MANIFESTS, ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_verdicts_agree(path: Any) -> None:
    assert differences(json.loads(path.read_text("utf-8"))) == []


def test_corpus_has_both_verdicts() -> None:
    """Valid and invalid manifests both occur, so agreement is not agreement on one answer."""
    verdicts = {bool(fengyu_errors(json.loads(p.read_text("utf-8")))) for p in V2_MANIFESTS}
    assert verdicts == {True, False}


def test_schema_fixtures_are_judged_as_fengyu_judges_them() -> None:
    spec = CORPUS / "toolchain" / "spec"
    names = [
        *sorted((spec / "test-fixtures").glob("*.json")),
        spec / "fixtures/invalid-timeout@a6285051.json",
    ]
    for path in names:
        manifest = json.loads(path.read_text("utf-8"))
        assert bool(kit_errors(manifest)) == bool(fengyu_errors(manifest)), path.name


def test_scaffold_templates_agree_except_nothing() -> None:
    for template in sorted(CORPUS.glob("toolchain/cli/templates/*/*.tpl")):
        manifest = _filled(template.read_text("utf-8"))
        assert kit_errors(manifest) == [] and fengyu_errors(manifest) == [], template


def test_protocol_one_is_the_documented_difference() -> None:
    manifest = _filled(TEMPLATE.read_text("utf-8"))
    manifest["backend"]["protocolVersion"] = 1
    assert kit_errors(manifest) == []
    assert [_protocol_one(e) for e in fengyu_errors(manifest)] == [True]


def _filled(text: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        text.replace("{{pluginId}}", "com.example.demo").replace("{{pluginName}}", "Demo")
    )
    return data


# ---- generated manifests ----


def _inline(node: Any, definitions: dict[str, Any], stack: tuple[str, ...] = ()) -> Any:
    """FengYu's schema with its $refs written out; a recursive one, past its first level,
    becomes the empty object (hypothesis-jsonschema cannot follow recursion)."""
    if isinstance(node, dict):
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name in stack:
                return {"type": "object", "maxProperties": 0}
            return _inline(definitions[name], definitions, (*stack, name))
        return {k: _inline(v, definitions, stack) for k, v in node.items() if k != "definitions"}
    if isinstance(node, list):
        return [_inline(v, definitions, stack) for v in node]
    return node


@cache
def _fengyu_parts() -> dict[str, st.SearchStrategy[Any]]:
    """Strategies from FengYu's schema for the parts hypothesis-jsonschema draws fast."""
    schema = json.loads(FENGYU_SCHEMA.read_text("utf-8"))
    definitions = schema["definitions"]
    parts = {
        k: from_schema(_inline(schema["properties"][k], definitions))
        for k in ("backend", "engines", "permissions", "aiTools")
    }
    subset = _inline(definitions["jsonSchemaSubset"], definitions, ("jsonSchemaSubset",))
    parts["subset"] = from_schema(subset)
    return parts


@st.composite
def fengyu_manifests(draw: st.DrawFn) -> dict[str, Any]:
    """A manifest valid under FengYu's schema: the template's fields, then backend, engines,
    permissions and aiTools drawn from FengYu's schema, and one method whose properties are
    drawn from its schema subset (defaults, formats, file access, hints)."""
    parts = _fengyu_parts()
    manifest = _filled(TEMPLATE.read_text("utf-8"))
    for key in ("backend", "engines", "permissions", "aiTools"):
        if draw(st.booleans()):
            manifest[key] = draw(parts[key])
    names = st.from_regex(r"[a-z][a-zA-Z0-9_]{0,8}", fullmatch=True)
    properties = draw(st.dictionaries(names, parts["subset"], max_size=3))
    manifest["rpc"] = {
        "methods": {"run": {"inputSchema": {"type": "object", "properties": properties}}}
    }
    return manifest


@settings(PROPERTIES, max_examples=40)  # drawing from the subset costs ~60 ms a manifest
@given(fengyu_manifests())
def test_generated_manifests_agree(manifest: dict[str, Any]) -> None:
    assert fengyu_errors(manifest) == []
    assert differences(manifest) == []


# ---- single mutations of valid manifests ----

VALUES = st.sampled_from(
    [None, True, False, 0, 1, 4, 2, 64, 63, 8192, 8193, 600, 601, -1, 1.5, "", " ", "x",
     "read", "read-write", "write", "fengyu-file", "fengyu-directory", "date-time", "python",
     "node", "screen.capture", "shell.exec", ">=4.0.0 <5.0.0", "1.0.0", "1.0", "zh", "en_US",
     "string", "object", "array", "text", "switch", [], ["a"], {}, {"type": "string"}]
)  # fmt: skip
KEYS = st.sampled_from(
    ["format", "default", "x-fengyu-file-access", "x-fengyu-sensitive", "x-fengyu-hint",
     "additionalProperties", "title", "nullable", "enum", "pattern", "$ref", "idempotent",
     "runtime", "protocolVersion", "resources", "memoryMb", "maxProcesses", "fengyu",
     "flowNodes", "label", "widget", "legacy", "type", "timeoutSeconds"]
)  # fmt: skip


def _rich_manifest() -> dict[str, Any]:
    """A valid manifest with every part the mutations should reach."""
    manifest = _filled(TEMPLATE.read_text("utf-8"))
    manifest["backend"]["resources"] = {"memoryMb": 512, "maxProcesses": 4}
    manifest["permissions"] = ["files.read", "files.write", "screen.capture"]
    manifest["rpc"] = {
        "methods": {
            "split": {
                "description": "Split a workbook.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "source": {
                            "type": "string",
                            "format": "fengyu-file",
                            "x-fengyu-file-access": "read",
                        },
                        "out": {
                            "type": "string",
                            "format": "fengyu-directory",
                            "x-fengyu-file-access": "read-write",
                        },
                        "rows": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                        "token": {"type": "string", "x-fengyu-sensitive": True},
                        "tags": {
                            "type": "array",
                            "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                        },
                    },
                    "required": ["source"],
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {"written": {"type": "array", "items": {"type": "string"}}},
                },
                "timeoutSeconds": 60,
            }
        }
    }
    manifest["aiTools"] = [
        {
            "name": "demo_split",
            "description": "Split a workbook.",
            "method": "split",
            "effect": "write",
            "idempotent": True,
        }
    ]
    manifest["flowNodes"] = [
        {
            "tool": "demo_split",
            "inputs": [
                {"name": "source", "widget": "text"},
                {"name": "tags", "widget": "rows", "fields": [{"name": "name", "widget": "text"}]},
            ],
            "outputs": [{"name": "written"}],
        }
    ]
    manifest["i18n"] = {
        "zh": {
            "name": "演示",
            "aiTools": {"demo_split": {"name": "拆分"}},
            "flowNodes": {
                "demo_split": {"label": "拆分", "inputs": {"source": {"title": "工作簿"}}}
            },
        }
    }
    return manifest


SEEDS = [
    _rich_manifest(),
    *(
        json.loads(p.read_text("utf-8"))
        for p in V2_MANIFESTS
        if not fengyu_errors(json.loads(p.read_text("utf-8")))
    ),
]


def _containers(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(node, dict | list):
        yield path, node
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            yield from _containers(value, (*path, key))


@st.composite
def mutated_manifests(draw: st.DrawFn) -> dict[str, Any]:
    """A valid manifest with one change: a value replaced, a key added or a key removed."""
    manifest = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    _, node = draw(st.sampled_from(list(_containers(manifest))))
    if isinstance(node, list):
        if node:
            node[draw(st.integers(0, len(node) - 1))] = draw(VALUES)
        else:
            node.append(draw(VALUES))
    elif node and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(node)))
        if draw(st.booleans()):
            del node[key]
        else:
            node[key] = draw(VALUES)
    else:
        node[draw(KEYS)] = draw(VALUES)
    return manifest


@settings(PROPERTIES, max_examples=400)
@given(mutated_manifests())
def test_mutated_manifests_agree(manifest: dict[str, Any]) -> None:
    assert differences(manifest) == []
