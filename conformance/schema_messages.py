"""jsonschema errors told as "found <value>; expected <what>" with a fix for the keyword.

jsonschema's own messages ("'REST' was expected", "'x' is not of type 'object'") leave out
either the value found or where it is, and one requirement hint cannot fit every keyword
that can fail; so each error is explained from its validator keyword and the property at
fault, and the fix names that property.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from jsonschema.exceptions import SchemaError, ValidationError

from conformance.findings import shown
from conformance.sources import pointer_tokens

SHOWN_CHOICES = 12
# A schema node's own word on why its keyword holds (the kit's schemas set it where the rule
# is conditional, so "expected string" can say it is because of a format).
BECAUSE = "x-because"

# A bad instance (ValidationError) and a bad schema (SchemaError) carry the same fields.
JsonSchemaError: TypeAlias = ValidationError | SchemaError

# What to use instead of a JSON Schema keyword outside the FengYu subset (FY-MAN-011).
SUBSET_ADVICE = {
    "$ref": "inline the referenced schema",
    "$defs": "inline the definitions where they are used",
    "definitions": "inline the definitions where they are used",
    "oneOf": "use enum for a choice of values, or one object with optional properties",
    "anyOf": "use enum for a choice of values, or one object with optional properties",
    "allOf": "merge the schemas into one",
    "not": "say what is excluded in the description",
    "const": "use enum with one value",
    "pattern": "say the format in the description and check it in the worker",
    "examples": "put examples in the description",
}


@dataclass(frozen=True)
class Explained:
    """One error as a message (with the found value) and a fix naming the property."""

    message: str
    fix: str


def label(at: str, root: str = "the document") -> str:
    """A pointer as a dotted property path for prose: /aiTools/0/effect -> aiTools[0].effect.

    Pointers into a v1 schema string (`outer#inner`) are joined into one path.
    """
    text = ""
    for part in at.split("#"):
        for token in pointer_tokens(part):
            text += f"[{token}]" if token.isdigit() else (f".{token}" if text else token)
    return text or root


def choices(values: list[Any]) -> str:
    more = f", ... ({len(values) - SHOWN_CHOICES} more)" if len(values) > SHOWN_CHOICES else ""
    return ", ".join(shown(v, 60) for v in values[:SHOWN_CHOICES]) + more


def explain(error: JsonSchemaError, at: str, root: str = "the document") -> Explained:
    """The error at pointer at, told by its keyword; unknown keywords keep jsonschema's text.

    root names the validated value itself in the fix (the document, the result).
    """
    keyword = str(error.validator)
    explainer = _EXPLAINERS.get(keyword)
    if explainer is None:
        return Explained(
            f"{at or '/'}: found {shown(error.instance)}; expected: {error.message}",
            f"change {label(at, root)} so that it meets the schema's {keyword!r}",
        )
    expected, fix = explainer(error, label(at, root))
    because = error.schema.get(BECAUSE) if isinstance(error.schema, dict) else None
    reason = f": {because}" if isinstance(because, str) else ""
    return Explained(
        f"{at or '/'}: found {shown(error.instance)}; expected {expected} ({keyword}){reason}",
        f"{fix} ({keyword})",
    )


def missing(at: str, name: str, root: str = "the document") -> Explained:
    """A required property that is absent (at is the pointer it would have)."""
    holder = at.rsplit("/", 1)[0]
    return Explained(
        f"{holder or '/'}: found no property {shown(name)}; expected it (required)",
        f"add the required property {shown(name)} to {label(holder, root)} (required)",
    )


def unknown(at: str, name: str, known: list[str], root: str = "the document") -> Explained:
    """A property additionalProperties false does not allow (at is its pointer)."""
    holder = at.rsplit("/", 1)[0]
    expected = f"only {choices(sorted(known))}" if known else "no properties"
    return Explained(
        f"{holder or '/'}: found unknown property {shown(name)}; expected {expected} "
        "(additionalProperties false)",
        f"remove {shown(name)} from {label(holder, root)}, or correct its spelling "
        "(additionalProperties)",
    )


def bad_name(at: str, name: str, error: JsonSchemaError, subset: bool) -> Explained:
    """A property name propertyNames refuses; in a method schema (subset) it is a keyword."""
    holder = at.rsplit("/", 1)[0]
    rule = f"propertyNames {error.validator} {shown(error.validator_value)}"
    if subset:
        advice = SUBSET_ADVICE.get(name, "use only the keywords of the subset")
        return Explained(
            f"{holder or '/'}: found keyword {shown(name)}; expected only the supported "
            f"keywords ({rule})",
            f"remove the keyword {shown(name)} from {label(holder)}: {advice}",
        )
    return Explained(
        f"{holder or '/'}: found property name {shown(name)}; expected a name matching the {rule}",
        f"rename {shown(name)} in {label(holder)} to match {shown(error.validator_value)} "
        "(propertyNames)",
    )


def _const(e: JsonSchemaError, where: str) -> tuple[str, str]:
    return shown(e.validator_value), f"set {where} to {shown(e.validator_value)}"


def _enum(e: JsonSchemaError, where: str) -> tuple[str, str]:
    options = choices(list(keyword_value(e)))
    return f"one of {options}", f"set {where} to one of {options}"


def _type(e: JsonSchemaError, where: str) -> tuple[str, str]:
    wanted = e.validator_value
    kinds = " or ".join(wanted) if isinstance(wanted, list) else str(wanted)
    found = _a(_json_type(e.instance))
    advice = f"make {where} a JSON {kinds}, not {found}"
    if found == "a string" and "object" in kinds:
        advice += ": write the object itself, not an escaped JSON string"
    return f"{_a(kinds)}, not {found}", advice


def _required(e: JsonSchemaError, where: str) -> tuple[str, str]:
    """A required error outside a holder the caller can see into (a result, a schema)."""
    present = e.instance if isinstance(e.instance, dict) else {}
    names = choices([n for n in keyword_value(e) if n not in present])
    return f"the properties {names}", f"add {names} to {where}"


def _additional(e: JsonSchemaError, where: str) -> tuple[str, str]:
    declared = e.schema.get("properties", {}) if isinstance(e.schema, dict) else {}
    present = e.instance if isinstance(e.instance, dict) else {}
    extra = choices([k for k in present if k not in declared])
    return f"no properties beyond {choices(sorted(declared))}", f"remove {extra} from {where}"


def _alternatives(e: JsonSchemaError, where: str) -> tuple[str, str]:
    """anyOf / oneOf: what each alternative expected; the fix of the first one."""
    told = [
        _EXPLAINERS[str(sub.validator)](sub, where)
        for sub in e.context or ()
        if not sub.relative_path and str(sub.validator) in _EXPLAINERS
    ]
    if not told:
        return f"a value valid under {e.validator}", f"change {where} to fit one alternative"
    return " or ".join(expected for expected, _ in told), told[0][1]


def _depends(e: JsonSchemaError, where: str) -> tuple[str, str]:
    """dependentRequired: the property that must stand beside the one present."""
    present = e.instance if isinstance(e.instance, dict) else {}
    pairs = [
        (name, needed)
        for name, needs in dict(keyword_value(e)).items()
        if name in present
        for needed in needs
        if needed not in present and repr(needed) in e.message and repr(name) in e.message
    ]
    if not pairs:
        return "the properties it depends on", f"add the missing properties to {where}"
    name, needed = pairs[0]
    return (
        f"{shown(needed)} beside {shown(name)}",
        f"add {shown(needed)} to {where}, or remove {shown(name)}",
    )


def _pattern(e: JsonSchemaError, where: str) -> tuple[str, str]:
    pattern = shown(e.validator_value)
    return f"a string matching {pattern}", f"change {where} to match {pattern}"


def _count(limit: str, unit: str, fix: str) -> Callable[[JsonSchemaError, str], tuple[str, str]]:
    """An explainer for a length or item-count bound; fix is a template of where and n."""

    def explainer(e: JsonSchemaError, where: str) -> tuple[str, str]:
        n = e.validator_value
        expected = f"{limit} {n} {unit}, not {_length(e.instance)}"
        return expected, fix.format(where=where, n=n)

    return explainer


def _unique(e: JsonSchemaError, where: str) -> tuple[str, str]:
    return "no repeated items", f"remove the repeated entries of {where}"


def _bound(advice: str) -> Callable[[JsonSchemaError, str], tuple[str, str]]:
    def explainer(e: JsonSchemaError, where: str) -> tuple[str, str]:
        bound = shown(e.validator_value)
        return f"{advice} {bound}", f"make {where} {advice} {bound}"

    return explainer


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def keyword_value(error: JsonSchemaError) -> Any:
    """The failing keyword's value: jsonschema sets it on every error it yields, though its
    stubs allow the unset default."""
    value: Any = error.validator_value
    return value


def instance_of(error: JsonSchemaError) -> Any:
    """The value that failed; set on every error jsonschema yields, like keyword_value."""
    value: Any = error.instance
    return value


def _json_type(value: Any) -> str:
    for kind, types in (
        ("null", type(None)),
        ("boolean", bool),
        ("integer", int),
        ("number", float),
        ("string", str),
        ("array", list),
        ("object", dict),
    ):
        if isinstance(value, types):
            return kind
    return type(value).__name__


def _length(value: Any) -> int:
    return len(value) if isinstance(value, str | list | dict) else 0


_EXPLAINERS: dict[str, Callable[[JsonSchemaError, str], tuple[str, str]]] = {
    "const": _const,
    "enum": _enum,
    "type": _type,
    "pattern": _pattern,
    "minLength": _count("at least", "character(s)", "make {where} at least {n} character(s) long"),
    "maxLength": _count("at most", "character(s)", "shorten {where} to at most {n} character(s)"),
    "minItems": _count("at least", "item(s)", "give {where} at least {n} item(s)"),
    "maxItems": _count("at most", "item(s)", "give {where} at most {n} item(s)"),
    "uniqueItems": _unique,
    "required": _required,
    "dependentRequired": _depends,
    "additionalProperties": _additional,
    "anyOf": _alternatives,
    "oneOf": _alternatives,
    "minimum": _bound("at least"),
    "maximum": _bound("at most"),
    "exclusiveMinimum": _bound("greater than"),
    "exclusiveMaximum": _bound("less than"),
}
