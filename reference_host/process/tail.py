"""The recent stderr of a worker, bounded in bytes as well as lines.

The tail is copied into every WorkerError, and a worker may write lines of any length, so a
line cap alone is no bound: the tail keeps whole lines while they fit, cuts a giant line
short (never buffering more of it than it keeps) and drops the oldest lines first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator

MAX_LINES = 200
MAX_BYTES = 64 * 1024
MAX_LINE_BYTES = 8 * 1024


class StderrTail:
    """Feed it raw stderr chunks; it keeps the last lines within max_lines and max_bytes.

    on_line sees each complete (possibly cut) line once, e.g. to log it.
    """

    def __init__(
        self,
        on_line: Callable[[str], None] | None = None,
        *,
        max_lines: int = MAX_LINES,
        max_bytes: int = MAX_BYTES,
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> None:
        self._lines: deque[tuple[str, int]] = deque()
        self._size = 0
        self._partial = bytearray()
        self._cut = 0
        self._on_line = on_line
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.max_line_bytes = min(max_line_bytes, max_bytes)

    def __iter__(self) -> Iterator[str]:
        return (line for line, _ in self._lines)

    def __len__(self) -> int:
        return len(self._lines)

    @property
    def size(self) -> int:
        """Bytes of line text kept (before decoding), at most max_bytes."""
        return self._size

    @property
    def text(self) -> str:
        return "\n".join(self)

    def feed(self, data: bytes) -> None:
        start = 0
        while (end := data.find(b"\n", start)) != -1:
            self._extend(data[start:end])
            self._end_line()
            start = end + 1
        self._extend(data[start:])

    def close(self) -> None:
        """End of stream: a last line without a newline still counts."""
        if self._partial or self._cut:
            self._end_line()

    def _extend(self, piece: bytes) -> None:
        room = max(self.max_line_bytes - len(self._partial), 0)
        self._partial += piece[:room]
        self._cut += max(len(piece) - room, 0)

    def _end_line(self) -> None:
        raw = bytes(self._partial).rstrip()
        text = raw.decode("utf-8", "replace")
        if self._cut:
            text += f" [{self._cut} more bytes cut]"
        self._partial.clear()
        self._cut = 0
        if self._on_line is not None:
            self._on_line(text)
        self._lines.append((text, len(raw)))
        self._size += len(raw)
        while len(self._lines) > self.max_lines or self._size > self.max_bytes:
            self._size -= self._lines.popleft()[1]
