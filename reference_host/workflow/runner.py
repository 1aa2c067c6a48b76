"""Running a saved workflow (spec: host.md#saved-workflows) exactly as chat runs tools.

Nodes run one at a time in dependency order, in the run scope a chat turn gets (Host.run_scope:
a fresh registry snapshot narrowed to the actor) and through the agent loop's own call path
(`execute_call`: the approval policy and broker, then the callback), so a node is
indistinguishable from a tool call the model made. An approval holds there too only for the tool
it showed: a node whose plugin was upgraded, reinstalled or removed while its approval waited is
not run, and the run ends there with the reason. The stream has chat's events: per node a tool
call and a tool result whose id is the node id (with an approval between them when the policy
asks), then `done`; anything that stops the run is an `error` naming the node, and `error` is
always last.

A node's input is its literal inputs plus its bound values: the upstream result (a JSON
value), whole or one field of it. That result has its call's sensitive values masked, so a secret
never feeds a binding, and the call events mask them too (spec: host.md#sensitive-inputs).

A node whose tool is not in the snapshot, an input the tool no longer has, a required input
without a value, a failed node (the failure envelope, including a call that was not approved)
or a missing bound field ends the run.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from reference_host.agent.loop import RunScope, execute_call, shown_arguments
from reference_host.stream import events
from reference_host.stream.events import Event
from reference_host.tools.callbacks import Arguments, ToolResult, failure
from reference_host.tools.catalog_entries import from_snapshot
from reference_host.tools.snapshot import Snapshot
from reference_host.workflow.canvas import WorkflowError, reconcile_info, topological_order

if TYPE_CHECKING:
    from reference_host.host import Host


class NodeError(Exception):
    """Why the run stops at a node."""


def tool_names(snapshot: Snapshot) -> dict[str, tuple[str, Any]]:
    """identity -> (the name the snapshot knows the tool by, its catalog entry)."""
    # from_snapshot makes one entry per callback, in the snapshot's order.
    entries = from_snapshot(snapshot)
    return {
        entry.identity: (name, entry) for name, entry in zip(snapshot.names(), entries, strict=True)
    }


async def run_workflow(workflow: dict[str, Any], scope: RunScope) -> AsyncIterator[Event]:
    """Run a stored workflow's nodes in scope; yields chat's events, done or error last."""
    started = time.monotonic()
    snapshot = scope.snapshot
    try:
        nodes = workflow.get("nodes", [])
        try:
            order = topological_order(nodes)
        except WorkflowError as exc:
            yield events.error(exc.message)
            return
        tools = tool_names(snapshot)
        outputs: dict[str, Any] = {}
        for node in order:
            where = f"node {node['id']!r}"
            try:
                name, values = _prepare(node, tools, outputs)
            except NodeError as exc:
                yield events.error(f"{where}: {exc}")
                return
            arguments = Arguments.of(values)
            yield events.tool_call(node["id"], name, shown_arguments(snapshot.get(name), arguments))
            result = failure("the call gave no result")
            async for item in execute_call(node["id"], name, arguments, scope):
                if isinstance(item, Event):
                    yield item
                else:
                    result = item
            yield events.tool_result(node["id"], name, result.ok, result.text())
            if not result.ok:
                yield events.error(f"{where} ({node['identity']}) failed: {_reason(result)}")
                return
            outputs[node["id"]] = result.output
        text = f"workflow {workflow.get('id', '')!s} ran {len(order)} nodes"
        yield events.done(text, 0, time.monotonic() - started)
    except Exception as exc:
        yield events.error(f"internal error: {type(exc).__name__}: {exc}")


def _prepare(
    node: dict[str, Any], tools: dict[str, tuple[str, Any]], outputs: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """(tool name in the snapshot, the call's arguments) or a NodeError."""
    found = tools.get(node["identity"])
    if found is None:
        raise NodeError(f"tool {node['identity']} is not available")
    name, entry = found
    info = reconcile_info(node, entry)
    if info["bindingsToRemovedInputs"]:
        removed = ", ".join(repr(n) for n in info["bindingsToRemovedInputs"])
        raise NodeError(
            f"input {removed} is no longer an input of {entry.identity} "
            "(reconcile the workflow and edit the node)"
        )
    arguments = dict(node["inputs"])
    for input_name, binding in node["bindings"].items():
        upstream = binding["node"]
        if upstream not in outputs:
            raise NodeError(f"input {input_name!r}: node {upstream!r} has no result")
        arguments[input_name] = _bound(outputs[upstream], binding["field"], input_name, upstream)
    missing = sorted(entry.required - set(arguments))
    if missing:
        names = ", ".join(repr(n) for n in missing)
        raise NodeError(f"required input {names} has no value (neither literal nor bound)")
    return name, arguments


def _bound(value: Any, field: str | None, input_name: str, upstream: str) -> Any:
    if field is None:
        return value
    if not isinstance(value, dict) or field not in value:
        raise NodeError(
            f"input {input_name!r}: the result of node {upstream!r} has no field {field!r}"
        )
    return value[field]


def _reason(result: ToolResult) -> str:
    value = result.output
    if isinstance(value, dict):
        reason = value.get("error") or value.get("summary") or value.get("message")
        if reason:
            return str(reason)
    return value if isinstance(value, str) else result.text()


async def run_saved(
    host: Host,
    workflow: dict[str, Any],
    *,
    conversation_id: str | None = None,
    tenant: str = "",
    actor: str = "",
) -> AsyncIterator[Event]:
    """A run on the host, in the scope chat's turns get too (Host.run_scope: the snapshot
    narrowed to the actor, the call context, the approval policy, broker and binder; the
    time limit is chat's alone)."""
    conversation = conversation_id or f"workflow_{workflow.get('id', '')}"
    async for event in run_workflow(workflow, host.run_scope(conversation, tenant, actor)):
        yield event
