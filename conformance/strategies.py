"""Hypothesis strategies for tool inputs, built on hypothesis-jsonschema and checked by jsonschema.

hypothesis-jsonschema reads standard JSON Schema; the manifest subset also has `nullable`
(an OpenAPI keyword it ignores), so schemas are translated first. Every generated value is
validated again with jsonschema: a value the schema rejects means the generator does not
understand this schema, and the kit then says so instead of trusting it.

An optional property with a `default` is, in some inputs, left out and, in others, sent with
exactly its default: FengYu hands a worker the params as sent (neither SDK fills defaults in),
so a worker must cope with both (spec: fengyu-worker.md#tool-properties).

Refs resolve inside the schema only (plugin_spec.schema_refs): a schema with a ref to a file
or a URL is refused before hypothesis-jsonschema sees it, and every validator here refuses
to retrieve one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from hypothesis import Phase
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from conformance.generator_dialect import UntranslatableKeyword, for_generator
from conformance.input_hints import HintPath, description_seeds, property_hints
from conformance.simplest import NoSimpleInstance, simplest_instance
from plugin_spec.json_types import JsonObject, JsonValue
from plugin_spec.schema_refs import DOCUMENT_ONLY, ExternalRef, external_refs
from plugin_spec.schema_subset import to_json_schema

WRONG_TYPE_VALUES: dict[str, JsonValue] = {
    "string": 12345,
    "integer": "not a number",
    "number": "not a number",
    "boolean": "yes",
    "array": {"not": "an array"},
    "object": ["not", "an", "object"],
}


# The phases minimal() searches with: all but explain, which, after the search has found and
# shrunk an input, draws hundreds more to say which parts of it matter. minimal() wants the
# input only; on a schema with many optional properties (excel-mcp-server's format_range)
# explaining took 84 s of the 84.3 s.
MINIMAL_PHASES = tuple(p for p in Phase if p is not Phase.explain)


class GeneratorGap(Exception):
    """hypothesis-jsonschema cannot produce trustworthy values for this schema."""


class ExternalRefs(GeneratorGap):
    """The schema has refs to something outside it: no input is generated, since generating
    or validating one would open the files or URLs they name."""

    def __init__(self, refs: list[ExternalRef]) -> None:
        self.refs = refs
        super().__init__(self.located(""))

    def located(self, at: str) -> str:
        """What is refused, each ref's pointer prefixed by at (where the schema sits)."""
        return "; ".join(ref.describe(at) for ref in self.refs)


def closed_objects(schema: JsonObject) -> JsonObject:
    """schema with objects that do not say otherwise closed to undeclared properties.

    Models send the properties a tool declares; generating arbitrary extra keys would spend
    the example budget (and most of the time) on inputs no host produces. Values generated
    from the closed schema are still valid against the open one.
    """
    result = dict(schema)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        result["properties"] = {k: _closed(v) for k, v in properties.items()}
        result.setdefault("additionalProperties", False)
    if "items" in schema:
        result["items"] = _closed(schema["items"])
    return result


def _closed(schema: JsonValue) -> JsonValue:
    return closed_objects(schema) if isinstance(schema, dict) else schema


DefaultedPath = tuple[tuple[str, ...], JsonValue]
# What becomes of a defaulted property in one input; shrinking goes toward the first.
DEFAULT_CHOICES = ("omit", "default", "drawn")


def defaulted_properties(schema: JsonValue) -> list[DefaultedPath]:
    """(names leading to it through nested objects, default) of each optional property whose
    default its own schema admits; a required one is never left out, and an invalid default
    (FY-MAN's business) is never sent as if it were valid."""
    found: list[DefaultedPath] = []

    def walk(node: JsonValue, path: tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            return
        properties = node.get("properties")
        if not isinstance(properties, dict):
            return
        required = node.get("required")
        required = required if isinstance(required, list) else []
        for name, sub in properties.items():
            if not isinstance(sub, dict):
                continue
            if "default" in sub and name not in required and _admits(sub, sub["default"]):
                found.append(((*path, name), sub["default"]))
            walk(sub, (*path, name))

    walk(schema, ())
    return found


def _admits(schema: JsonObject, value: JsonValue) -> bool:
    try:
        return bool(Draft202012Validator(schema, registry=DOCUMENT_ONLY).is_valid(value))
    except Exception:  # a schema jsonschema cannot evaluate: its default is not trusted
        return False


def with_defaults(
    strategy: st.SearchStrategy[JsonValue], schema: JsonValue, validator: Validator
) -> st.SearchStrategy[JsonValue]:
    """strategy, with each defaulted optional property left out, set to its default or
    kept as drawn, chosen per input; a change the whole schema rejects (minProperties, say)
    is not made."""
    paths = defaulted_properties(schema)
    if not paths:
        return strategy
    choices = st.tuples(*(st.sampled_from(DEFAULT_CHOICES) for _ in paths))

    def apply(pair: tuple[JsonValue, tuple[str, ...]]) -> JsonValue:
        value, chosen = pair
        changed = apply_defaults(value, paths, chosen)
        return changed if validator.is_valid(changed) else value

    return st.tuples(strategy, choices).map(apply)


def apply_defaults(
    value: JsonValue, paths: list[DefaultedPath], chosen: tuple[str, ...]
) -> JsonValue:
    """A copy of value with each defaulted property omitted, defaulted or left as chosen."""
    value = copy.deepcopy(value)
    for (path, default), choice in zip(paths, chosen, strict=True):
        parent: JsonValue = value
        for name in path[:-1]:
            parent = parent.get(name) if isinstance(parent, dict) else None
        if not isinstance(parent, dict) or choice == "drawn":
            continue
        if choice == "omit":
            parent.pop(path[-1], None)
        else:
            parent[path[-1]] = copy.deepcopy(default)
    return value


# What becomes of a property with suggested values (input_hints.py) in one input; shrinking
# goes toward the first, so a search's first input is the one its tool's words suggest.
HINT_CHOICES = ("hint", "drawn")


def with_hints(
    strategy: st.SearchStrategy[JsonValue], hints: list[HintPath], validator: Validator
) -> st.SearchStrategy[JsonValue]:
    """strategy, with each property that has suggested values set to one of them or kept as
    drawn, chosen per input; a change the whole schema rejects is not made."""
    if not hints:
        return strategy
    choices = st.tuples(
        *(st.tuples(st.sampled_from(HINT_CHOICES), st.sampled_from(values)) for _, values in hints)
    )

    def apply(pair: tuple[JsonValue, tuple[tuple[str, JsonValue], ...]]) -> JsonValue:
        value, chosen = pair
        changed = copy.deepcopy(value)
        for (path, _), (choice, hint) in zip(hints, chosen, strict=True):
            parent: JsonValue = changed
            for name in path[:-1]:
                parent = parent.get(name) if isinstance(parent, dict) else None
            if choice == "hint" and isinstance(parent, dict):
                parent[path[-1]] = copy.deepcopy(hint)
        return changed if validator.is_valid(changed) else value

    return st.tuples(strategy, choices).map(apply)


@dataclass(frozen=True)
class InputSpace:
    """Valid and invalid inputs of one tool's inputSchema; seeds are whole valid inputs the
    user or the tool's description gave (minimal() is the first), dropped says which given
    inputs the schema refused."""

    schema: JsonObject
    validator: Validator
    strategy: st.SearchStrategy[JsonValue]
    seeds: tuple[JsonValue, ...] = ()
    dropped: tuple[str, ...] = ()
    # minimal()'s input, or the gap it raised, once found: every check of a tool asks again
    _minimal: list[JsonValue | GeneratorGap] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    @classmethod
    def of(cls, input_schema: object) -> InputSpace:
        if not isinstance(input_schema, dict):
            raise GeneratorGap("the tool has no inputSchema object")
        # Imported here: hypothesis-jsonschema builds strategies at import time, which pytest
        # flags as slow plugin start-up (HypothesisSideeffectWarning) for every kit run.
        from hypothesis_jsonschema import from_schema

        schema = to_json_schema(input_schema)
        try:
            dialect = validator_for(schema, default=Draft202012Validator)  # 2020-12 unless $schema
            dialect.check_schema(schema)
            external = external_refs(schema)
        except Exception as exc:
            raise GeneratorGap(f"hypothesis-jsonschema cannot handle the schema: {exc}") from None
        if external:
            raise ExternalRefs(external)
        try:
            generated = for_generator(schema)
        except UntranslatableKeyword as exc:
            raise GeneratorGap(str(exc)) from None
        try:
            validator = dialect(schema, registry=DOCUMENT_ONLY)
            strategy = with_defaults(from_schema(closed_objects(generated)), schema, validator)
        except Exception as exc:
            raise GeneratorGap(f"hypothesis-jsonschema cannot handle the schema: {exc}") from None
        return cls(schema, validator, strategy)

    def seeded(
        self, given: Sequence[JsonValue] = (), description: object = None, at: str = ""
    ) -> InputSpace:
        """This space searching from what the tool's words suggest first: given (argument
        objects of --examples-file, whose pointer is at), whole inputs its description spells
        as JSON, and each property's suggested values (input_hints.py). A given input the
        schema refuses is dropped, and said so in dropped."""
        seeds: list[JsonValue] = []
        dropped: list[str] = []
        for index, value in enumerate(given):
            error = next(iter(self.validator.iter_errors(value)), None)
            if error is None:
                seeds.append(copy.deepcopy(value))
            else:
                dropped.append(f"{at}/{index} does not match the inputSchema: {error.message}")
        seeds += description_seeds(description, self.validator.is_valid)
        skip = {path for path, _ in defaulted_properties(self.schema)}
        hints = property_hints(self.schema, _admits, skip)
        strategy = with_hints(self.strategy, hints, self.validator)
        if seeds:
            strategy = st.one_of(st.sampled_from(seeds).map(copy.deepcopy), strategy)
        return InputSpace(self.schema, self.validator, strategy, tuple(seeds), tuple(dropped))

    def draw_valid(self, draw: Callable[[st.SearchStrategy[JsonValue]], JsonValue]) -> JsonValue:
        """One generated input, re-validated; a rejected one raises GeneratorGap."""
        try:
            value = draw(self.strategy)
        except GeneratorGap:
            raise
        except Exception as exc:
            if type(exc).__module__.startswith("hypothesis.errors"):
                raise
            raise GeneratorGap(f"hypothesis-jsonschema failed to generate: {exc!r}") from None
        error = next(iter(self.validator.iter_errors(value)), None)
        if error is not None:
            raise GeneratorGap(
                f"hypothesis-jsonschema generated {value!r}, which the schema rejects "
                f"({error.message}); the kit does not trust it for this schema"
            )
        return value

    def minimal(self) -> JsonValue:
        """The simplest valid input, for single scripted calls: built from the schema when
        it is plain enough, otherwise found by hypothesis (which shrinks toward it). Worked
        out once per space; each caller gets a copy of its own. The first seed, if any: the
        user's example is the call most likely to succeed."""
        if self.seeds:
            return copy.deepcopy(self.seeds[0])
        if not self._minimal:
            try:
                self._minimal.append(self._find_minimal())
            except GeneratorGap as gap:
                self._minimal.append(gap)
        found = self._minimal[0]
        if isinstance(found, GeneratorGap):
            raise found.with_traceback(None)
        return copy.deepcopy(found)

    def _find_minimal(self) -> JsonValue:
        try:
            value = simplest_instance(self.schema)
        except NoSimpleInstance:
            pass
        else:
            if self.validator.is_valid(value):
                return value
        from hypothesis import find, settings

        try:
            return find(
                self.strategy,
                self.validator.is_valid,
                settings=settings(database=None, max_examples=200, phases=MINIMAL_PHASES),
            )
        except Exception as exc:
            raise GeneratorGap(f"no valid input could be generated: {exc}") from None

    def mutations(
        self, value: JsonValue, textual: Iterable[str] = ()
    ) -> list[tuple[str, JsonObject]]:
        """Ways to break a valid input: drop a required property, give one a wrong type, or
        give a string enum a value it does not list.

        textual names properties that travel as text (a URL's path or query), where a number
        in place of a string arrives as a perfectly good string: no break, so not offered.
        """
        textual = set(textual)
        if not isinstance(value, dict):
            return []
        found: list[tuple[str, JsonObject]] = []
        required = self.schema.get("required", [])
        for name in required if isinstance(required, list) else []:
            if isinstance(name, str) and name in value:
                broken = copy.deepcopy(value)
                del broken[name]
                found.append((f"required property {name!r} dropped", broken))
        properties = self.schema.get("properties") or {}
        for name, sub in properties.items() if isinstance(properties, dict) else ():
            kind = sub.get("type") if isinstance(sub, dict) else None
            choices = sub.get("enum") if isinstance(sub, dict) else None
            texts = [c for c in choices if isinstance(c, str)] if isinstance(choices, list) else []
            if isinstance(choices, list) and len(texts) == len(choices):
                # Outside the enum: a different text, so a break even where it travels as text.
                outside = "-".join(["not", *texts]) or "not-listed"
                found.append(
                    (
                        f"property {name!r} given {outside!r}, not one of its enum",
                        {**value, name: outside},
                    )
                )
            if kind == "string" and name in textual:
                continue
            if isinstance(kind, str) and kind in WRONG_TYPE_VALUES:
                broken = {**value, name: WRONG_TYPE_VALUES[kind]}
                found.append(
                    (
                        f"property {name!r} given a {type(broken[name]).__name__} "
                        f"instead of {kind}",
                        broken,
                    )
                )
        return [(why, v) for why, v in found if not self.validator.is_valid(v)]
