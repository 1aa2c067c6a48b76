"""Newline-delimited frames on a byte stream, capped in size (16 MiB;
spec: fengyu-worker.md#framing-on-stdin-and-stdout), and the JSON codec they are read and
written with (orjson where installed, with json's meaning: fengyu_worker.encode_json)."""

from __future__ import annotations

# The SDK a plugin vendors reads its stdin with the same frames, cap and codec.
from fengyu_worker import MAX_FRAME_BYTES, Frame, decode_json, encode_json, read_frames
from plugin_spec.json_types import JsonObject

__all__ = [
    "MAX_FRAME_BYTES",
    "Frame",
    "decode_json",
    "decode_line",
    "decode_message",
    "encode_json",
    "line_head",
    "read_frames",
]


def decode_line(raw: bytes) -> tuple[str, JsonObject | None]:
    """A received line as text, and as a JSON object when it is one (else None)."""
    text = raw.rstrip(b"\n").removesuffix(b"\r").decode("utf-8", "replace")
    try:
        message = decode_json(text)
    except (ValueError, RecursionError):
        message = None
    return text, message if isinstance(message, dict) else None


def decode_message(raw: bytes) -> JsonObject | None:
    """decode_line's message alone, read from the bytes without making the text first (a
    1 MiB answer is not copied three times on its way in). Only a line opening with `{`
    in UTF-8 takes that way, where reading the bytes means what reading the text does;
    anything else, and bytes that are not UTF-8, go through decode_line."""
    if raw[:1] == b"{" and raw[1:2] != b"\x00":
        try:
            message = decode_json(raw)
        except (ValueError, RecursionError):
            pass
        else:
            return message if isinstance(message, dict) else None
    return decode_line(raw)[1]


def line_head(raw: bytes, chars: int = 1000) -> str:
    """The first chars characters of a received line as text, without its line break:
    what a report quotes of a line that may be megabytes long."""
    return raw[: 4 * chars].rstrip(b"\n").removesuffix(b"\r").decode("utf-8", "replace")[:chars]
