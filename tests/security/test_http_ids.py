"""Issue 10 item 5: ids a client chooses never reach a header unchecked.

Before: `conversationId` was copied into the X-Conversation-Id response header as sent: a
non-Latin-1 id gave a 500, an id with CR/LF or NUL made the server drop the connection; a
workflow run did the same. Now ids match reference_host.http.ids.ID_PATTERN (400 otherwise), in
the request models, so the OpenAPI document shows the rule. On real uvicorn on loopback,
where the header is actually written.
"""

from __future__ import annotations

import re

import pytest

from reference_host.http.ids import ID_PATTERN
from tests.conftest import MakeHost
from tests.security.api_server import asgi_client, connection, served

BAD_IDS = {
    "non-latin-1": "caf\u00e9-\u4e2d",
    "latin-1": "caf\u00e9",
    "crlf": "a\r\nSet-Cookie: owned=1",
    "lf": "a\nb",
    "nul": "a\x00b",
    "space": "a b",
    "slash": "a/b",
    "empty": "",
    "too-long": "x" * 129,
}
GOOD_IDS = ["c1", "conv_0b7e1c2a-8d7b-4c31-9a55-4f1d9b9e2f10", "a.b:c-d_E", "x" * 128]
EMPTY_WORKFLOW = {"id": "wf1", "name": "empty", "nodes": []}


@pytest.mark.parametrize("bad", list(BAD_IDS.values()), ids=list(BAD_IDS))
def test_a_bad_conversation_id_is_a_400_on_chat_and_workflow_runs(
    make_host: MakeHost, bad: str
) -> None:
    with served(make_host) as (address, port), connection(address, port) as conn:
        assert conn.request("POST", "/api/workflows", EMPTY_WORKFLOW).status == 201
        for path, body in [
            ("/api/chat", {"message": "hi", "conversationId": bad}),
            ("/api/workflows/wf1/run", {"conversationId": bad}),
        ]:
            answer = conn.request("POST", path, body)
            assert answer.status == 400, (path, answer.body[:300])
            assert "x-conversation-id" not in answer.headers
            (problem,) = answer.json()["problems"]
            assert problem.startswith("conversationId: String should match pattern")
            assert conn.request("GET", "/api/plugins").status == 200  # the connection lives


@pytest.mark.parametrize("good", GOOD_IDS)
def test_a_good_conversation_id_is_echoed(make_host: MakeHost, good: str) -> None:
    with served(make_host) as (address, port), connection(address, port) as conn:
        answer = conn.request("POST", "/api/chat", {"message": "hi", "conversationId": good})
        assert answer.status == 200
        assert answer.headers["x-conversation-id"] == good
        assert answer.headers["content-type"] == "text/event-stream"


async def test_a_made_conversation_id_matches_the_pattern(make_host: MakeHost) -> None:
    async with asgi_client(make_host) as client:
        made = (await client.post("/api/chat", json={"message": "hi"})).headers
        assert re.fullmatch(ID_PATTERN, made["x-conversation-id"])


@pytest.mark.parametrize("bad", ["a b", "caf\u00e9", "x" * 129], ids=["space", "latin-1", "long"])
async def test_a_bad_conversation_id_in_a_grants_path_is_a_400(
    make_host: MakeHost, bad: str
) -> None:
    async with asgi_client(make_host) as client:
        answer = await client.get(f"/api/conversations/{bad}/grants")
        assert answer.status_code == 400
        assert answer.json()["error"] == "invalid request"


async def test_the_document_states_the_id_rule(make_host: MakeHost) -> None:
    async with asgi_client(make_host) as client:
        doc = (await client.get("/openapi.json")).json()
    schemas = doc["components"]["schemas"]
    for model in ("ChatBody", "RunBody"):
        variants = schemas[model]["properties"]["conversationId"]["anyOf"]
        assert {"type": "string", "pattern": ID_PATTERN} in [
            {k: v for k, v in variant.items() if k in ("type", "pattern")} for variant in variants
        ]
    chat = doc["paths"]["/api/chat"]["post"]["responses"]["200"]
    assert chat["headers"]["X-Conversation-Id"]["schema"]["pattern"] == ID_PATTERN
    grants = doc["paths"]["/api/conversations/{conversation_id}/grants"]["get"]
    (parameter,) = grants["parameters"]
    assert parameter["schema"]["pattern"] == ID_PATTERN
