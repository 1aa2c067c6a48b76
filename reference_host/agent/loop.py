"""The agent loop: model turn -> tool calls through the snapshot -> results back -> reply.

It yields the SSE events of the chat stream (spec: host.md#tool-events-on-the-chat-stream) as
they happen. Calls to write and external tools go through the approval policy first.
Whatever goes wrong ends the stream with an error event, and error is always the last event.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, replace

from plugin_spec.sensitive import mask_arguments, redact, secrets
from reference_host import events
from reference_host.agent.models import ChatModel, Message, ModelError, ModelTurn, ToolCall
from reference_host.approval import ApprovalBroker, ApprovalPolicy, Decision
from reference_host.events import Event
from reference_host.registry import Snapshot
from reference_host.tools import CallContext, ToolCallback, failure, is_failure

MAX_STEPS = 24
# Real turns ask for a handful of parallel calls; without a bound one 1 MiB `/call` message or
# one model turn could queue tens of thousands, each run (and maybe asked about) in turn.
MAX_CALLS_PER_TURN = 64


@dataclass(frozen=True)
class RunSettings:
    policy: ApprovalPolicy
    approvals: ApprovalBroker
    max_steps: int = MAX_STEPS
    max_calls: int = MAX_CALLS_PER_TURN


async def run_agent(
    model: ChatModel,
    snapshot: Snapshot,
    messages: list[Message],
    context: CallContext,
    settings: RunSettings,
) -> AsyncIterator[Event]:
    """Run until the model answers without tool calls; messages grows with the run."""
    started = time.monotonic()
    tokens = 0
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
            messages.append(Message("assistant", turn.text, turn.tool_calls))
            if not turn.tool_calls:
                yield events.done(turn.text, tokens, time.monotonic() - started)
                return
            for call in turn.tool_calls:
                shown = shown_arguments(snapshot.get(call.name), call.arguments)
                yield events.tool_call(call.id, call.name, shown)
                output = ""
                async for item in execute_call(call, snapshot, context, settings):
                    if isinstance(item, Event):
                        yield item
                    else:
                        output = item
                yield events.tool_result(call.id, call.name, not is_failure(output), output)
                messages.append(Message("tool", output, tool_call_id=call.id, name=call.name))
        yield events.error(f"the run stopped after {settings.max_steps} model turns")
    except ModelError as exc:
        yield events.error(f"model error: {exc}")
    except Exception as exc:
        yield events.error(f"internal error: {type(exc).__name__}: {exc}")


async def execute_call(
    call: ToolCall, snapshot: Snapshot, context: CallContext, settings: RunSettings
) -> AsyncIterator[Event | str]:
    """Approval events (if any), then the call's output text as the last item.

    The call is planned first (route B fills in granted files), the approval shows that plan,
    and the callback runs exactly the planned arguments: what the user allowed is what runs,
    even if grants change while the approval waits.
    """
    callback = snapshot.get(call.name)
    if callback is None:
        yield failure(f"unknown tool: {call.name}")
        return
    plan = callback.plan(call.arguments, context)
    decision = settings.policy.decide(callback.effect)
    if decision is Decision.ASK:
        approval_id, future = settings.approvals.open()
        yield events.approval(
            approval_id,
            call.id,
            call.name,
            callback.effect.value,
            shown_arguments(callback, plan.arguments),
            plan.injected,
            [asdict(file) for file in plan.files],
        )
        approved = await settings.approvals.wait(approval_id, future, settings.policy.timeout)
        decision = Decision.ALLOW if approved else Decision.DENY
    if decision is Decision.DENY:
        yield failure(f"the call to {call.name} was not approved")
        return
    output = await callback.call(plan.arguments, replace(context, planned=True))
    yield _without_secrets(output, plan.arguments, callback)


def shown_arguments(callback: ToolCallback | None, arguments: str) -> str:
    """A call's arguments as the stream and an approval show them: each value marked
    x-fengyu-sensitive masked (spec: host.md#sensitive-inputs); the worker gets them as sent."""
    if callback is None:
        return arguments
    return mask_arguments(arguments, callback.definition.input_schema)


def _without_secrets(output: str, arguments: str, callback: ToolCallback) -> str:
    """output with the call's sensitive values masked wherever a worker echoed them, before
    it reaches the stream, the model or a workflow binding (spec: host.md#sensitive-inputs)."""
    try:
        sent = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):
        return output
    found = secrets(sent, callback.definition.input_schema)
    return redact(output, found) if found else output
