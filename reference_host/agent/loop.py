"""The agent loop: model turn -> tool calls through the snapshot -> results back -> reply.

It yields the SSE events of the chat stream (spec: host.md#tool-events-on-the-chat-stream) as
they happen. Calls to write and external tools go through the approval policy first, and an
approval holds only for the tool it showed (approval_binding). Whatever goes wrong ends the
stream with an error event, and error is always the last event. A turn ends at its time limit
(turn_limit), and a batch of calls that repeats a call id is refused before any of it runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from plugin_spec.secret_search import Redaction
from plugin_spec.sensitive import HIDDEN, MASK, has_sensitive, mask, secrets
from reference_host.agent.approval import ApprovalBroker, ApprovalPolicy, Decision
from reference_host.agent.approval_binding import ApprovalBinder, Binding, remedy
from reference_host.agent.models import ChatModel, Message, ModelError, ModelTurn, ToolCall
from reference_host.agent.turn_limit import DEFAULT_TURN_TIME_LIMIT, within_time_limit
from reference_host.stream import events
from reference_host.stream.events import Event
from reference_host.support.quoting import quoted
from reference_host.tools.callbacks import (
    Arguments,
    CallContext,
    CallPlan,
    ToolCallback,
    ToolResult,
    failure,
)
from reference_host.tools.snapshot import Snapshot

MAX_STEPS = 24
# Real turns ask for a handful of parallel calls; without a bound one 1 MiB `/call` message or
# one model turn could queue tens of thousands, each run (and maybe asked about) in turn.
MAX_CALLS_PER_TURN = 64


@dataclass(frozen=True)
class RunSettings:
    """How a run treats its calls: the approval policy, the broker that settles approvals and
    the binder that ties each to its tool; for a chat turn also its bounds (a workflow run
    takes no time limit from here)."""

    policy: ApprovalPolicy
    approvals: ApprovalBroker
    binder: ApprovalBinder
    time_limit: float = DEFAULT_TURN_TIME_LIMIT
    max_steps: int = MAX_STEPS
    max_calls: int = MAX_CALLS_PER_TURN


@dataclass(frozen=True)
class RunScope:
    """What one chat turn or workflow run calls tools through, built once per run by the host
    (Host.run_scope) for both: the registry snapshot narrowed to what the actor may use, the
    call context (conversation, run, tenant, actor) and how the run treats its calls."""

    snapshot: Snapshot
    context: CallContext
    settings: RunSettings


async def run_agent(
    model: ChatModel, messages: list[Message], scope: RunScope
) -> AsyncIterator[Event]:
    """Run until the model answers without tool calls, or until the turn's time limit;
    messages grows with the run."""
    async for event in within_time_limit(_steps(model, messages, scope), scope.settings.time_limit):
        yield event


async def _steps(
    model: ChatModel, messages: list[Message], scope: RunScope
) -> AsyncGenerator[Event, None]:
    snapshot, settings = scope.snapshot, scope.settings
    started = time.monotonic()
    tokens = 0
    seen_ids: set[str] = set()
    try:
        for _ in range(settings.max_steps):
            turn = ModelTurn()
            async for part in model.stream(messages, snapshot.definitions()):
                if isinstance(part, ModelTurn):
                    turn = part
                elif part.text:
                    yield events.thinking(part.text) if part.thinking else events.token(part.text)
            tokens += turn.tokens
            if len(turn.tool_calls) > settings.max_calls:
                yield events.error(
                    f"the model asked for {len(turn.tool_calls)} tool calls in one turn; "
                    f"at most {settings.max_calls} run"
                )
                return
            repeated = _repeated_id(turn.tool_calls, seen_ids)
            if repeated is not None:
                yield events.error(
                    f"the model used the tool call id {quoted(repeated)} more than once in this "
                    "turn; no call of its batch ran (ids must be unique across the turn)"
                )
                return
            messages.append(Message("assistant", turn.text, turn.tool_calls))
            if not turn.tool_calls:
                yield events.done(turn.text, tokens, time.monotonic() - started)
                return
            for call in turn.tool_calls:
                arguments = Arguments.read(call.arguments)  # read here, once
                shown = shown_arguments(snapshot.get(call.name), arguments)
                yield events.tool_call(call.id, call.name, shown)
                result = failure("the call gave no result")
                async for item in execute_call(call.id, call.name, arguments, scope):
                    if isinstance(item, Event):
                        yield item
                    else:
                        result = item
                output = result.text()
                yield events.tool_result(call.id, call.name, result.ok, output)
                messages.append(Message("tool", output, tool_call_id=call.id, name=call.name))
        yield events.error(f"the run stopped after {settings.max_steps} model turns")
    except ModelError as exc:
        yield events.error(f"model error: {exc}")
    except Exception as exc:
        yield events.error(f"internal error: {type(exc).__name__}: {exc}")


async def execute_call(
    call_id: str, name: str, arguments: Arguments, scope: RunScope
) -> AsyncIterator[Event | ToolResult]:
    """Approval events (if any), then the call's result as the last item.

    The call is planned first (route B fills in granted files), the approval shows that plan,
    and the callback runs exactly the planned arguments: what the user allowed is what runs,
    even if grants change while the approval waits. The approval is bound to the tool as
    shown (plugin version, install, definition): if it changed while the approval waited,
    checked when the decision arrives and again right before the call, nothing runs.
    """
    context, settings = scope.context, scope.settings
    callback = scope.snapshot.get(name)
    if callback is None:
        yield failure(f"unknown tool: {name}")
        return
    plan = callback.plan(arguments, context)
    decision = settings.policy.decide(callback.effect)
    if decision is Decision.ASK:
        binding = settings.binder.bind(name, callback)
        if isinstance(binding, str):
            yield failure(f"not run: {binding}; {remedy(callback)}")
            return
        approval_id, future = settings.approvals.open(lambda: settings.binder.changed(binding))
        yield _approval_event(approval_id, call_id, name, binding, plan)
        verdict = await settings.approvals.wait(approval_id, future, settings.policy.timeout)
        changed = verdict.changed if verdict.approved else None
        if verdict.approved and changed is None:
            changed = settings.binder.changed(binding)  # right before the call goes out
        if changed is not None:
            yield failure(f"not run: {changed} while the approval waited; {remedy(callback)}")
            return
        decision = Decision.ALLOW if verdict.approved else Decision.DENY
    elif plan.injected:  # no approval shows what the host filled in: say it here
        yield events.tool_filled(
            call_id,
            name,
            shown_arguments(callback, plan.arguments),
            plan.injected,
            [asdict(file) for file in plan.files],
        )
    if decision is Decision.DENY:
        yield failure(f"the call to {name} was not approved")
        return
    result = await callback.call(plan, context)
    yield _without_secrets(result, plan.arguments, callback)


def _approval_event(
    approval_id: str, call_id: str, name: str, binding: Binding, plan: CallPlan
) -> Event:
    """What the user is asked to allow: the plan, and the tool it is bound to."""
    return events.approval(
        approval_id,
        call_id,
        name,
        binding.callback.effect.value,
        shown_arguments(binding.callback, plan.arguments),
        plan.injected,
        [asdict(file) for file in plan.files],
        plugin=binding.owner,
        version=binding.version,
        digest=binding.digest,
    )


def _repeated_id(calls: Sequence[ToolCall], seen: set[str]) -> str | None:
    """The first id among calls that the turn has seen before (in an earlier batch or this
    one), or None; seen then holds the ids of calls too."""
    batch: set[str] = set()
    for call in calls:
        if call.id in seen or call.id in batch:
            return call.id
        batch.add(call.id)
    seen.update(batch)
    return None


def shown_arguments(callback: ToolCallback | None, arguments: Arguments) -> str:
    """A call's arguments as the stream and an approval show them: each value marked
    x-fengyu-sensitive masked (spec: host.md#sensitive-inputs); the worker gets them as sent.
    Their text is shown as it is when nothing in it is masked, and hidden whole when it is not
    an object (its secrets cannot be told apart)."""
    schema = None if callback is None else callback.definition.input_schema
    if schema is None or not has_sensitive(schema):
        return arguments.text
    if arguments.problem is not None:
        return HIDDEN
    masked = mask(dict(arguments.values), schema)
    return arguments.text if masked == arguments.values else json.dumps(masked, ensure_ascii=False)


def _without_secrets(
    result: ToolResult, arguments: Arguments, callback: ToolCallback
) -> ToolResult:
    """result with the call's sensitive values masked wherever a worker echoed them (in any
    string of it, keys too), before it reaches the stream, the model or a workflow binding
    (spec: host.md#sensitive-inputs)."""
    found = secrets(dict(arguments.values), callback.definition.input_schema)
    if not found:
        return result
    texts = list(_strings(result.output))
    if result.error is not None:
        texts.append(result.error)
    redaction = Redaction(found, texts, MASK)  # a secret split across two strings too
    error = None if result.error is None else redaction.apply(result.error)
    return ToolResult(_redacted(result.output, redaction), result.ok, error)


def _redacted(value: Any, redaction: Redaction) -> Any:
    if isinstance(value, str):
        return redaction.apply(value)
    if isinstance(value, dict):
        return {redaction.apply(k): _redacted(item, redaction) for k, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item, redaction) for item in value]
    return value


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, object keys too."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
