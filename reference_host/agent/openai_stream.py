"""A streamed chat-completions turn put together chunk by chunk: text and thinking deltas as
they come, tool-call pieces joined by their index into whole calls, usage for the token
count; the turn a cut-short stream would leave is refused."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field

from plugin_spec.json_types import JsonValue
from reference_host.agent.loop import MAX_CALLS_PER_TURN
from reference_host.agent.models import Delta, ModelError, ModelTurn, ToolCall
from reference_host.agent.openai_wire import content_text, error_text, excerpt, kind


@dataclass
class PendingCall:
    """A tool call being streamed: its pieces so far."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamedTurn:
    """The turn the chunks add up to."""

    chunks: int = 0
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: dict[int, PendingCall] = field(default_factory=dict)
    last_index: int | None = None
    tokens: int = 0
    finished: bool = False  # a finish_reason was seen

    def add(self, payload: JsonValue) -> list[Delta]:
        """One chunk's deltas; its tool-call pieces and usage are kept for the end."""
        self.chunks += 1
        where = f"chunk {self.chunks}"
        if not isinstance(payload, dict):
            raise ModelError(f"malformed model stream: {where} is {kind(payload)}, not an object")
        if payload.get("error") is not None:
            raise ModelError(
                f"model server returned an error mid-stream: "
                f"{excerpt(error_text(payload['error']))}"
            )
        usage = payload.get("usage")
        tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
        if isinstance(tokens, int) and not isinstance(tokens, bool):
            self.tokens = tokens  # cumulative where a server reports it on every chunk
        choices = payload.get("choices")
        if not choices:  # the usage chunk has none
            return []
        if not isinstance(choices, list):
            raise ModelError(f"malformed model stream: {where}: choices is not a list")
        choice = choices[0]
        if not isinstance(choice, dict):
            raise ModelError(f"malformed model stream: {where}: choices[0] is not an object")
        if choice.get("finish_reason"):
            self.finished = True
        delta = choice.get("delta")
        if delta is None:
            return []
        if not isinstance(delta, dict):
            raise ModelError(f"malformed model stream: {where}: choices[0].delta is not an object")
        out = []
        thinking = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(thinking, str) and thinking:
            self.thinking.append(thinking)
            out.append(Delta(thinking, thinking=True))
        text = content_text(delta.get("content"), f"{where}: choices[0].delta.content")
        if text:
            self.text.append(text)
            out.append(Delta(text))
        pieces = delta.get("tool_calls")
        if pieces is not None:
            if not isinstance(pieces, list):
                raise ModelError(
                    f"malformed model stream: {where}: choices[0].delta.tool_calls is not a list"
                )
            for position, piece in enumerate(pieces):
                self._add_piece(piece, f"{where}: choices[0].delta.tool_calls[{position}]")
        return out

    def _add_piece(self, piece: JsonValue, where: str) -> None:
        if not isinstance(piece, dict):
            raise ModelError(f"malformed model stream: {where} is not an object")
        call_id = piece.get("id")
        call_id = call_id if isinstance(call_id, str) else ""
        function = piece.get("function")
        if function is None:
            function = {}
        if not isinstance(function, dict):
            raise ModelError(f"malformed model stream: {where}.function is not an object")
        name = function.get("name")
        if name is not None and not isinstance(name, str):
            raise ModelError(f"malformed model stream: {where}.function.name is not a string")
        call = self._call_for(piece.get("index"), call_id, where)
        if call_id and not call.id:
            call.id = call_id
        if name and not call.name:
            call.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments.append(arguments)
        elif arguments is not None:  # some servers send the object itself, whole
            call.arguments.append(json.dumps(arguments, ensure_ascii=False))

    def _call_for(self, index: JsonValue, call_id: str, where: str) -> PendingCall:
        """The call a piece belongs to: by its index; without one (some servers send each
        call whole), by its id, else a new call when it has an id, else the last call."""
        if index is None:
            for known, call in self.calls.items():
                if call_id and call.id == call_id:
                    self.last_index = known
                    return call
            if call_id or self.last_index is None:
                index = max(self.calls, default=-1) + 1
            else:
                index = self.last_index
        elif isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ModelError(f"malformed model stream: {where}.index is not a non-negative integer")
        self.last_index = index
        if index not in self.calls and len(self.calls) >= MAX_CALLS_PER_TURN:
            # the loop would refuse the turn anyway: stop holding more calls now
            raise ModelError(
                f"malformed model stream: more than {MAX_CALLS_PER_TURN} tool calls in one turn"
            )
        return self.calls.setdefault(index, PendingCall())

    def finish(self, url: str, *, done: bool) -> ModelTurn:
        """The whole turn; a stream cut short (no [DONE], no finish_reason) is an error."""
        if not done and not self.finished:
            raise ModelError(
                f"model stream from {url} ended without [DONE] or a finish_reason "
                f"after {self.chunks} chunk(s)"
            )
        calls = []
        for index in sorted(self.calls):
            pending = self.calls[index]
            if not pending.name:
                raise ModelError(
                    f"malformed model stream: tool call index {index}: function.name is missing"
                )
            calls.append(
                ToolCall(
                    id=pending.id or f"call_{uuid.uuid4().hex}",
                    name=pending.name,
                    arguments="".join(pending.arguments) or "{}",
                )
            )
        return ModelTurn(
            text="".join(self.text),
            tool_calls=tuple(calls),
            tokens=self.tokens,
            thinking="".join(self.thinking),
        )
