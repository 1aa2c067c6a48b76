"""What the providers' rewrites let the model send, tried against the real worker (spec:
providers.md#what-providers-send).

A provider's SDK or a strict host rewrites a tool's inputSchema before the model sees it, and
the model then sends what the rewritten schema admits: under OpenAI's strict mode a null for
every optional property it leaves out (FY-PROV-004), under Anthropic's a value that breaks a
constraint the SDK moved into the description (FY-PROV-005). Both are hypothesis properties
like FY-TOOL-001, run through the same ToolRun.

It also registers FY-PROV-001 to FY-PROV-003 (will the providers take the tools: the judging
is providers.py's), with a rejected tool's finding at its schema in the manifest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from hypothesis import assume, reject
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator

from conformance.checks.fengyu import FengYuContext, check
from conformance.checks.fengyu_tools import ToolRun
from conformance.checks.providers import provider_findings
from conformance.fengyu.harness import CallOutcome
from conformance.findings import Finding, NotApplicable
from conformance.properties import Counterexample, find_counterexample
from conformance.provider_view import Offered
from conformance.strategies import GeneratorGap, InputSpace
from plugin_spec.filerefs import by_id, resolve_refs
from plugin_spec.providers.judge import Judgement, Noted, judge_tool
from plugin_spec.providers.rules import load_provider
from plugin_spec.schema_refs import DOCUMENT_ONLY
from plugin_spec.schema_subset import to_json_schema

NULL_WHY = "OpenAI strict mode sends null for every parameter the model leaves out"
NULL_FIX = (
    "treat a null optional parameter as an omitted one (FY-PROV-004): drop it before "
    "validating when its own schema does not admit null (this project's fengyu_worker does "
    "it; FengYu's own Python SDK does not)"
)
# The Anthropic rewrites that let the model send what the inputSchema refuses.
WIDENING = frozenset({"ANTHROPIC-CONSTRAINTS", "ANTHROPIC-ONEOF", "ANTHROPIC-REF-SIBLINGS"})
# Keywords whose move binds nothing more loosely: annotations, `nullable` (without it the
# rewritten schema admits less, not more) and `format` (which the kit's validator, like the
# SDK's, does not assert, so no input breaks it in the kit's eyes).
NOT_BINDING = frozenset(
    {
        "nullable",
        "default",
        "examples",
        "example",
        "deprecated",
        "readOnly",
        "writeOnly",
        "format",
        "$comment",
        "$schema",
        "$id",
        "$anchor",
        "contentMediaType",
        "contentEncoding",
    }
)
MOVED_KEY = re.compile(r"(?:^|, )([$\w-]+): ")
JSON_TEXT = re.compile(r'"(?:[^"\\]|\\.)*"')  # a moved value's strings may hold ", k: "


@check("FY-PROV-004")
def null_taken_as_omitted(ctx: FengYuContext) -> Iterator[Finding]:
    run = ToolRun(ctx)
    assert run.tool.input_schema is not None  # ToolRun has an input space
    schema = run.tool.input_schema.data
    sent = judge_tool(load_provider("openai"), str(run.tool.name), schema).sent
    optional = _nullable_optionals(schema, sent)
    if not optional:
        raise NotApplicable("the tool has no optional parameter")
    grants = by_id(run.files.grants, run.workers.plugin_id)

    def attempt(data: st.DataObject) -> Counterexample | None:
        params = run.space.draw_valid(data.draw)
        if not isinstance(params, dict):
            reject()  # assume(False): a tool of no object input has no optional parameter
        chosen = data.draw(st.lists(st.sampled_from(optional), min_size=1, unique=True))
        left_out = {k: v for k, v in params.items() if k not in chosen}
        assume(run.space.validator.is_valid(left_out))
        omitted = resolve_refs(run.files.substitute(left_out, run.classes, data.draw), grants)
        without = run.send(omitted)
        if without.kind == "timeout":
            # No answer to compare with, and every further example would wait as long: the
            # search stops here, with no verdict (the hang is FY-TOOL-001's finding).
            raise GeneratorGap("the tool does not answer a valid input in time (FY-TOOL-001)")
        if without.failed_badly:
            return None  # a valid input that breaks the worker is FY-TOOL-001's finding
        nulled = {**run.files.fresh_outputs(omitted), **dict.fromkeys(chosen)}
        outcome = run.send(nulled)
        names = ", ".join(repr(name) for name in sorted(chosen))
        if broken := run.broken(outcome):
            return replace(
                broken,
                problem=f"{broken.problem}, given null for optional {names} ({NULL_WHY})",
                fix=f"{NULL_FIX}; and do not crash or hang on any input",
            )
        if without.succeeded and not outcome.succeeded:
            return Counterexample(
                f"answered null for optional {names} with {_answer(outcome)}, though the same "
                f"input without it succeeds ({NULL_WHY})",
                outcome,
                fix=NULL_FIX,
            )
        return None

    # Each example makes two calls: half the examples keep the check as cheap as FY-TOOL-001.
    settings = run.workers.settings
    cheap = replace(settings, examples=max(1, (settings.examples + 1) // 2))
    yield from run.finding(find_counterexample(attempt, cheap))


@check("FY-PROV-005")
def dropped_constraints_answered(ctx: FengYuContext) -> Iterator[Finding]:
    run = ToolRun(ctx)
    assert run.tool.input_schema is not None  # ToolRun has an input space
    schema = run.tool.input_schema.data
    judgement = judge_tool(load_provider("anthropic"), str(run.tool.name), schema)
    moved = _widening(judgement)
    if not moved:
        raise NotApplicable("Anthropic's rewrite drops no constraint of this tool")
    try:
        rewritten = InputSpace.of(judgement.sent)
    except GeneratorGap as exc:
        raise NotApplicable(f"Anthropic's rewritten schema: {exc}") from None
    nudges = _just_outside(schema, set(run.classes))
    dropped = "; ".join(n.line() for n in moved)
    fix = (
        f"check the constraints yourself before acting (FY-PROV-005; {dropped}) and answer "
        "-32602 or success false: Anthropic's SDK leaves them to the description, where they "
        "bind nothing; the Python SDK validates against the full inputSchema"
    )

    def attempt(data: st.DataObject) -> Counterexample | None:
        params = rewritten.draw_valid(data.draw)
        if isinstance(params, dict):
            near = [(k, v) for k, v in nudges if rewritten.validator.is_valid({**params, k: v})]
            if near and bool(data.draw(st.booleans())):
                name, value = data.draw(st.sampled_from(near))
                params = {**params, name: value}
        assume(_breaks(run.space.validator, params, set(run.classes)))
        outcome = run.call(run.files.substitute(params, run.classes, data.draw))
        if broken := run.broken(outcome):
            return replace(
                broken,
                problem=(
                    f"{broken.problem}, on an input the inputSchema refuses but Anthropic's "
                    f"rewritten schema admits ({dropped})"
                ),
                fix=fix if not broken.hang else f"{fix}; answer within the tool's timeout",
            )
        return None

    yield from run.finding(find_counterexample(attempt, run.workers.settings))


def _nullable_optionals(schema: Any, sent: dict[str, Any]) -> list[str]:
    """The optional top-level properties that strict mode made nullable and that do not admit
    null already: for these the model sends null where it would leave them out."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    required = schema.get("required")
    listed = set(required) if isinstance(required, list) else set()
    own = to_json_schema(schema)["properties"]
    now: Any = sent.get("properties")
    if not isinstance(now, dict):
        return []
    return [
        name
        for name in schema["properties"]
        if name not in listed
        and _admits_null(now.get(name), sent)
        and not _admits_null(own.get(name), schema)
    ]


def _admits_null(sub: Any, root: Any) -> bool:
    """Whether null is valid against sub ($refs resolve in root); unreadable: not judged."""
    try:
        validator = Draft202012Validator(root, registry=DOCUMENT_ONLY)
        return bool(validator.evolve(schema=sub).is_valid(None))
    except Exception:
        return False


def _widening(judgement: Judgement) -> list[Noted]:
    """The changes of Anthropic's rewrite that let the model send what the schema refuses."""
    return [
        n
        for n in judgement.changes
        if n.rule.id in WIDENING
        and (
            n.rule.id != "ANTHROPIC-CONSTRAINTS"
            or set(MOVED_KEY.findall(JSON_TEXT.sub('""', n.hit.found))) - NOT_BINDING
        )
    ]


def _just_outside(schema: Any, skipped: set[str]) -> list[tuple[str, Any]]:
    """Values just past each bound of a top-level property (a hypothesis draw rarely reaches
    a string longer than maxLength): (property, value) pairs."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return []
    found: list[tuple[str, Any]] = []
    for name, sub in properties.items():
        if name in skipped or not isinstance(sub, dict):
            continue
        for key, step in (("minimum", -1), ("maximum", 1)):
            bound = sub.get(key)
            if isinstance(bound, int | float) and not isinstance(bound, bool):
                found.append((name, bound + step))
        for key in ("exclusiveMinimum", "exclusiveMaximum"):
            bound = sub.get(key)
            if isinstance(bound, int | float) and not isinstance(bound, bool):
                found.append((name, bound))
        shortest, longest = sub.get("minLength"), sub.get("maxLength")
        if isinstance(shortest, int) and not isinstance(shortest, bool) and shortest > 0:
            found.append((name, "x" * (shortest - 1)))
        if isinstance(longest, int) and not isinstance(longest, bool) and longest < 100_000:
            found.append((name, "x" * (longest + 1)))
    return found


def _breaks(validator: Validator, params: Any, skipped: set[str]) -> bool:
    """Whether the inputSchema refuses params, file-class parameters aside (the kit hands
    those real files, whatever was generated for them)."""
    return any(
        not (error.absolute_path and error.absolute_path[0] in skipped)
        for error in validator.iter_errors(params)
    )


def _answer(outcome: CallOutcome) -> str:
    value = outcome.value
    if outcome.kind == "rpc-error" and isinstance(value, dict):
        return f"error {value.get('code')} ({value.get('message')!r})"
    if outcome.kind == "result" and isinstance(value, dict):
        return f"success false ({value.get('summary')!r})"
    return f"{outcome.kind}: {outcome.message}"


@check("FY-PROV-001", "FY-PROV-002", "FY-PROV-003")
def providers_take_the_tools(ctx: FengYuContext) -> Iterator[Finding]:
    """OpenAI, Anthropic, Gemini (the catalog names each requirement's provider): the
    provider's rejections (providers.py), a tool's at its schema in the manifest."""

    def in_manifest(tool: Offered, at: str, message: str, fix: str) -> Finding:
        return ctx.manifest_finding(at, message, fix)

    yield from provider_findings(ctx, ctx.requirement.provider, in_manifest)
