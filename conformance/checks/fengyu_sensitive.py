"""FY-TOOL-004 (spec: fengyu-worker.md#sensitive-inputs): a secret given to a tool stays in it.

The kit puts a canary, a recognisable string unique to the run, in every parameter marked
`x-fengyu-sensitive: true` and calls the tool with otherwise valid inputs. A canary that comes
back in the result or error, or that the worker wrote to stderr (which FengYu logs), is a
leak. The calls go to a worker of their own, stopped before its stderr is read, so every line
it wrote is in; the finding shows only a short excerpt around the canary.
"""

from __future__ import annotations

import json
import secrets
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate

from hypothesis import assume
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from conformance.checks.fengyu import FengYuContext, check
from conformance.checks.fengyu_tools import ToolRun
from conformance.fengyu.harness import CallOutcome, ToolHarness
from conformance.fengyu.manifest import AiTool
from conformance.findings import Finding, NotApplicable, shown
from conformance.properties import Counterexample, find_counterexample
from conformance.sources import strings_in
from plugin_spec import jsonrpc
from plugin_spec.filerefs import by_id, resolve_refs
from plugin_spec.json_types import JsonObject, JsonValue
from plugin_spec.schema_refs import DOCUMENT_ONLY
from plugin_spec.schema_subset import to_json_schema
from plugin_spec.secret_search import Match, find
from plugin_spec.sensitive import is_sensitive, sensitive_pointers
from reference_host.process.connection import WorkerConnection

# One per kit run: recognisable in any output, and never a real secret.
CANARY_PREFIX = f"fycanary{secrets.token_hex(6)}"
EXCERPT = 24  # characters shown on each side of a canary found
PLACEHOLDER = "<canary>"
STDERR_FIX = (
    "never write a sensitive value to stderr or a log (FengYu logs every stderr line): log "
    "that {name} was given, not what it is"
)
RESULT_FIX = (
    "leave the secret out of the result and out of error messages: they reach the model, the "
    "chat stream and workflows; say that {name} was used, not what it is"
)


@dataclass(frozen=True)
class Target:
    """One sensitive parameter, where it sits in the params and the canary it gets."""

    path: tuple[str, ...]
    schema_pointer: str
    canary: str

    @property
    def name(self) -> str:
        return ".".join(self.path)

    def place(self, params: JsonObject) -> JsonObject:
        """params with the canary at path; objects on the way are made when missing."""
        *parents, last = self.path
        out = dict(params)
        node = out
        for key in parents:
            child = node.get(key)
            copied: JsonObject = dict(child) if isinstance(child, dict) else {}
            node[key] = copied
            node = copied
        node[last] = self.canary
        return out


@dataclass(frozen=True)
class Leak:
    target: Target
    where: str
    excerpt: str


@check("FY-TOOL-004")
def sensitive_inputs_kept_secret(ctx: FengYuContext) -> Iterator[Finding]:
    tool = ctx.tool
    schema = tool.input_schema.data if isinstance(tool, AiTool) and tool.input_schema else None
    if isinstance(tool, AiTool) and not any(True for _ in sensitive_pointers(schema)):
        raise NotApplicable("the tool has no parameter marked x-fengyu-sensitive")
    run = ToolRun(ctx)
    assert run.tool.input_schema is not None
    targets, unfit = canary_targets(run.tool.input_schema.data, run.tool.input_schema.pointer)
    if not targets:
        raise NotApplicable(f"no sensitive parameter takes a canary string: {'; '.join(unfit)}")
    whole = Draft202012Validator(to_json_schema(run.tool.input_schema.data), registry=DOCUMENT_ONLY)
    if run.workers.spec is None:
        raise NotApplicable("the worker cannot be launched (FY-WRK-001)")
    harness = ToolHarness(
        run.workers.spec,
        stray=run.workers.stray_reporter(),
        hangs=run.workers.hangs,
        notify=run.workers.notify,
        deadlines=run.workers.deadlines,
    )
    connections: list[WorkerConnection] = []

    def attempt(data: st.DataObject) -> Counterexample | None:
        params = run.space.draw_valid(data.draw)
        if not isinstance(params, dict):
            return None
        for target in targets:
            params = target.place(params)
        assume(whole.is_valid(params))
        with_refs = run.files.substitute(params, run.classes, data.draw)
        sent = resolve_refs(with_refs, by_id(run.files.grants, run.workers.plugin_id))
        outcome = harness.call(str(run.tool.method), sent, run.timeout)
        connection = harness.manager.connection(harness.spec.plugin_id)
        if connection is not None and connection not in connections:
            connections.append(connection)
        leak = _returned(outcome, targets)
        if leak is not None:
            fix = RESULT_FIX.format(name=leak.target.name)
            return Counterexample(leak.where, (outcome, leak), fix=fix)
        if outcome.failed_badly:  # FY-TOOL-001's finding: stop at once (hang), no shrinking
            return Counterexample(outcome.kind, (outcome, None), hang=True)
        return None

    try:
        found = find_counterexample(attempt, run.workers.settings)
    finally:
        harness.close()  # the worker's pipes are drained: every stderr line is in
    returned = found.outcome[1] if found is not None else None
    if found is not None and returned is not None:
        yield _finding(ctx, run, returned, found.outcome[0].request, found.fix)
        return
    for connection in connections:
        leak = _in_stderr(connection.stderr, targets)
        if leak is not None:
            yield _finding(ctx, run, leak, None, STDERR_FIX.format(name=leak.target.name))
            return
    if found is not None:
        raise NotApplicable(
            f"the worker does not answer a valid call ({found.problem}): FY-TOOL-001 reports it"
        )


def canary_targets(schema: JsonValue, schema_at: str) -> tuple[list[Target], list[str]]:
    """The sensitive parameters a canary string can fill (reached through object properties,
    valid for their own schema), and why each other one cannot."""
    targets: list[Target] = []
    unfit: list[str] = []
    for index, at in enumerate(sensitive_pointers(schema)):
        parts = at.split("/")[1:]
        names = [_unescape(p) for p in parts[1::2]]
        where = schema_at + at
        if any(p != "properties" for p in parts[0::2]):
            unfit.append(f"{where} sits inside an array")
            continue
        canary = f"{CANARY_PREFIX}{index}"
        sub = _at(schema, parts)
        try:
            validator = Draft202012Validator(to_json_schema(sub), registry=DOCUMENT_ONLY)
            admitted = validator.is_valid(canary)
        except Exception as exc:  # e.g. a $ref outside the schema, refused unopened
            unfit.append(f"{where} cannot be evaluated ({type(exc).__name__}: {exc})")
            continue
        if not admitted:
            unfit.append(f"{where} admits no string like {canary!r}")
            continue
        targets.append(Target(tuple(names), where, canary))
    return targets, unfit


def _returned(outcome: CallOutcome, targets: list[Target]) -> Leak | None:
    """A canary in the result (with its JSON pointer) or in the error, as it is, encoded or
    split (secret_search.py)."""
    if outcome.kind == "result":
        found = list(strings_in(outcome.value, ""))
        # One text for the whole result: a canary split across two strings is found too.
        text = "\0".join(t for _, t in found)
        starts = list(accumulate((len(t) + 1 for _, t in found), initial=0))
        for target in targets:
            match = find(target.canary, text)
            if match is not None:
                start, end = match.spans[0]
                index = bisect_right(starts, start) - 1  # the string it is in
                at, string = found[index]
                begins = starts[index]
                excerpt = _excerpt(string, start - begins, end - begins)
                return Leak(target, f"{_how(match)}in its result at {at or '/'}", excerpt)
    if outcome.kind == "rpc-error":
        text = json.dumps(outcome.value, ensure_ascii=False)
        for target in targets:
            match = find(target.canary, text)
            if match is not None:
                start, end = match.spans[0]
                excerpt = _excerpt(text, start, end)
                return Leak(target, f"{_how(match)}in its JSON-RPC error", excerpt)
    return None


def _in_stderr(stderr: str, targets: list[Target]) -> Leak | None:
    for target in targets:
        match = find(target.canary, stderr)
        if match is not None:
            start, end = match.spans[0]
            number = stderr.count("\n", 0, start) + 1
            begins = stderr.rfind("\n", 0, start) + 1
            line = stderr[begins:].partition("\n")[0]
            where = f"{_how(match)}in its stderr (line {number} of what it wrote)"
            return Leak(target, where, _excerpt(line, start - begins, end - begins))
    return None


def _how(match: Match) -> str:
    return "" if match.plain else f"{match.encoding} "


def _finding(
    ctx: FengYuContext, run: ToolRun, leak: Leak, request: jsonrpc.Request | None, fix: str
) -> Finding:
    lines = [
        f"tool {run.tool.name!r}: the canary sent in its sensitive parameter "
        f"{leak.target.name!r} ({leak.target.schema_pointer}) came back {leak.where}: "
        f"...{leak.excerpt}...",
    ]
    if request is not None:
        lines.append(f"request: {shown(request)}")
    return ctx.manifest_finding(leak.target.schema_pointer, "\n".join(lines), fix)


def _excerpt(text: str, start: int, end: int) -> str:
    before = text[max(start - EXCERPT, 0) : start]
    after = text[end : end + EXCERPT]
    return f"{before}{PLACEHOLDER}{after}".replace("\n", " ")


def _at(schema: JsonValue, parts: list[str]) -> JsonValue:
    for part in parts:
        schema = schema.get(_unescape(part)) if isinstance(schema, dict) else None
    return schema if is_sensitive(schema) else {}


def _unescape(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")
