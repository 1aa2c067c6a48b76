"""The recent events of each conversation, for clients that follow it
(spec: host.md#following-a-conversation).

A chat turn's events go to the client that posted it. Another client (the dev console opened
on a conversation's id, while turns are posted with curl or by a script) follows the
conversation instead: it is sent what the log keeps, then each event as it happens, every
one numbered so that a follower that reconnects resumes after the last it saw. A turn starts
with a `message` event carrying the user's text, which the chat stream itself does not repeat.

Kept in memory and bounded (EVENTS_KEPT per conversation, CONVERSATIONS_KEPT conversations,
BYTES_KEPT in all, the least recently active dropped first): a view of what is happening,
not a history store; a host restart starts it empty."""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from reference_host.stream.events import Event

EVENTS_KEPT = 500
CONVERSATIONS_KEPT = 256
BYTES_KEPT = 64 * 2**20  # in all: a tool's output can be a megabyte, and turns go on for days


def user_message(text: str) -> Event:
    """A turn's first event in the log: what the user asked."""
    return Event("message", {"role": "user", "text": text})


@dataclass
class _Conversation:
    frames: deque[tuple[int, bytes]] = field(default_factory=deque)  # number, SSE frame
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    last: int = 0


class ConversationLog:
    """Numbered events per conversation, as the SSE frames a follower is sent, and
    followers woken when one is added."""

    def __init__(
        self,
        events_kept: int = EVENTS_KEPT,
        conversations_kept: int = CONVERSATIONS_KEPT,
        bytes_kept: int = BYTES_KEPT,
    ) -> None:
        self.events_kept = events_kept
        self.conversations_kept = conversations_kept
        self.bytes_kept = bytes_kept
        self._conversations: OrderedDict[str, _Conversation] = OrderedDict()
        self.bytes = 0  # of every frame kept

    def append(self, conversation: str, event: Event) -> int:
        """Keep event as the conversation's next; returns its number (from 1)."""
        frame = event.encode()
        kept = self._get(conversation)
        kept.last += 1
        kept.frames.append((kept.last, frame))
        self.bytes += len(frame)
        if len(kept.frames) > self.events_kept:
            self.bytes -= len(kept.frames.popleft()[1])
        self._trim()
        kept.changed.set()
        kept.changed = asyncio.Event()  # the next wait is for the next event
        return kept.last

    def since(self, conversation: str, after: int) -> tuple[list[tuple[int, bytes]], asyncio.Event]:
        """The kept frames numbered above after (older ones may be gone: bounded), and what
        is set when the next one is added. A number above the conversation's last (given
        before the host restarted, or before the conversation was dropped) counts from 0."""
        kept = self._get(conversation)
        if after > kept.last:
            after = 0
        return [(n, f) for n, f in kept.frames if n > after], kept.changed

    def _get(self, conversation: str) -> _Conversation:
        kept = self._conversations.get(conversation)
        if kept is None:
            kept = _Conversation()
            self._conversations[conversation] = kept
            while len(self._conversations) > self.conversations_kept:
                _, dropped = self._conversations.popitem(last=False)
                self.bytes -= sum(len(f) for _, f in dropped.frames)
        self._conversations.move_to_end(conversation)
        return kept

    def _trim(self) -> None:
        """Within bytes_kept: the oldest frames of the least recently active conversations
        go first (the one just added to is the most recent)."""
        for kept in self._conversations.values():
            while kept.frames and self.bytes > self.bytes_kept:
                self.bytes -= len(kept.frames.popleft()[1])
            if self.bytes <= self.bytes_kept:
                return
