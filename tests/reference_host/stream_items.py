"""Reading a chat or workflow stream in tests: items named for comparison, event data, and a
whole stream read over HTTP while its approvals are decided."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from reference_host.stream.sse_parser import SSEComment, SSEEvent, SSEItem, SSEParser

# kinds() of a chat stream whose one call was asked for and approved, then the reply: the
# approval is item 2, the call's result item 3.
ONE_APPROVED_CALL = [":connected", "tool.call", "approval", "tool.result", "token", "done"]


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


@dataclass
class Decided:
    """A whole event stream, read while each approval in it was decided as it arrived."""

    raw: bytes
    items: list[SSEItem]
    decisions: list[httpx.Response]  # the app's answers to the decisions posted, in order


async def stream_deciding(
    client: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    *,
    approved: bool = True,
    before_deciding: Callable[[], Awaitable[Any]] | None = None,
    method: str = "POST",
) -> Decided:
    """Stream url (answered 200) and post `approved` to each approval as it arrives, after
    awaiting before_deciding() if given; the raw bytes, items and the decisions' answers."""
    raw = bytearray()
    items: list[SSEItem] = []
    decisions: list[httpx.Response] = []
    parser = SSEParser()
    async with client.stream(method, url, json=body) as response:
        assert response.status_code == 200
        async for chunk in response.aiter_bytes():
            raw += chunk
            for item in parser.feed(chunk):
                items.append(item)
                if isinstance(item, SSEEvent) and item.type == "approval":
                    if before_deciding is not None:
                        await before_deciding()
                    decision = {"approved": approved}
                    decisions.append(
                        await client.post(f"/api/approvals/{data(item)['id']}", json=decision)
                    )
    items += parser.close()
    return Decided(bytes(raw), items, decisions)
