"""The chat stream's events (spec: host.md#tool-events-on-the-chat-stream) and their SSE
encoding.

`: connected` opens the stream; each event is `event: <type>` plus one `data: <json>` line;
`error` is always the last frame. Tool call and result carry the same id, so parallel calls
can be matched (the spec's compatible superset).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

CONNECTED = b": connected\n\n"
KEEP_ALIVE = b": keep-alive\n\n"


@dataclass(frozen=True)
class Event:
    type: str
    data: dict[str, Any]

    def encode(self) -> bytes:
        """The event's SSE frame, made once: a chat turn's event is written to its stream
        and kept in the conversation's log for followers (conversation_log.py)."""
        return self._frame

    @cached_property
    def _frame(self) -> bytes:
        payload = json.dumps(self.data, ensure_ascii=False, separators=(",", ":"))
        return f"event: {self.type}\ndata: {payload}\n\n".encode()


def token(text: str) -> Event:
    return Event("token", {"text": text})


def thinking(text: str) -> Event:
    return Event("thinking", {"text": text})


def tool_call(call_id: str, name: str, arguments: str) -> Event:
    return Event("tool", {"phase": "call", "id": call_id, "name": name, "arguments": arguments})


def tool_filled(
    call_id: str,
    name: str,
    arguments: str,
    injected: Sequence[str],
    files: Sequence[Mapping[str, Any]] = (),
) -> Event:
    """A call the host filled in before sending (route B: the granted files it injected),
    where no approval shows that: the arguments as sent, the parameters filled, the files."""
    return Event(
        "tool",
        {
            "phase": "filled",
            "id": call_id,
            "name": name,
            "arguments": arguments,
            "injected": list(injected),
            "files": [dict(file) for file in files],
        },
    )


def tool_result(call_id: str, name: str, success: bool, output: str) -> Event:
    return Event(
        "tool",
        {"phase": "result", "id": call_id, "name": name, "success": success, "output": output},
    )


def approval(
    approval_id: str,
    call_id: str,
    name: str,
    effect: str,
    arguments: str,
    injected: Sequence[str] = (),
    files: Sequence[Mapping[str, Any]] = (),
    *,
    plugin: str = "builtin",
    version: str | None = None,
    digest: str = "",
) -> Event:
    """What the user is asked to allow: the arguments as they will be sent (after route B),
    the parameters the host filled in, each granted file with the path it stands for, and the
    tool the approval holds for: its plugin, that plugin's version (null for a built-in) and
    the digest of its definition as shown."""
    return Event(
        "approval",
        {
            "id": approval_id,
            "callId": call_id,
            "name": name,
            "effect": effect,
            "arguments": arguments,
            "injected": list(injected),
            "files": [dict(file) for file in files],
            "plugin": plugin,
            "version": version,
            "digest": digest,
        },
    )


def done(text: str, tokens: int, seconds: float) -> Event:
    tps = round(tokens / seconds, 2) if seconds > 0 else 0.0
    return Event("done", {"text": text, "tokens": tokens, "tps": tps})


def error(message: str) -> Event:
    return Event("error", {"message": message})
