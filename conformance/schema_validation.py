"""Validate JSON against the kit's shipped schemas and attribute each error to a requirement.

The schemas carry `x-requirement` annotations. An error belongs to the innermost annotated
schema node on its path (a missing property to the annotation of that property's schema), so
one validation pass serves many requirements and the editor-facing schema stays the single
source of truth.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from conformance.package_data import SCHEMAS
from conformance.schema_messages import (
    Explained,
    bad_name,
    explain,
    instance_of,
    keyword_value,
    missing,
    unknown,
)
from conformance.sources import pointer
from plugin_spec.schema_refs import DOCUMENT_ONLY

ANNOTATION = "x-requirement"
SCHEMA_BASE = "https://ai-plugin-conformance.invalid/schemas/"


SUBSET_REQUIREMENT = "FY-MAN-011"


@dataclass(frozen=True)
class SchemaError:
    """One error: whose it is, where, what was found against what was expected, and the fix."""

    requirement: str
    pointer: str
    message: str
    fix: str = ""

    @classmethod
    def of(cls, requirement: str, at: str, told: Explained) -> SchemaError:
        return cls(requirement, at, told.message, told.fix)


@cache
def _registry() -> Registry:
    resources_ = []
    for entry in SCHEMAS.iterdir():
        if entry.name.endswith(".schema.json"):
            contents = json.loads(entry.read_text("utf-8"))
            # Without $schema, a $ref into the file keeps the kit's validator class (jsonschema
            # would pick the plain 2020-12 one by $schema); the resource is 2020-12 all the same.
            contents.pop("$schema", None)
            resources_.append((contents["$id"], DRAFT202012.create_resource(contents)))
    return DOCUMENT_ONLY.with_resources(resources_)


def schema_uri(name: str) -> str:
    """The URI of a shipped schema file, optionally with a #fragment."""
    return SCHEMA_BASE + name


@cache
def ecma_regex(pattern: str) -> re.Pattern[str]:
    """pattern as JSON Schema reads it (ECMA-262): `$` is the end of the text. Python's `$`
    also matches before a final newline, so "name\\n" would pass `^[a-z]+$`; outside
    character classes and escapes, `$` is read as `\\Z`."""
    out, in_class, escaped = [], False, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "$" and not in_class:
            out.append("\\Z")
            continue
        out.append(char)
    return re.compile("".join(out))


def _pattern(
    validator: Validator, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not ecma_regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


# Draft 2020-12 with `pattern` (propertyNames too) evaluated as ECMA-262 regular expressions.
# (jsonschema's `extend` carries no type hints.)
KitValidator: type[Validator] = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator, {"pattern": _pattern}
)


@cache
def _validator(uri: str) -> Validator:
    validator: Validator = KitValidator({"$ref": uri}, registry=_registry())
    return validator


def validate(instance: Any, uri: str, at: str = "") -> list[SchemaError]:
    """All errors of instance against the schema at uri, with pointers prefixed by at."""
    return [
        error for raw in _validator(uri).iter_errors(instance) for error in _attribute(raw, uri, at)
    ]


def annotated_requirements(name: str) -> set[str]:
    """Every requirement id a shipped schema file attributes errors to."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get(ANNOTATION), str):
                found.add(node[ANNOTATION])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(_registry().contents(schema_uri(name)))
    return found


def _attribute(error: ValidationError, uri: str, at: str) -> Iterator[SchemaError]:
    path = list(error.absolute_schema_path)
    keyword = path[-1] if path else None
    nodes = _schema_nodes(path, {"$ref": uri})
    # Every shipped schema is annotated at each entry point, so the fallback never shows; an
    # error it did reach would belong to no requirement and be reported by none.
    requirement: str = next(
        (n[ANNOTATION] for n, _ in reversed(nodes) if isinstance(n, dict) and ANNOTATION in n), ""
    )
    where = at + pointer(*error.absolute_path)
    root = "the manifest" if "manifest" in uri else "the tool file"
    holder, resolver = nodes[-2] if len(nodes) >= 2 else ({}, None)
    if keyword == "required":
        for name in _missing(error):
            target = holder.get("properties", {}).get(name)
            if (
                isinstance(target, dict)
                and ANNOTATION not in target
                and "$ref" in target
                and resolver is not None
            ):
                target = resolver.lookup(target["$ref"]).contents
            owner = target.get(ANNOTATION) if isinstance(target, dict) else None
            at_name = where + pointer(name)
            yield SchemaError.of(owner or requirement, at_name, missing(at_name, name, root))
    elif keyword == "additionalProperties" and holder.get("additionalProperties") is False:
        known = list(holder.get("properties", {}))
        for extra in _additional(error.instance, holder):
            at_extra = where + pointer(extra)
            yield SchemaError.of(requirement, at_extra, unknown(at_extra, extra, known, root))
    elif "propertyNames" in path:
        at_name = where + pointer(instance_of(error))
        told = bad_name(at_name, instance_of(error), error, requirement == SUBSET_REQUIREMENT)
        yield SchemaError.of(requirement, at_name, told)
    else:
        yield SchemaError.of(requirement, where, explain(error, where, root))


def _schema_nodes(path: list[Any], root: dict[str, Any]) -> list[tuple[Any, Any]]:
    """Every schema node a schema path passes through, with the resolver for its resource.

    jsonschema leaves $ref out of its paths, so a key missing from a node means: follow its $ref.
    The second-to-last node is the one holding the failing keyword.
    """
    resolver = _registry().resolver()
    node: Any = root
    nodes = [(node, resolver)]
    for key in path:
        while isinstance(node, dict) and key not in node and "$ref" in node:
            resolved = resolver.lookup(node["$ref"])
            node, resolver = resolved.contents, resolved.resolver
            nodes.append((node, resolver))
        node = node[key]
        nodes.append((node, resolver))
    return nodes


def _missing(error: ValidationError) -> list[str]:
    instance = error.instance if isinstance(error.instance, dict) else {}
    return [
        name
        for name in keyword_value(error)
        if name not in instance and repr(name) in error.message
    ]


def _additional(instance: Any, holder: dict[str, Any]) -> list[str]:
    if not isinstance(instance, dict):
        return []
    declared = holder.get("properties", {})
    patterns = [ecma_regex(p) for p in holder.get("patternProperties", {})]
    return [k for k in instance if k not in declared and not any(p.search(k) for p in patterns)]
