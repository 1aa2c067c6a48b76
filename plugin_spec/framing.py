"""Newline-delimited frames on a byte stream, capped in size (16 MiB;
spec: fengyu-worker.md#framing-on-stdin-and-stdout), and the JSON codec they are read and
written with (orjson where installed, with json's meaning: fengyu_worker.encode_json)."""

from __future__ import annotations

# The SDK a plugin vendors reads its stdin with the same frames, cap and codec.
from fengyu_worker import MAX_FRAME_BYTES, Frame, decode_json, encode_json, read_frames
from plugin_spec.json_types import JsonObject

__all__ = ["MAX_FRAME_BYTES", "Frame", "decode_json", "decode_line", "encode_json", "read_frames"]


def decode_line(raw: bytes) -> tuple[str, JsonObject | None]:
    """A received line as text, and as a JSON object when it is one (else None)."""
    text = raw.rstrip(b"\n").removesuffix(b"\r").decode("utf-8", "replace")
    try:
        message = decode_json(text)
    except (ValueError, RecursionError):
        message = None
    return text, message if isinstance(message, dict) else None
