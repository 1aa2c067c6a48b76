"""Reading a chat or workflow stream in tests: items named for comparison, event data."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from reference_host.stream.sse_parser import SSEComment, SSEEvent, SSEItem


def kinds(items: Sequence[SSEItem]) -> list[str]:
    """`:connected`-style names for comments, event types (with the tool phase) otherwise."""
    out = []
    for item in items:
        if isinstance(item, SSEComment):
            out.append(f":{item.text}")
        else:
            phase = json.loads(item.data).get("phase")
            out.append(f"{item.type}.{phase}" if phase else item.type)
    return out


def data(item: SSEItem) -> dict[str, Any]:
    assert isinstance(item, SSEEvent), item
    result: dict[str, Any] = json.loads(item.data)
    return result
