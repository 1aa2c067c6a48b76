"""Newline-delimited frames on a byte stream, capped in size (16 MiB;
spec: fengyu-worker.md#framing-on-stdin-and-stdout)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

MAX_FRAME_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Frame:
    """One line without its terminator; `oversize` frames were discarded unread."""

    data: bytes
    oversize: bool = False


def read_frames(stream: BinaryIO, limit: int = MAX_FRAME_BYTES) -> Iterator[Frame]:
    """Yield each line of stream until EOF; a trailing \\r is tolerated.

    A line longer than limit is not held in memory: it is skipped up to its newline and
    reported as an oversize frame, so one bad frame cannot take the process down.
    """
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = stream.readline(limit + 1)
            yield Frame(b"", oversize=True)
            continue
        yield Frame(line.rstrip(b"\n").removesuffix(b"\r"))


def decode_line(raw: bytes) -> tuple[str, dict[str, Any] | None]:
    """A received line as text, and as a JSON object when it is one (else None)."""
    text = raw.rstrip(b"\n").removesuffix(b"\r").decode("utf-8", "replace")
    try:
        message = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        message = None
    return text, message if isinstance(message, dict) else None
