"""What the registry holds: tool definitions as the model sees them, and callbacks that run them.

Built-ins, FengYu worker tools and ERP REST tools are all ToolCallbacks; the agent loop and
the SSE stream cannot tell them apart (spec: host.md#one-host-for-both-profiles). A callback
never raises to the model layer: every failure comes back as the
`{"success": false, "error": ...}` envelope.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from plugin_spec.filerefs import Access, FileKind
from plugin_spec.tool_definition import Effect, ToolDefinition


@dataclass(frozen=True)
class CallContext:
    """Who is calling: the conversation (for FileRef grants), the run, and for ERP tools
    the tenant and the acting user (forwarded, and checked by strict tools)."""

    conversation_id: str = ""
    run_id: str = ""
    tenant: str = ""
    actor: str = ""
    # The arguments are a plan's (route B already applied, and maybe approved as they are):
    # the callback sends them unchanged instead of injecting again.
    planned: bool = False


@dataclass(frozen=True)
class FileShown:
    """A granted FileRef in a call's arguments, as an approval shows it: what the worker will
    get a copy of, and whether the host put it there (route B) or the model did."""

    parameter: str
    id: str
    name: str
    kind: FileKind
    access: Access
    path: str
    injected: bool


@dataclass(frozen=True)
class CallPlan:
    """What a call will send, worked out before it runs, so an approval shows exactly that.

    arguments is the JSON text the callback will be given (with route B's FileRefs filled
    in); injected names the parameters the host filled; files lists the granted FileRefs the
    arguments hold, with the paths they stand for.
    """

    arguments: str
    injected: tuple[str, ...] = ()
    files: tuple[FileShown, ...] = ()


class ToolCallback(Protocol):
    """One callable tool. `owner` is the plugin id, or "builtin"."""

    definition: ToolDefinition
    effect: Effect
    owner: str

    def plan(self, input_json: str, context: CallContext) -> CallPlan:
        """The call these arguments make; never raises (bad arguments fail in call)."""
        ...

    async def call(self, input_json: str, context: CallContext) -> str: ...


class SentAsIs:
    """The plan of a tool whose arguments go out as the model wrote them: it takes no
    FileRefs, so the host fills nothing in (built-ins, ERP tools)."""

    def plan(self, input_json: str, context: CallContext) -> CallPlan:
        return CallPlan(input_json)


def unavailable(plugin_id: str) -> str:
    """What a tool answers when its plugin went away after the snapshot
    (spec: host.md#tool-snapshots-and-built-in-names)."""
    return failure(f"Plugin tool is no longer available: {plugin_id}")


def failure(message: str) -> str:
    """The envelope every failed call returns to the model."""
    return json.dumps({"success": False, "error": message}, ensure_ascii=False)


def is_failure(output: str) -> bool:
    """Whether a callback's output is the failure envelope (or says success false)."""
    try:
        value = json.loads(output)
    except json.JSONDecodeError:
        return False
    return isinstance(value, dict) and value.get("success") is False


def parse_arguments(input_json: str) -> dict[str, Any]:
    """The model's arguments as an object; anything else is a ValueError with a reason."""
    try:
        value = json.loads(input_json) if input_json.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"arguments are not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise ValueError("arguments are nested too deeply") from None
    if not isinstance(value, dict):
        raise ValueError("arguments must be a JSON object")
    return value
