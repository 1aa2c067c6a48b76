"""The chat-model interface the agent loop talks to, and the messages it exchanges."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from plugin_spec.tool_definition import ToolDefinition

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for; arguments is the JSON text the model produced."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Message:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    name: str = ""


@dataclass(frozen=True)
class ModelTurn:
    """One answer of the model: text, tool calls, or both."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tokens: int = 0
    thinking: str = ""


class ModelError(Exception):
    """The model could not answer (unreachable, bad reply); the run ends with an error event."""


class ChatModel(Protocol):
    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> ModelTurn: ...


@dataclass
class ScriptedModel:
    """Replays prepared turns, recording what it was shown; the model of tests and the kit.

    When the script runs out it answers with empty text, which ends the run.
    """

    turns: list[ModelTurn]
    seen: list[tuple[list[Message], list[ToolDefinition]]] = field(default_factory=list)

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> ModelTurn:
        self.seen.append((list(messages), list(tools)))
        return self.turns.pop(0) if self.turns else ModelTurn()
