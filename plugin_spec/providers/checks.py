"""The checks a rule file can name, each a small function over a tool's name and schema.

A check returns hits: where the rule applies, what was found there and, for a provider whose
SDK rewrites rather than rejects, what the rewrite changes (`apply` makes that change on the
judge's copy of the schema). Whether a hit rejects or rewrites is the rule's `outcome`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from plugin_spec.json_types import JsonObject, JsonValue
from plugin_spec.providers.rules import Rule
from plugin_spec.providers.schema_nodes import Node, escape, nodes


@dataclass(frozen=True)
class Hit:
    pointer: str  # in the input schema ("" for the name or the whole schema)
    found: str  # what is there, quoted: the value the report shows
    change: str = ""  # what the provider's rewrite does about it
    apply: Callable[[], None] | None = None


@dataclass
class Subject:
    """What a tool check looks at: the model-facing name, the schema, and its nodes (walked
    once, and again only after a rewrite changed the schema)."""

    name: str
    schema: JsonObject
    nodes: list[Node]

    @classmethod
    def of(cls, name: str, schema: JsonObject) -> Subject:
        return cls(name, schema, list(nodes(schema)))

    def rewalk(self) -> None:
        self.nodes = list(nodes(self.schema))


ToolCheck = Callable[[Rule, Subject], list[Hit]]
Tools = Sequence[tuple[str, JsonValue]]  # a request's tools: model-facing name and input schema
SetCheck = Callable[[Rule, Tools], list[Hit]]
TOOL_CHECKS: dict[str, ToolCheck] = {}
SET_CHECKS: dict[str, SetCheck] = {}


def tool_check(name: str) -> Callable[[ToolCheck], ToolCheck]:
    def register(fn: ToolCheck) -> ToolCheck:
        TOOL_CHECKS[name] = fn
        return fn

    return register


def set_check(name: str) -> Callable[[SetCheck], SetCheck]:
    def register(fn: SetCheck) -> SetCheck:
        SET_CHECKS[name] = fn
        return fn

    return register


def shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _moved(node: Node, keyword: str) -> Hit:
    """A keyword found at node; a rewriting rule takes it out of the node and says it in the
    node's description instead."""

    def apply() -> None:
        if keyword not in node.schema:
            return
        value = node.schema.pop(keyword)
        said = f"{{{keyword}: {_python(value)}}}"
        description = node.schema.get("description")
        node.schema["description"] = f"{description}\n\n{said}" if description else said

    found = f"{keyword}: {shown(node.schema[keyword])}"
    return Hit(
        f"{node.pointer}/{escape(keyword)}", found, f"{keyword} moved into the description", apply
    )


@tool_check("name")
def name_pattern(rule: Rule, subject: Subject) -> list[Hit]:
    pattern = rule.params["pattern"]
    name = subject.name
    return [] if re.fullmatch(pattern, name) else [Hit("", f"name {name!r} (not {pattern})")]


@tool_check("root-object")
def root_object(rule: Rule, subject: Subject) -> list[Hit]:
    declared = subject.schema.get("type")
    if isinstance(declared, str) and declared.lower() == "object":
        return []
    return [Hit("", f'type {shown(declared)} at the root (not "object")')]


@tool_check("keywords")
def keywords(rule: Rule, subject: Subject) -> list[Hit]:
    listed = rule.params["keywords"]
    return [
        _moved(node, keyword)
        for node in subject.nodes
        for keyword in listed
        if keyword in node.schema
    ]


@tool_check("keywords-kept")
def keywords_kept(rule: Rule, subject: Subject) -> list[Hit]:
    """Only the listed keywords stay (`format` only with a listed value, `minItems` only with a
    listed value); the provider refuses the others, or its SDK moves them all into the node's
    description in one `{key: value, ...}` block, written the way Python prints values."""
    keep = set(rule.params["keep"])
    formats, min_items = rule.params.get("formats"), rule.params.get("min_items")

    def unkept(node: JsonObject) -> list[str]:
        return [
            k
            for k in node
            if k not in keep
            or (k == "format" and formats is not None and node[k] not in formats)
            or (k == "minItems" and min_items is not None and node[k] not in min_items)
        ]

    def move(node: JsonObject, keys: list[str]) -> Callable[[], None]:
        def apply() -> None:
            moved = ", ".join(f"{k}: {_python(node.pop(k))}" for k in keys)
            description = node.get("description")
            node["description"] = f"{description}\n\n{{{moved}}}" if description else f"{{{moved}}}"

        return apply

    hits = []
    for n in subject.nodes:
        if keys := unkept(n.schema):
            found = ", ".join(f"{k}: {shown(n.schema[k])}" for k in keys)
            hits.append(Hit(n.pointer, found, "moved into the description", move(n.schema, keys)))
    return hits


def _python(value: object) -> str:
    """A value as the Anthropic SDK writes it into a description: Python's str()."""
    return str(value)


@tool_check("keyword-values")
def keyword_values(rule: Rule, subject: Subject) -> list[Hit]:
    """A keyword that may only hold the listed values (a format, a minItems)."""
    keyword, allowed = rule.params["keyword"], list(rule.params["allowed"])
    return [
        _moved(node, keyword)
        for node in subject.nodes
        if keyword in node.schema and node.schema[keyword] not in allowed
    ]


@tool_check("renames")
def renames(rule: Rule, subject: Subject) -> list[Hit]:
    old, new = rule.params["from"], rule.params["to"]

    def rename(node: JsonObject) -> Callable[[], None]:
        def apply() -> None:
            value, there = node.pop(old), node.get(new)
            branches = value if isinstance(value, list) else []  # a list: only those are hit
            node[new] = [*(there if isinstance(there, list) else []), *branches]

        return apply

    return [
        Hit(
            f"{n.pointer}/{escape(old)}",
            f"{old} ({len(branches)} branches)",
            f"{old} turned into {new}",
            rename(n.schema),
        )
        for n in subject.nodes
        if isinstance(branches := n.schema.get(old), list)
    ]


def _closer(node: JsonObject) -> Callable[[], None]:
    """The fix that closes the object schema node: additionalProperties false."""
    return lambda: node.__setitem__("additionalProperties", False)


@tool_check("objects-closed")
def objects_closed(rule: Rule, subject: Subject) -> list[Hit]:
    """An object that says nothing of additional properties gets additionalProperties false."""
    return [
        Hit(
            n.pointer,
            "an object without additionalProperties",
            "additionalProperties: false added",
            _closer(n.schema),
        )
        for n in subject.nodes
        if n.is_object and "additionalProperties" not in n.schema
    ]


@tool_check("objects-open")
def objects_open(rule: Rule, subject: Subject) -> list[Hit]:
    """An object that allows additional properties, which the provider cannot."""
    return [
        Hit(
            f"{n.pointer}/additionalProperties",
            f"additionalProperties: {shown(n.schema['additionalProperties'])}",
            "additionalProperties set to false",
            _closer(n.schema),
        )
        for n in subject.nodes
        if n.is_object and n.schema.get("additionalProperties", False) is not False
    ]


def nullable(schema: JsonObject) -> None:
    """Let schema admit null as well, the way strict-mode schemas spell an optional value.
    An untyped schema that holds object or array keywords gets that type named (a node keeps
    its own keywords, so checks that hold it still find them); any other untyped one becomes
    an anyOf of itself and null."""
    declared = schema.get("type")
    if declared is None:
        if any(k in schema for k in ("properties", "required", "additionalProperties")):
            declared = "object"
        elif any(k in schema for k in ("items", "prefixItems", "minItems", "maxItems")):
            declared = "array"
    if isinstance(declared, str):
        schema["type"] = [declared, "null"] if declared != "null" else declared
    elif isinstance(declared, list):
        if "null" not in declared:
            schema["type"] = [*declared, "null"]
    else:
        kept = ("description", "title")
        branch = {k: schema.pop(k) for k in list(schema) if k not in kept}
        schema["anyOf"] = [branch, {"type": "null"}]
        return
    enum = schema.get("enum")
    if isinstance(enum, list) and None not in enum:
        schema["enum"] = [*enum, None]


@tool_check("all-required")
def all_required(rule: Rule, subject: Subject) -> list[Hit]:
    """Every property listed in required; with `nullable`, an optional one may then be null."""
    with_null = rule.params.get("nullable", False)
    change = (
        "made required and nullable (null stands for omitted)" if with_null else ("made required")
    )

    def require(node: JsonObject, prop: str) -> Callable[[], None]:
        def apply() -> None:
            # Appended in place (the judge's own copy): a new list per property made an object
            # of n optional properties cost n * n / 2 copies.
            required = node.get("required")
            if not isinstance(required, list):
                required = node["required"] = []
            required.append(prop)
            properties = node["properties"]
            sub = properties[prop] if isinstance(properties, dict) else None
            if with_null and isinstance(sub, dict):
                nullable(sub)

        return apply

    hits = []
    for n in subject.nodes:
        properties = n.schema.get("properties")
        if not n.is_object or not isinstance(properties, dict):
            continue
        required = n.schema.get("required")
        listed = _names(required)
        hits += [
            Hit(
                f"{n.pointer}/properties/{escape(p)}",
                f"optional property {p!r}",
                change,
                require(n.schema, p),
            )
            for p in properties
            if p not in listed
        ]
    return hits


def _names(required: JsonValue) -> set[str]:
    """The names a `required` lists; anything else it may hold (untrusted input) counts not."""
    return {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()


@tool_check("max-depth")
def max_depth(rule: Rule, subject: Subject) -> list[Hit]:
    limit = rule.params["max"]
    deep = [n for n in subject.nodes if n.depth > limit and not n.in_defs]
    return (
        [Hit(deep[0].pointer, f"{max(n.depth for n in deep)} levels of nesting (at most {limit})")]
        if deep
        else []
    )


@tool_check("max-properties")
def max_properties(rule: Rule, subject: Subject) -> list[Hit]:
    limit = rule.params["max"]
    total = sum(len(p) for n in subject.nodes if isinstance(p := n.schema.get("properties"), dict))
    return [Hit("", f"{total} object properties in all (at most {limit})")] if total > limit else []


@tool_check("max-enum")
def max_enum(rule: Rule, subject: Subject) -> list[Hit]:
    limit = rule.params["max"]
    total = sum(len(e) for n in subject.nodes if isinstance(e := n.schema.get("enum"), list))
    return [Hit("", f"{total} enum values in all (at most {limit})")] if total > limit else []


@tool_check("max-string-total")
def max_string_total(rule: Rule, subject: Subject) -> list[Hit]:
    """Property names, enum values and const values together, in characters."""
    limit = rule.params["max"]
    total = 0
    for n in subject.nodes:
        if isinstance(props := n.schema.get("properties"), dict):
            total += sum(len(p) for p in props)
        if isinstance(values := n.schema.get("enum"), list):
            total += sum(len(v) for v in values if isinstance(v, str))
        if isinstance(const := n.schema.get("const"), str):
            total += len(const)
    if total > limit:
        return [
            Hit(
                "", f"{total} characters of property names, enum and const values (at most {limit})"
            )
        ]
    return []


@tool_check("typed-nodes")
def typed_nodes(rule: Rule, subject: Subject) -> list[Hit]:
    """Every node says its type, unless it has one of the keywords the rule lists."""
    branches = rule.params.get("unless", [])
    return [
        Hit(n.pointer, f"a schema without type: {shown(n.schema)}")
        for n in subject.nodes
        if "type" not in n.schema and not any(k in n.schema for k in branches)
    ]


@tool_check("type-arrays")
def type_arrays(rule: Rule, subject: Subject) -> list[Hit]:
    return [
        Hit(f"{n.pointer}/type", f"type {shown(n.schema['type'])}")
        for n in subject.nodes
        if isinstance(n.schema.get("type"), list)
    ]


@tool_check("ref-siblings")
def ref_siblings(rule: Rule, subject: Subject) -> list[Hit]:
    """Keywords beside a $ref other than the ones the rule keeps."""
    keep = {"$ref", *rule.params.get("keep", [])}

    def drop(node: JsonObject, keys: list[str]) -> Callable[[], None]:
        def apply() -> None:
            for key in keys:
                node.pop(key, None)

        return apply

    hits = []
    for n in subject.nodes:
        if "$ref" in n.schema and (beside := sorted(set(n.schema) - keep)):
            found = f"$ref beside {', '.join(f'{k}: {shown(n.schema[k])}' for k in beside)}"
            hits.append(
                Hit(n.pointer, found, f"{', '.join(beside)} dropped", drop(n.schema, beside))
            )
    return hits


@tool_check("unresolved-refs")
def unresolved_refs(rule: Rule, subject: Subject) -> list[Hit]:
    return [
        Hit(f"{n.pointer}/$ref", f"$ref {shown(n.schema['$ref'])} (nothing in the schema)")
        for n in subject.nodes
        if "$ref" in n.schema and not _resolves(subject.schema, n.schema["$ref"])
    ]


def _resolves(schema: JsonObject, ref: JsonValue) -> bool:
    if not isinstance(ref, str) or not ref.startswith("#"):
        return False
    target: JsonValue = schema
    for token in ref[1:].split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or token not in target:
            return False
        target = target[token]
    return isinstance(target, dict)


@tool_check("object-keywords-on-non-object")
def object_keywords(rule: Rule, subject: Subject) -> list[Hit]:
    return [
        Hit(f"{n.pointer}/{k}", f"{k} on a node of type {shown(n.schema['type'])}")
        for n in subject.nodes
        if n.types and "object" not in n.types
        for k in ("properties", "required")
        if k in n.schema
    ]


@set_check("tool-count")
def tool_count(rule: Rule, tools: Tools) -> list[Hit]:
    limit = rule.params["max"]
    return [Hit("", f"{len(tools)} tools (at most {limit})")] if len(tools) > limit else []


def _counted(rule: Rule, tools: Tools, what: str, count: Callable[[Node], int]) -> list[Hit]:
    """A limit on something counted over every schema of the request."""
    limit = rule.params["max"]
    per_tool = {
        name: n for name, schema in tools if (n := sum(count(node) for node in nodes(schema)))
    }
    total = sum(per_tool.values())
    if total <= limit:
        return []
    most = ", ".join(f"{name} {n}" for name, n in sorted(per_tool.items(), key=lambda i: -i[1])[:5])
    return [Hit("", f"{total} {what} in all (at most {limit}; most: {most})")]


@set_check("optional-count")
def optional_count(rule: Rule, tools: Tools) -> list[Hit]:
    def optional(node: Node) -> int:
        properties, required = node.schema.get("properties"), node.schema.get("required")
        if not isinstance(properties, dict):
            return 0
        listed = _names(required)
        return sum(1 for p in properties if p not in listed)

    return _counted(rule, tools, "optional parameters", optional)


@set_check("union-count")
def union_count(rule: Rule, tools: Tools) -> list[Hit]:
    def unions(node: Node) -> int:
        return int(isinstance(node.schema.get("type"), list) or "anyOf" in node.schema)

    return _counted(rule, tools, "parameters with union types (anyOf or a type list)", unions)
