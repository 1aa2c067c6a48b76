"""Following a conversation (issue 38 §3): `GET /api/conversations/{id}/events` sends the
conversation's kept events and then each new one, whoever posted the turn, numbered so that a
reconnecting follower resumes. Against the host served by uvicorn on loopback."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from reference_host.agent.models import ModelTurn, ScriptedModel
from reference_host.stream.conversation_log import ConversationLog, user_message
from reference_host.stream.events import token
from reference_host.stream.sse_parser import SSEEvent, SSEParser
from tests.reference_host.test_app import Server, call, chat, client, serve, server

__all__ = ["client", "serve", "server"]  # the fixtures of test_app, used here too

HANG_GUARD = 30.0  # seconds: a bound on a follower that never sees the end, not a pace


async def follow(
    client: httpx.AsyncClient, conversation: str, until: int, **headers: str
) -> list[SSEEvent]:
    """The follow stream's events until `until` turns ended (done or error)."""
    seen: list[SSEEvent] = []
    ended = 0
    parser = SSEParser()
    url = f"/api/conversations/{conversation}/events"
    async with asyncio.timeout(HANG_GUARD):
        async with client.stream("GET", url, headers=headers) as response:
            assert response.status_code == 200
            assert response.headers["Content-Type"] == "text/event-stream"
            async for chunk in response.aiter_bytes():
                for item in parser.feed(chunk):
                    if isinstance(item, SSEEvent):
                        seen.append(item)
                        ended += item.type in ("done", "error")
                if ended >= until:
                    return seen
    raise AssertionError(f"the stream ended after {seen}")


def shown(events: list[SSEEvent]) -> list[tuple[str, str, Any]]:
    return [(e.last_event_id, e.type, json.loads(e.data)) for e in events]


async def test_a_follower_sees_turns_posted_by_another_client(
    client: httpx.AsyncClient, server: Server
) -> None:
    server.models.append(ScriptedModel([call("echo", {"text": "x"}), ModelTurn(text="ok")]))
    following = asyncio.create_task(follow(client, "c-followed", until=1))
    await asyncio.sleep(0)  # the follower may connect before or after the turn: both work
    await chat(client, "say x", conversationId="c-followed")
    events = shown(await following)

    assert [(n, kind) for n, kind, _ in events] == [
        ("1", "message"),
        ("2", "tool"),
        ("3", "tool"),
        ("4", "token"),
        ("5", "done"),
    ]
    assert events[0][2] == {"role": "user", "text": "say x"}
    assert events[1][2]["phase"] == "call" and events[2][2]["phase"] == "result"


async def test_a_late_follower_gets_what_was_kept_and_resumes_after_the_last_it_saw(
    client: httpx.AsyncClient, server: Server
) -> None:
    await chat(client, "first", conversationId="c-late")
    await chat(client, "second", conversationId="c-late")
    everything = shown(await follow(client, "c-late", until=2))
    assert [e[2].get("text") for e in everything if e[1] == "message"] == ["first", "second"]

    resumed = shown(await follow(client, "c-late", until=1, **{"Last-Event-ID": "3"}))
    assert resumed[0][:2] == ("4", "message") and resumed[0][2]["text"] == "second"
    other = await client.get("/api/conversations/c-other/grants")
    assert other.status_code == 200  # conversations are apart: nothing of c-late there


async def test_a_conversation_id_that_is_not_one_is_refused(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/conversations/bad%20id/events")
    assert response.status_code == 400
    assert "error" in response.json()


def test_the_log_is_bounded_per_conversation_and_in_conversations() -> None:
    log = ConversationLog(events_kept=3, conversations_kept=2)
    for n in range(5):
        log.append("a", token(str(n)))
    kept, _ = log.since("a", 0)
    assert [n for n, _ in kept] == [3, 4, 5]
    log.append("b", user_message("hi"))
    log.append("c", user_message("hi"))  # a, the least recently active, is dropped
    assert log.since("a", 0)[0] == []
    assert [n for n, _ in log.since("c", 99)[0]] == [1]  # a number from before counts from 0


def test_the_log_is_bounded_in_bytes_oldest_of_the_least_recent_first() -> None:
    """A tool's output can be a megabyte: the log keeps bytes_kept in all, dropping the
    oldest frames of the conversation least recently added to."""
    big = token("x" * 1000)
    log = ConversationLog(bytes_kept=5 * len(big.encode()))
    for _ in range(3):
        log.append("old", big)
    for _ in range(3):
        log.append("new", big)
    assert log.bytes <= log.bytes_kept
    assert [n for n, _ in log.since("old", 0)[0]] == [2, 3]
    assert [n for n, _ in log.since("new", 0)[0]] == [1, 2, 3]


@pytest.mark.parametrize("after", [0, 1])
def test_the_waiter_is_set_by_the_next_event(after: int) -> None:
    log = ConversationLog()
    log.append("a", token("x"))
    _, changed = log.since("a", after)
    assert not changed.is_set()
    log.append("a", token("y"))
    assert changed.is_set()
