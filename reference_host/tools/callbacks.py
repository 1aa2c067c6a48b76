"""What the registry holds: tool definitions as the model sees them, and callbacks that run them.

Built-ins, FengYu worker tools and ERP REST tools are all ToolCallbacks; the agent loop and
the SSE stream cannot tell them apart (spec: host.md#one-host-for-both-profiles). A callback
never raises to the model layer: every failure comes back as the
`{"success": false, "error": ...}` envelope.

Arguments are read once, where they arrive as text, and results stay JSON values: text is made
again only where it leaves the process (the SSE frame, the model's tool message).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from plugin_spec.filerefs import Access, FileKind
from plugin_spec.json_types import JsonObject, JsonValue
from plugin_spec.tool_definition import Effect, ToolDefinition


@dataclass(frozen=True)
class CallContext:
    """Who is calling: the conversation (for FileRef grants), the run, and for ERP tools
    the tenant and the acting user (forwarded, and checked by strict tools)."""

    conversation_id: str = ""
    run_id: str = ""
    tenant: str = ""
    actor: str = ""


@dataclass(frozen=True)
class Arguments:
    """A call's arguments, read once: the object, or the problem that kept them from being
    one (the tool answers it with its own error when called), and the text they are shown
    as (the model's own text when it wrote them)."""

    values: Mapping[str, Any]  # route B puts FileRefs (TypedDicts) in them
    text: str
    problem: str | None = None

    @classmethod
    def read(cls, text: str) -> Arguments:
        """Arguments as the model wrote them."""
        try:
            return cls(parse_arguments(text), text)
        except ValueError as exc:
            return cls({}, text, str(exc))

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Arguments:
        """Arguments the host made (a workflow node's, route B's filled in)."""
        return cls(values, json.dumps(values, ensure_ascii=False))

    def object(self) -> dict[str, Any]:
        """The arguments as a fresh dict; a ValueError saying why when they are not one."""
        if self.problem is not None:
            raise ValueError(self.problem)
        return dict(self.values)


@dataclass(frozen=True)
class ToolResult:
    """What a call answered, as the JSON value it is; ok is false for the failure envelope
    (or any object that says success false), and error is then its message when it has one."""

    output: JsonValue
    ok: bool = True
    error: str | None = None

    @classmethod
    def of(cls, output: JsonValue) -> ToolResult:
        if isinstance(output, dict) and output.get("success") is False:
            error = output.get("error")
            return cls(output, False, error if isinstance(error, str) else None)
        return cls(output)

    def text(self) -> str:
        """The output as JSON text, for where it leaves the process."""
        return json.dumps(self.output, ensure_ascii=False)


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
    """What a call will send, worked out before it runs, so an approval shows exactly that;
    a callback's call takes it, so what runs is what was planned (and route B never fills
    anything in twice).

    arguments are what the callback sends (with route B's FileRefs filled in); injected names
    the parameters the host filled; files lists the granted FileRefs the arguments hold, with
    the paths they stand for.
    """

    arguments: Arguments
    injected: tuple[str, ...] = ()
    files: tuple[FileShown, ...] = ()


class ToolCallback(Protocol):
    """One callable tool. `owner` is the plugin id, "builtin", or `mcp:<server>` for a tool
    of a mounted MCP server (MountedTool)."""

    definition: ToolDefinition
    effect: Effect
    owner: str

    def plan(self, arguments: Arguments, context: CallContext) -> CallPlan:
        """The call these arguments make; never raises (bad arguments fail in call)."""
        ...

    async def call(self, plan: CallPlan, context: CallContext) -> ToolResult: ...


@runtime_checkable
class MountedTool(ToolCallback, Protocol):
    """A tool of a server mounted for the life of the host (an MCP server of --mcp-config):
    its owner is the server (`mcp:<server>`), which has no row in the plugin store, and its
    definition is the server's to change at any time. An approval is bound to the definition
    the server listed when it was mounted (`mounted_digest`); `listed_digest()` is the digest
    of the server's latest listing of the tool (None: it no longer lists it)."""

    mounted_digest: str

    @property
    def server_version(self) -> str: ...

    def listed_digest(self) -> str | None: ...


class SentAsIs:
    """The plan of a tool whose arguments go out as the model wrote them: it takes no
    FileRefs, so the host fills nothing in (built-ins, ERP tools)."""

    def plan(self, arguments: Arguments, context: CallContext) -> CallPlan:
        return CallPlan(arguments)


class Declared(Protocol):
    """A plugin's declaration of one tool (a FengYu aiTool, an ERP tool file)."""

    @property
    def definition(self) -> ToolDefinition: ...

    @property
    def effect(self) -> Effect: ...


D = TypeVar("D", bound=Declared)


class PluginTool(Generic[D]):
    """A tool an installed plugin declares. It belongs to the snapshot it was made for: once
    its plugin is disabled or uninstalled, `gone()` is the answer instead of a call
    (spec: host.md#tool-snapshots-and-built-in-names)."""

    def __init__(self, plugin_id: str, decl: D, available: Callable[[str], bool]) -> None:
        self.owner = plugin_id
        self.decl = decl
        self.definition = decl.definition
        self.effect = decl.effect
        self._available = available

    def gone(self) -> ToolResult | None:
        """The "no longer available" failure, or None while the plugin is there."""
        return None if self._available(self.owner) else unavailable(self.owner)


async def plan_and_call(
    callback: ToolCallback, arguments: Arguments | Mapping[str, Any], context: CallContext
) -> ToolResult:
    """A call without an approval between plan and run (tests, the kit's host checks)."""
    if not isinstance(arguments, Arguments):
        arguments = Arguments.of(arguments)
    return await callback.call(callback.plan(arguments, context), context)


def unavailable(plugin_id: str) -> ToolResult:
    """What a tool answers when its plugin went away after the snapshot
    (spec: host.md#tool-snapshots-and-built-in-names)."""
    return failure(f"Plugin tool is no longer available: {plugin_id}")


def failure(message: str) -> ToolResult:
    """The envelope every failed call returns to the model."""
    return ToolResult({"success": False, "error": message}, False, message)


def parse_arguments(input_json: str) -> JsonObject:
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
