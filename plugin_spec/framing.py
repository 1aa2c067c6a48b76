"""Newline-delimited frames on a byte stream, capped in size (16 MiB;
spec: fengyu-worker.md#framing-on-stdin-and-stdout)."""

from __future__ import annotations

import json

# The SDK a plugin vendors reads its stdin with the same frames and the same cap.
from fengyu_worker import MAX_FRAME_BYTES, Frame, read_frames
from plugin_spec.json_types import JsonObject

__all__ = ["MAX_FRAME_BYTES", "Frame", "decode_line", "read_frames"]


def decode_line(raw: bytes) -> tuple[str, JsonObject | None]:
    """A received line as text, and as a JSON object when it is one (else None)."""
    text = raw.rstrip(b"\n").removesuffix(b"\r").decode("utf-8", "replace")
    try:
        message = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        message = None
    return text, message if isinstance(message, dict) else None
