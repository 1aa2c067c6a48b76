"""Property checks of each aiTool against the real worker (spec: fengyu-worker.md#tool-properties).

Inputs come from the tool's inputSchema (hypothesis-jsonschema), file-class parameters get
real files as granted FileRefs, and calls go through the reference host's process manager.
A failure reports the shrunk request, the reply, the worker's stderr and a one-line
reproduction.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from hypothesis import assume, reject
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from conformance.call_log import unexercised
from conformance.checks.fengyu import FengYuContext, check
from conformance.fengyu.harness import CallOutcome, CancelOutcome, ToolHarness
from conformance.fengyu.manifest import AiTool
from conformance.fengyu.services import unreadable
from conformance.findings import Finding, NotApplicable, NotExercised, shown
from conformance.properties import Counterexample, find_counterexample
from conformance.repeats import collapsed
from conformance.schema_messages import explain
from conformance.sources import pointer
from conformance.strategies import ExternalRefs, GeneratorGap, defaulted_properties
from plugin_spec import jsonrpc
from plugin_spec.fengyu_runtime import CANCEL_GRACE_SECONDS, CANCEL_METHOD, CANCELLED_CODE
from plugin_spec.filerefs import by_id, classify_parameters, resolve_refs
from plugin_spec.json_types import JsonObject
from plugin_spec.schema_refs import DOCUMENT_ONLY, external_refs
from plugin_spec.schema_subset import to_json_schema

SUBSET_REQUIREMENT = "FY-MAN-011"  # which refuses $ref, and so every ref leaving the schema
UNRESOLVED_REF = {
    "id": "ref_conformance-unresolved",
    "name": "input.xlsx",
    "kind": "file",
    "access": "read",
    "size": 1024,
}
# FY-TOOL-001 fails in three ways that need different changes: a crash, an internal error
# (an exception the worker caught only to report it) or no answer.
CRASH_FIX = (
    "do not crash: handle every input the inputSchema admits, and answer one the tool cannot "
    "serve with {success: false, summary} or a JSON-RPC error of your own; run the "
    "`reproduce:` command of the finding above to see the crash"
)
INTERNAL_FIX = (
    "handle every input the inputSchema admits: an internal error (-32603, or data.code "
    "INTERNAL_ERROR) is how FengYu's SDKs and fengyu_worker report an exception the handler "
    "did not catch, so fix the handler (its traceback is in the worker stderr above), narrow "
    "the inputSchema so it does not admit this input, or answer a business error instead: "
    "{success: false, summary}, or an RpcError with a data.code of your own"
)
INTERNAL_DATA_CODE = "INTERNAL_ERROR"
JAVA_INTERNAL_CODE = "INTERNAL"  # FengYu's Java SDK's data.code for an uncaught exception
# A null result, or a response that left result out (FengYu reads both as null): how FengYu's
# Go SDK answers a handler's `return nil, nil` and its Java SDK a handler's `return null`.
NULL_RESULT_FIX = (
    "return a result object that matches the outputSchema, such as {success: true, summary}, "
    "instead of nothing: FengYu's Go SDK leaves result out for a handler's `return nil, nil` "
    "and its Java SDK for `return null`, and FengYu reads that as a null result, which an "
    "object outputSchema refuses"
)
HANG_FIX = (
    "answer within the tool's timeout (timeoutSeconds): fail fast, or split long work into "
    "*_start / *_status jobs; run the `reproduce:` command of the finding above"
)


class ToolRun:
    """One tool's check run: its input space, files, worker harness and timeout."""

    def __init__(self, ctx: FengYuContext) -> None:
        tool = ctx.tool
        workers = ctx.workers
        if not isinstance(tool, AiTool) or workers is None:
            raise NotApplicable("the plugin declares no worker")
        workers.require_usable()
        if not isinstance(tool.method, str):
            raise NotApplicable("the tool names no method (FY-MAN-004)")
        workers.require_answering(tool, ctx.requirement.id)
        self.ctx, self.tool, self.workers = ctx, tool, workers
        try:
            space = workers.input_space(tool)
        except ExternalRefs as exc:
            at = tool.input_schema.pointer if tool.input_schema else ""
            raise NotApplicable(f"{exc.located(at)} ({SUBSET_REQUIREMENT})") from None
        if space is None or tool.input_schema is None:  # no space without an inputSchema
            raise NotApplicable("the tool has no inputSchema object (FY-MAN-010)")
        self.space = space
        self.classes = classify_parameters(tool.input_schema.data)
        self.files = workers.files_for(str(tool.name))
        self.timeout = workers.tool_timeout(tool)
        self._harness: ToolHarness | None = None

    @property
    def harness(self) -> ToolHarness:
        """The tool checks' worker, started (or set up again) when this run first calls it:
        an effect item judging the calls already made starts no worker, whose setup calls
        it would then have to wait out (the linger, and what the calls left asleep)."""
        if self._harness is None:
            started = self.workers.harness_started
            self._harness = self.workers.harness()
            self._harness.warm()
            if started:
                self.workers.set_up()  # each search from the state the examples file's setup makes
        return self._harness

    def call(self, params: Any) -> CallOutcome:
        """Call the tool with params, their FileRefs resolved to the granted paths."""
        return self.send(self.resolved(params))

    def resolved(self, params: Any) -> Any:
        """params with their FileRefs resolved to the granted paths, as the worker gets them."""
        return resolve_refs(params, by_id(self.files.grants, self.workers.plugin_id))

    def send(self, params: Any) -> CallOutcome:
        """Call the tool with params as they are, watching what the call does (effects.py);
        folders granted writable are not watched for a write tool."""
        skip = self.files.writable if self.tool.effect == "write" else ()
        outcome = self.workers.effects.observe(
            str(self.tool.name),
            self.files.workdir,
            skip,
            lambda: self.harness.call(str(self.tool.method), params, self.timeout),
        )
        self.workers.count(str(self.tool.name), outcome)
        return outcome

    def not_exercised(self, outcomes: list[CallOutcome]) -> NotExercised:
        """The verdict of a search whose calls were every one refused (a business error
        or a JSON-RPC error): nothing the tool does was examined."""
        last = outcomes[-1] if outcomes else None
        error = ""
        if last is not None:
            answer = shown(last.value, 300) if last.value is not None else last.message
            error = self.files.as_shipped(f"{last.kind}: {answer}")
        reason = unexercised(
            str(self.tool.name), len(outcomes), self.space.dropped, self.workers.setup_failures
        )
        return NotExercised(reason, error)

    def broken(self, outcome: CallOutcome) -> Counterexample | None:
        """A crash, hang or protocol break; a hang, or an answer refused unread, ends the
        search at once (each further call costs the same)."""
        if outcome.failed_badly:
            hang = outcome.kind == "timeout" or outcome.unreadable
            return Counterexample(f"{outcome.kind}: {outcome.message}", outcome, hang=hang)
        return None

    def finding(self, found: Counterexample | None) -> Iterator[Finding]:
        """The counterexample as a finding; NotApplicable for an answer refused unread,
        which is FY-WRK-007's finding."""
        if found is None:
            return
        outcome = found.outcome
        if outcome.unreadable:
            raise NotApplicable(unreadable(str(self.tool.name), outcome))
        reply = shown(outcome.value) if outcome.kind in ("result", "rpc-error") else outcome.message
        shrunk = "" if found.shrunk else " (not shrunk: the worker hangs)"
        lines = [
            f"tool {self.tool.name!r}: {found.problem}",
            f"request{shrunk}: {shown(outcome.request)}",
            f"reply: {reply}",
        ]
        if outcome.stderr:
            tail = "\n".join(collapsed(outcome.stderr.splitlines())[-15:])
            lines.append(f"worker stderr (last lines):\n{tail}")
        hang = self.timeout if outcome.kind == "timeout" else None
        # An effect item judges calls of a worker since ended: its command is the same.
        harness = self._harness or self.workers.last_harness or self.harness
        lines.append(f"reproduce: {harness.reproduction(outcome.request, hang)}")
        message = self.files.as_shipped("\n".join(lines))
        yield self.ctx.manifest_finding(self.tool.pointer, message, found.fix)


@check("FY-TOOL-001")
def valid_inputs_answered(ctx: FengYuContext) -> Iterator[Finding]:
    run = ToolRun(ctx)
    validator = _output_validator(run.tool)
    outcomes: list[CallOutcome] = []

    def attempt(data: st.DataObject) -> Counterexample | None:
        params = run.space.draw_valid(data.draw)
        outcome = run.call(run.files.substitute(params, run.classes, data.draw))
        outcomes.append(outcome)
        defaults = _left_out_defaults(run.space.schema, params)
        if broken := run.broken(outcome):
            return replace(broken, fix=HANG_FIX if broken.hang else CRASH_FIX + defaults)
        if internal := internal_error(outcome):
            return Counterexample(
                f"a valid input was answered with an internal error ({internal}): the handler "
                "raised an exception it did not catch, which is no answer",
                outcome,
                fix=INTERNAL_FIX + defaults,
            )
        if outcome.kind == "result" and validator is not None:
            error = best_match(validator.iter_errors(outcome.value))
            if error is not None and outcome.value is None:
                return Counterexample(
                    "the result is null (or left out, which FengYu reads as null), and the "
                    "outputSchema does not admit null",
                    outcome,
                    fix=NULL_RESULT_FIX,
                )
            if error is not None:
                told = explain(error, pointer(*error.absolute_path), "the result")
                return Counterexample(
                    f"the result does not match the outputSchema: {told.message}",
                    outcome,
                    fix=f"return a result that matches the tool's outputSchema: {told.fix}",
                )
        return None

    found = find_counterexample(attempt, run.workers.settings)
    if found is None and not any(outcome.succeeded for outcome in outcomes):
        raise run.not_exercised(outcomes)
    yield from run.finding(found)


def internal_error(outcome: CallOutcome) -> str:
    """How the reply says it is an uncaught exception ("" for any other outcome): JSON-RPC's
    internal error -32603 (FengYu's Python SDK and fengyu_worker) or data.code INTERNAL_ERROR
    (FengYu's Go SDK, with -32000), unlike a business error with a code of its own."""
    error = outcome.value
    if outcome.kind != "rpc-error" or not isinstance(error, dict):
        return ""
    data = error.get("data")
    if isinstance(data, dict) and data.get("code") == INTERNAL_DATA_CODE:
        return f"code {error.get('code')}, data.code {INTERNAL_DATA_CODE}"
    if error.get("code") == jsonrpc.INTERNAL_ERROR:
        return f"code {jsonrpc.INTERNAL_ERROR}"
    return ""


def internal_code(error: dict[str, Any]) -> str:
    """How an error object says it is an uncaught exception ("" for any other error): -32603,
    or data.code INTERNAL_ERROR (FengYu's Go SDK) or INTERNAL (its Java SDK)."""
    data = error.get("data")
    code = data.get("code") if isinstance(data, dict) else None
    if code in (INTERNAL_DATA_CODE, JAVA_INTERNAL_CODE):
        return f"code {error.get('code')}, data.code {code}"
    if error.get("code") == jsonrpc.INTERNAL_ERROR:
        return f"code {jsonrpc.INTERNAL_ERROR}"
    return ""


def _output_validator(tool: AiTool) -> Draft202012Validator | None:
    """The validator of the tool's results (None without an outputSchema object), its refs
    resolved inside the outputSchema only; a schema it cannot be built from leaves the
    results unjudged, said as not applicable."""
    site = tool.output_schema
    if site is None or not isinstance(site.data, dict):
        return None
    output = to_json_schema(site.data)
    try:
        Draft202012Validator.check_schema(output)
        external = external_refs(output)
    except Exception as exc:
        raise NotApplicable(
            f"results cannot be checked: {site.pointer} is not a valid JSON Schema "
            f"({type(exc).__name__}; {SUBSET_REQUIREMENT})"
        ) from None
    if external:
        located = ExternalRefs(external).located(site.pointer)
        raise NotApplicable(f"results cannot be checked: {located} ({SUBSET_REQUIREMENT})")
    return Draft202012Validator(output, registry=DOCUMENT_ONLY)


@check("FY-TOOL-002")
def invalid_inputs_rejected(ctx: FengYuContext) -> Iterator[Finding]:
    run = ToolRun(ctx)

    def attempt(data: st.DataObject) -> Counterexample | None:
        params = run.space.draw_valid(data.draw)
        mutations = run.space.mutations(params)
        if not isinstance(params, dict) or not mutations:
            reject()  # assume(mutations): an input other than an object has none
        why, broken = data.draw(st.sampled_from(mutations))
        sent = run.resolved(
            run.files.substitute(broken, run.classes, data.draw, keep=_changed(params, broken))
        )
        # Still broken as the worker gets it: a FileRef stands for a path, and a granted path
        # in place of the break would make the input valid again.
        assume(not run.space.validator.is_valid(sent))
        outcome = run.send(sent)
        accepted = _accepted(outcome, f"accepted an invalid input ({why})")
        fix = (
            f"validate params against the inputSchema of {run.tool.method!r} before acting "
            f"({why}) and answer -32602: FengYu's host checks params before it calls the "
            "worker, so FengYu's own Python SDK passes them on unchecked, but other hosts "
            "and direct callers do not check them; this kit's fengyu_worker SDK validates "
            "them for you"
        )
        return run.broken(outcome) or (accepted and replace(accepted, fix=fix))

    yield from run.finding(find_counterexample(attempt, run.workers.settings))


@check("FY-TOOL-003")
def unresolved_refs_rejected(ctx: FengYuContext) -> Iterator[Finding]:
    run = ToolRun(ctx)
    if not run.classes:
        raise NotApplicable("the tool has no file-class parameter")

    def attempt(data: st.DataObject) -> Counterexample | None:
        params = run.space.draw_valid(data.draw)
        if not isinstance(params, dict):
            reject()  # no file-class parameter to put the FileRef in
        name = data.draw(st.sampled_from(sorted(run.classes)))
        params = run.files.substitute({**params, name: None}, run.classes, data.draw, {name})
        params[name] = UNRESOLVED_REF
        outcome = run.send(
            {
                k: v
                if k == name
                else resolve_refs(v, by_id(run.files.grants, run.workers.plugin_id))
                for k, v in params.items()
            }
        )
        return run.broken(outcome) or _accepted(
            outcome, f"accepted an unresolved FileRef object as {name!r}"
        )

    yield from run.finding(find_counterexample(attempt, run.workers.settings))


def _changed(valid: JsonObject, broken: JsonObject) -> set[str]:
    """The properties a mutation dropped, changed or added (an optional property that was
    absent, given a wrong type): these keep their broken value instead of a granted file."""
    missing = object()
    return {
        name
        for name in valid.keys() | broken.keys()
        if valid.get(name, missing) != broken.get(name, missing)
    }


def _left_out_defaults(schema: Any, params: Any) -> str:
    """What to add to a crash's fix when the input leaves out a property that declares a
    default: FengYu fills in no defaults, so a handler that expects them crashes."""
    missing = [
        f"{'.'.join(path)!r} (default {shown(default, 60)})"
        for path, default in defaulted_properties(schema)
        if not _present(params, path)
    ]
    if not missing:
        return ""
    return (
        f"; this input leaves out {', '.join(missing)}: FengYu passes params as they were "
        "sent and fills in no default, so apply the default in the handler when the "
        "property is missing"
    )


def _present(params: Any, path: tuple[str, ...]) -> bool:
    for name in path:
        if not isinstance(params, dict) or name not in params:
            return False
        params = params[name]
    return True


def _accepted(outcome: CallOutcome, problem: str) -> Counterexample | None:
    """A result that does not say success false counts as accepting the input."""
    return Counterexample(problem, outcome) if outcome.succeeded else None


@check("FY-TOOL-005")
def cancelled_calls_answered(ctx: FengYuContext) -> Iterator[Finding]:
    run = ToolRun(ctx)
    spec = run.workers.spec
    if spec is None or spec.protocol_version is None:
        raise NotApplicable(
            "the manifest declares no backend.protocolVersion: a legacy worker is not told "
            f"of cancelled calls ({CANCEL_METHOD} came with the handshake)"
        )
    try:
        minimal = run.space.minimal()
    except GeneratorGap as exc:
        raise NotApplicable(str(exc)) from None
    params = resolve_refs(minimal, by_id(run.files.grants, run.workers.plugin_id))
    alone = _LeftAlone(run, params)
    for delay in (0.0, MID_CALL_SECONDS):
        cancelled = run.harness.abandon(str(run.tool.method), params, run.timeout, delay)
        problem = _cancel_problem(cancelled, delay, alone)
        if problem is None:
            continue
        message, fix = problem
        when = (
            "right after it was sent"
            if delay == 0
            else f"{delay:g} s after it was sent, while it ran"
        )
        request = jsonrpc.request("1", str(run.tool.method), params)
        cancel = jsonrpc.notification(CANCEL_METHOD, {"id": "1"})
        lines = [f"request: {shown(request)}", f"cancel: {shown(cancel)}"]
        if cancelled.response is not None:  # shown with the id the request above has
            lines.append(f"reply: {shown({**cancelled.response, 'id': '1'})}")
        yield ctx.manifest_finding(
            run.tool.pointer,
            f"tool {run.tool.name!r}: the call was cancelled {when}, and {message}\n"
            + "\n".join(lines),
            fix=fix,
        )
        if not cancelled.answered:
            return  # the worker was killed; a second cancel would only wait again


# A cancelled call answered with a result this soon after the cancel had its result on the
# way already (FengYu accepts it); later, the call ran on as if no cancel had come.
ON_ITS_WAY_SECONDS = 0.25
# When the second cancel is sent: a call still running by then is cancelled mid-call, where a
# handler is stopped, not just never started (a Java handler sees InterruptedException).
MID_CALL_SECONDS = 0.25
CANCELLED_FIX = (
    f"on {CANCEL_METHOD} stop the call with that id and answer it with an error whose "
    'data.code is "CANCELLED" (FengYu\'s SDKs do this for handlers that check their context)'
)
EARLY_FIX = (
    f"register each call before its handler starts, so that a {CANCEL_METHOD} read right "
    "after the request finds it (FengYu's Go SDK registers a call only inside the handler's "
    "goroutine, and drops a cancel that comes with its request), and answer the cancelled "
    'call with data.code "CANCELLED"'
)
RAN_ON_FIX = (
    "check for cancellation while the handler works (Go: ctx.Done(); Java: the call's "
    "cancellation token or Thread.interrupted(); Python: ctx.check_cancelled()) and answer "
    'the cancelled call with data.code "CANCELLED" instead of its result'
)
INTERRUPTED_FIX = (
    'answer a call interrupted by its cancel with data.code "CANCELLED", not as a crash: '
    "catch InterruptedException (or the cancellation your runtime raises) around the "
    "handler's waits, or let the SDK's cancellation error through unwrapped; FengYu shows "
    "an internal error as a failed tool, not as the cancel the user asked for"
)


class _LeftAlone:
    """The same call made without a cancel, once and only when a judgement needs it: how it
    ends and how long it takes, which tells a cancel ignored from a call that was quick
    anyway, and an error caused by the cancel from one the input causes."""

    def __init__(self, run: ToolRun, params: Any) -> None:
        self.run, self.params = run, params
        self._outcome: tuple[CallOutcome, float] | None = None

    def _call(self) -> tuple[CallOutcome, float]:
        if self._outcome is None:
            started = time.monotonic()
            run = self.run
            outcome = run.harness.call(str(run.tool.method), self.params, run.timeout)
            run.workers.count(str(run.tool.name), outcome)
            self._outcome = outcome, time.monotonic() - started
        return self._outcome

    @property
    def outcome(self) -> CallOutcome:
        return self._call()[0]

    @property
    def seconds(self) -> float:
        return self._call()[1]


def _cancel_problem(
    cancelled: CancelOutcome, delay: float, alone: _LeftAlone
) -> tuple[str, str] | None:
    """What is wrong with how a cancelled call was answered, and its fix; None when it was
    answered as FengYu needs (CANCELLED, a business error, or a result already on its way)."""
    if not cancelled.answered:
        if alone.outcome.kind == "timeout":
            raise NotApplicable(
                f"the call does not answer within {alone.run.timeout:g} s even when left "
                "alone: FY-TOOL-001's finding, not the cancel's"
            )
        return (
            f"no answer came within {CANCEL_GRACE_SECONDS:g} s of {CANCEL_METHOD}, so FengYu "
            "kills the worker",
            CANCELLED_FIX,
        )
    error = cancelled.error
    if error is not None:
        data = error.get("data")
        if isinstance(data, dict) and data.get("code") == CANCELLED_CODE:
            return None
        crash = internal_code(error)
        if not crash or internal_error(alone.outcome):
            return None  # a business error, or the input's own crash (FY-TOOL-001)
        return (
            f"it was answered with an internal error ({crash}) instead of data.code "
            f'"{CANCELLED_CODE}": the handler let its interruption escape, and FengYu reports '
            "a crashed tool",
            INTERRUPTED_FIX,
        )
    after = cancelled.after
    if not cancelled.is_result or after is None or after <= ON_ITS_WAY_SECONDS:
        return None
    if alone.seconds < delay + ON_ITS_WAY_SECONDS:
        return None  # the call is quick when left alone: this answer was only slow to come
    early = "a cancel that came with its request was dropped"
    dropped = early if delay == 0 else "the handler ran to its end"
    return (
        f"it was answered {after:.2f} s after {CANCEL_METHOD} with a result, as if no cancel "
        f"had come (left alone, the call takes {alone.seconds:.2f} s): {dropped}",
        EARLY_FIX if delay == 0 else RAN_ON_FIX,
    )
