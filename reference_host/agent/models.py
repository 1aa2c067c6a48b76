"""The chat-model interface the agent loop talks to, and the messages it exchanges."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
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


@dataclass(frozen=True)
class Delta:
    """A piece of a turn as the model produces it: answer text, or its thinking."""

    text: str
    thinking: bool = False


TurnPart = Delta | ModelTurn
"""What a model's stream yields: deltas as they come, then the whole turn, last."""


class ModelError(Exception):
    """The model could not answer (unreachable, bad reply); the run ends with an error event."""


class ChatModel(Protocol):
    """A model as the agent loop sees it: one turn as a stream.

    The stream yields Delta pieces as the model produces them (the loop sends each one on as
    a `token` or `thinking` event at once) and ends with the whole ModelTurn, whose text and
    thinking are what the deltas added up to.
    """

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[TurnPart]: ...


def whole(turn: ModelTurn) -> list[TurnPart]:
    """A turn that came at once, as a stream: its thinking and its text as one delta each,
    then the turn."""
    parts: list[TurnPart] = []
    if turn.thinking:
        parts.append(Delta(turn.thinking, thinking=True))
    if turn.text:
        parts.append(Delta(turn.text))
    return [*parts, turn]


class TurnModel:
    """A model that answers a turn at once: `complete` gives it whole, and `stream` sends
    its thinking and text as one delta each."""

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> ModelTurn:
        raise NotImplementedError

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[TurnPart]:
        for part in whole(await self.complete(messages, tools)):
            yield part


@dataclass
class ScriptedModel(TurnModel):
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
