"""What the kit keeps of one session's frames: bounded, as a server may write gigabytes.

Every frame was kept for the run, so a server flooding stdout (400 MB of notifications, or a
large result on every call) grew the kit to gigabytes. A transcript keeps the session's first
TRANSCRIPT_BYTES / 2 (the opening, what the first findings quote) and its last (the exchange
that failed, when a flood came before it); what falls between is one summary: how many
frames and bytes were not kept. One frame keeps at most its first FRAME_BYTES, with its size.
A frame holds its text only, parsed again when read, so the bound counts what is kept.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

from plugin_spec.json_types import JsonObject, loads

TRANSCRIPT_BYTES = 8 << 20  # kept per session: its first half and its last half
FRAME_BYTES = 1 << 20  # kept of one frame (its head); a longer one is marked cut, with its size
CUT = "cut"  # the `dir` of the summary entry in a saved transcript

Direction = Literal["sent", "received"]


@dataclass(frozen=True)
class Frame:
    """One line on the wire: who wrote it, when (seconds since launch), its text (its head
    when cut) and its size in bytes as written."""

    direction: Direction
    at: float
    text: str
    size: int
    cut: bool = False

    @property
    def message(self) -> JsonObject | None:
        """The line as a JSON object; None when it is not one, or was cut."""
        if self.cut:
            return None
        try:
            message = loads(self.text)
        except (ValueError, RecursionError):
            return None
        return message if isinstance(message, dict) else None

    @property
    def kept(self) -> int:
        """Bytes of it kept (what the bound counts)."""
        return len(self.text.encode()) if self.cut else self.size

    def to_json(self) -> JsonObject:
        entry: JsonObject = {"dir": self.direction, "at": round(self.at, 4), "line": self.text}
        if self.cut:
            entry["size"] = self.size
        return entry


@dataclass
class Dropped:
    """The frames that fell between the first and the last kept."""

    frames: int = 0
    bytes: int = 0

    def describe(self) -> str:
        return f"{self.frames} frames, {self.bytes} bytes not kept"


class Transcript:
    """A session's frames within TRANSCRIPT_BYTES: the first ones, the last ones and a count
    of those between."""

    def __init__(self, limit: int = TRANSCRIPT_BYTES, frame_limit: int = FRAME_BYTES) -> None:
        self.limit = limit
        self.frame_limit = frame_limit
        self._first: list[Frame] = []
        self._first_bytes = 0
        self._last: deque[Frame] = deque()
        self._last_bytes = 0
        self.dropped = Dropped()
        self.cut_frames = 0  # frames kept with their head only

    def add(
        self, direction: Direction, at: float, text: str, size: int, *, cut: bool = False
    ) -> Frame:
        """Record one line (size: its bytes as written; cut: text is already its head)."""
        if size > self.frame_limit and not cut:
            text = text.encode()[: self.frame_limit].decode("utf-8", "ignore")
            cut = True
        frame = Frame(direction, at, text, size, cut)
        self.cut_frames += cut
        half = self.limit // 2
        if not self._last and self._first_bytes + frame.kept <= half:
            self._first.append(frame)
            self._first_bytes += frame.kept
            return frame
        self._last.append(frame)
        self._last_bytes += frame.kept
        while self._last_bytes > half and len(self._last) > 1:
            old = self._last.popleft()
            self._last_bytes -= old.kept
            self.dropped.frames += 1
            self.dropped.bytes += old.size
        return frame

    def frames(self) -> list[Frame]:
        """The frames kept, in order (those between the first and the last are not)."""
        return [*self._first, *self._last]

    @property
    def bytes(self) -> int:
        """Bytes kept."""
        return self._first_bytes + self._last_bytes

    @property
    def complete(self) -> bool:
        return not self.dropped.frames and not self.cut_frames

    def entries(self) -> list[JsonObject]:
        """The saved transcript's lines: the frames, with one summary entry where frames
        were not kept."""
        entries = [f.to_json() for f in self._first]
        if self.dropped.frames:
            entries.append({"dir": CUT, "frames": self.dropped.frames, "bytes": self.dropped.bytes})
        return entries + [f.to_json() for f in self._last]

    def describe_cut(self) -> str:
        """What a finding quoting the transcript says of what it lacks ("" when complete)."""
        parts = []
        if self.dropped.frames:
            parts.append(f"{self.dropped.describe()} between its start and its end")
        if self.cut_frames:
            parts.append(f"{self.cut_frames} line(s) kept only in part (their size is noted)")
        if not parts:
            return ""
        return f"the transcript was cut (the kit keeps {self.limit} bytes): {'; '.join(parts)}"
