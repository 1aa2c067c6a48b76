"""A spec-exact parser of `text/event-stream`, comments included, for tests and clients.

It follows the WHATWG HTML "Server-sent events" parsing rules (section 9.2.5/9.2.6):

- the stream is UTF-8 (whatever charset a Content-Type claims), decoded with replacement
  characters for bad bytes; one leading U+FEFF BOM is stripped;
- lines end with CRLF, LF or CR; a CR ending one chunk and an LF starting the next are one
  line end (the CR is taken as the end at once, the LF is then skipped);
- an empty line dispatches the event; a line starting with `:` is a comment; otherwise the
  field name is everything before the first `:` and the value everything after it, minus one
  leading space (a line without `:` is a field with an empty value);
- `event` sets the type buffer, `data` appends its value and a LF to the data buffer, `id`
  sets the last event ID buffer unless the value contains U+0000, `retry` sets the
  reconnection time when the value is ASCII digits only; other fields are ignored;
- on dispatch the last event ID is taken from its buffer (which is never reset); an empty
  data buffer dispatches nothing; one trailing LF is removed from the data; the type is
  `message` when none was set; the data and type buffers are then cleared;
- at the end of the stream an event not yet dispatched is discarded, and so is a last line
  without a line end.

Unlike a browser's EventSource, the parser also returns comments (the spec ignores them),
in stream order with the events, because the chat stream's `: connected` and `: keep-alive`
are part of what a test checks. A comment's text is what follows the `:`, minus one leading
space, exactly like a field value.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

BOM = "\ufeff"


@dataclass(frozen=True)
class SSEEvent:
    """A dispatched event: type (`message` by default), data, and the last event ID."""

    type: str
    data: str
    last_event_id: str = ""


@dataclass(frozen=True)
class SSEComment:
    """A comment line: `: connected` has the text `connected`."""

    text: str


SSEItem = SSEEvent | SSEComment


class SSEParser:
    """Incremental: feed() bytes or text as they arrive, close() at the end of the stream.

    `reconnection_time` is the last valid `retry` value (milliseconds) or None;
    `last_event_id` is the event source's last event ID string.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._started = False  # whether the first character (a possible BOM) was seen
        self._line: list[str] = []
        self._skip_lf = False  # the previous chunk ended with CR
        self._data: list[str] = []
        self._type = ""
        self._id_buffer = ""
        self.last_event_id = ""
        self.reconnection_time: int | None = None
        self._closed = False

    def feed(self, chunk: bytes | str) -> list[SSEItem]:
        """Parse a piece of the stream; returns the events and comments it completed."""
        if self._closed:
            raise ValueError("the parser is closed")
        text = self._decoder.decode(chunk) if isinstance(chunk, bytes) else chunk
        return self._text(text)

    def close(self) -> list[SSEItem]:
        """End of stream: anything undispatched (and an unterminated line) is discarded."""
        if self._closed:
            return []
        tail = self._text(self._decoder.decode(b"", final=True))
        self._closed = True
        self._line = []
        self._data = []
        self._type = ""
        return tail

    def _text(self, text: str) -> list[SSEItem]:
        if not self._started and text:
            self._started = True
            if text.startswith(BOM):
                text = text[1:]
        items: list[SSEItem] = []
        start = 0
        index = 0
        length = len(text)
        if self._skip_lf and length:
            self._skip_lf = False
            if text[0] == "\n":
                start = index = 1
        while index < length:
            char = text[index]
            if char == "\r" or char == "\n":
                self._line.append(text[start:index])
                line = "".join(self._line)
                self._line = []
                item = self._process(line)
                if item is not None:
                    items.append(item)
                if char == "\r":
                    if index + 1 == length:
                        self._skip_lf = True
                    elif text[index + 1] == "\n":
                        index += 1
                start = index + 1
            index += 1
        if start < length:
            self._line.append(text[start:])
        return items

    def _process(self, line: str) -> SSEItem | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return SSEComment(_strip_space(line[1:]))
        name, colon, value = line.partition(":")
        value = _strip_space(value) if colon else ""
        if name == "event":
            self._type = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id_buffer = value
        elif name == "retry" and _ascii_digits(value):
            self.reconnection_time = int(value)
        return None

    def _dispatch(self) -> SSEEvent | None:
        self.last_event_id = self._id_buffer
        if not self._data:
            self._type = ""
            return None
        # Each data line appended "value\n"; joining with "\n" is that buffer minus its
        # trailing LF.
        event = SSEEvent(self._type or "message", "\n".join(self._data), self.last_event_id)
        self._data = []
        self._type = ""
        return event


def _ascii_digits(value: str) -> bool:
    return bool(value) and all("0" <= c <= "9" for c in value)


def _strip_space(value: str) -> str:
    return value[1:] if value.startswith(" ") else value


def parse(stream: bytes | str) -> list[SSEItem]:
    """Parse a whole stream: its events and comments in order."""
    parser = SSEParser()
    return [*parser.feed(stream), *parser.close()]


def events(items: list[SSEItem]) -> list[SSEEvent]:
    """Only the events of parsed items."""
    return [item for item in items if isinstance(item, SSEEvent)]
