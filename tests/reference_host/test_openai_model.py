"""OpenAICompatibleModel against a mocked /v1/chat/completions (respx): wire format and errors."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx

from plugin_spec.tool_definition import ToolDefinition
from reference_host.agent.models import Message, ModelError, ModelTurn, ToolCall
from reference_host.agent.openai_model import OpenAICompatibleModel

BASE = "http://127.0.0.1:8000"
URL = f"{BASE}/v1/chat/completions"

FETCH = ToolDefinition(
    name="web_fetch",
    description="Fetch a page.",
    input_schema={
        "type": "object",
        "properties": {"url": {"type": "string", "description": "The URL."}},
        "required": ["url"],
    },
)
CLOCK = ToolDefinition(name="clock", description="The time.")

CONVERSATION = [
    Message(role="system", content="You are helpful."),
    Message(role="user", content="Read http://example.org and tell me the time."),
    Message(
        role="assistant",
        content="",
        tool_calls=(
            ToolCall(id="call_1", name="web_fetch", arguments='{"url": "http://example.org"}'),
            ToolCall(id="call_2", name="clock", arguments=""),
        ),
    ),
    Message(role="tool", content='{"success": true, "text": "Example"}', tool_call_id="call_1"),
    Message(role="tool", content='{"success": true, "time": "12:00"}', tool_call_id="call_2"),
    Message(role="assistant", content="It says Example; it is noon."),
    Message(role="user", content="Thanks!", name="ann"),
]

EXPECTED_BODY = {
    "model": "test-model",
    "messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Read http://example.org and tell me the time."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "web_fetch", "arguments": '{"url": "http://example.org"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "clock", "arguments": "{}"},
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": '{"success": true, "text": "Example"}',
        },
        {"role": "tool", "tool_call_id": "call_2", "content": '{"success": true, "time": "12:00"}'},
        {"role": "assistant", "content": "It says Example; it is noon."},
        {"role": "user", "content": "Thanks!", "name": "ann"},
    ],
    "stream": False,
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "web_fetch",
                "description": "Fetch a page.",
                "parameters": {
                    "type": "object",
                    "properties": {"url": {"type": "string", "description": "The URL."}},
                    "required": ["url"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "clock",
                "description": "The time.",
                "parameters": {"type": "object"},
            },
        },
    ],
    "tool_choice": "auto",
}


def reply(message: dict[str, Any], usage: dict[str, Any] | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}}],
    }
    if usage is not None:
        payload["usage"] = usage
    return payload


@pytest.fixture
async def client() -> Any:
    async with httpx.AsyncClient(trust_env=False) as client:
        yield client


async def test_request_url_headers_and_body(respx_mock: respx.MockRouter, client: Any) -> None:
    route = respx_mock.post(URL).mock(
        return_value=httpx.Response(200, json=reply({"content": "You're welcome."}))
    )
    model = OpenAICompatibleModel(BASE + "/", "test-model", api_key="sk-test", client=client)
    turn = await model.complete(CONVERSATION, [FETCH, CLOCK])
    assert turn == ModelTurn(text="You're welcome.")
    request = route.calls.last.request
    assert request.method == "POST"
    assert str(request.url) == URL
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["accept"] == "application/json"
    assert json.loads(request.content) == EXPECTED_BODY
    assert request.extensions["timeout"]["read"] == 120.0


async def test_no_key_no_tools(respx_mock: respx.MockRouter, client: Any) -> None:
    route = respx_mock.post(URL).mock(
        return_value=httpx.Response(200, json=reply({"content": "hi"}))
    )
    model = OpenAICompatibleModel(BASE, "m", client=client, timeout=7)
    await model.complete([Message(role="user", content="hello")], [])
    request = route.calls.last.request
    assert "authorization" not in request.headers
    assert json.loads(request.content) == {
        "model": "m",
        "messages": [{"role": "user", "content": "hello"}],
        "stream": False,
    }
    assert request.extensions["timeout"]["read"] == 7


async def test_text_only_reply(respx_mock: respx.MockRouter, client: Any) -> None:
    respx_mock.post(URL).mock(
        return_value=httpx.Response(
            200,
            json=reply(
                {"content": "Hello there."},
                usage={"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42},
            ),
        )
    )
    turn = await OpenAICompatibleModel(BASE, "m", client=client).complete([], [])
    assert turn == ModelTurn(text="Hello there.", tool_calls=(), tokens=12)


async def test_tool_call_reply(respx_mock: respx.MockRouter, client: Any) -> None:
    message = {
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "web_fetch", "arguments": '{"url":"http://example.org"}'},
            },
            {
                "id": "call_b",
                "type": "function",
                "function": {"name": "clock", "arguments": {"zone": "\u6771\u4eac"}},
            },
            {"type": "function", "function": {"name": "clock"}},
        ],
    }
    respx_mock.post(URL).mock(return_value=httpx.Response(200, json=reply(message)))
    turn = await OpenAICompatibleModel(BASE, "m", client=client).complete([], [FETCH, CLOCK])
    assert turn.text == ""
    assert turn.tokens == 0
    first, second, third = turn.tool_calls
    assert first == ToolCall("call_a", "web_fetch", '{"url":"http://example.org"}')
    assert second == ToolCall("call_b", "clock", '{"zone": "\u6771\u4eac"}')
    assert third.name == "clock"
    assert third.arguments == "{}"
    assert third.id.startswith("call_")
    assert len(third.id) > len("call_")


async def test_mixed_reply_with_reasoning(respx_mock: respx.MockRouter, client: Any) -> None:
    message = {
        "content": "Let me check.",
        "reasoning_content": "The user wants the time.",
        "tool_calls": [{"id": "c1", "function": {"name": "clock", "arguments": "{}"}}],
    }
    respx_mock.post(URL).mock(
        return_value=httpx.Response(200, json=reply(message, usage={"completion_tokens": 5}))
    )
    turn = await OpenAICompatibleModel(BASE, "m", client=client).complete([], [CLOCK])
    assert turn == ModelTurn(
        text="Let me check.",
        tool_calls=(ToolCall("c1", "clock", "{}"),),
        tokens=5,
        thinking="The user wants the time.",
    )


async def test_content_parts_are_joined(respx_mock: respx.MockRouter, client: Any) -> None:
    message = {
        "content": [
            {"type": "text", "text": "Hello "},
            {"type": "image"},
            {"type": "text", "text": "you"},
        ],
        "tool_calls": None,
    }
    respx_mock.post(URL).mock(
        return_value=httpx.Response(200, json=reply(message, usage={"completion_tokens": True}))
    )
    turn = await OpenAICompatibleModel(BASE, "m", client=client).complete([], [])
    assert turn == ModelTurn(text="Hello you")


async def test_http_error_shows_status_and_api_message(
    respx_mock: respx.MockRouter, client: Any
) -> None:
    respx_mock.post(URL).mock(
        return_value=httpx.Response(
            401, json={"error": {"message": "Incorrect API key provided", "type": "auth"}}
        )
    )
    with pytest.raises(ModelError) as caught:
        await OpenAICompatibleModel(BASE, "m", api_key="bad", client=client).complete([], [])
    assert str(caught.value) == (
        f"model server answered HTTP 401 from {URL}: Incorrect API key provided"
    )


async def test_http_error_body_excerpt_is_bounded(
    respx_mock: respx.MockRouter, client: Any
) -> None:
    body = "<html>" + "Bad gateway. " * 1000 + "</html>"
    respx_mock.post(URL).mock(return_value=httpx.Response(502, text=body))
    with pytest.raises(
        ModelError, match=r"^model server answered HTTP 502 .*: <html>Bad gateway"
    ) as caught:
        await OpenAICompatibleModel(BASE, "m", client=client).complete([], [])
    message = str(caught.value)
    assert len(message) < 650
    assert message.endswith("...")


async def test_http_error_with_empty_body(respx_mock: respx.MockRouter, client: Any) -> None:
    respx_mock.post(URL).mock(return_value=httpx.Response(503))
    with pytest.raises(ModelError, match=r"HTTP 503 .*\(empty body\)$"):
        await OpenAICompatibleModel(BASE, "m", client=client).complete([], [])


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (httpx.ReadTimeout("read timed out"), f"model request to {URL} timed out after 3s"),
        (httpx.ConnectTimeout("connect timed out"), f"model request to {URL} timed out after 3s"),
        (
            httpx.ConnectError("connection refused"),
            f"model request to {URL} failed: ConnectError: connection refused",
        ),
        (
            httpx.RemoteProtocolError("peer closed"),
            f"model request to {URL} failed: RemoteProtocolError: peer closed",
        ),
    ],
)
async def test_transport_errors(
    respx_mock: respx.MockRouter, client: Any, error: Exception, expected: str
) -> None:
    respx_mock.post(URL).mock(side_effect=error)
    with pytest.raises(ModelError) as caught:
        await OpenAICompatibleModel(BASE, "m", client=client, timeout=3).complete([], [])
    assert str(caught.value) == expected


async def test_non_json_reply(respx_mock: respx.MockRouter, client: Any) -> None:
    respx_mock.post(URL).mock(return_value=httpx.Response(200, text="<html>proxy login</html>"))
    with pytest.raises(ModelError) as caught:
        await OpenAICompatibleModel(BASE, "m", client=client).complete([], [])
    assert str(caught.value) == f"model reply from {URL} is not JSON: <html>proxy login</html>"


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ([], "malformed model reply: expected an object, got list"),
        (None, "malformed model reply: expected an object, got null"),
        ({}, "malformed model reply: no choices"),
        ({"choices": []}, "malformed model reply: no choices"),
        ({"choices": "x"}, "malformed model reply: no choices"),
        (
            {"error": {"message": "model overloaded", "code": 529}},
            "model server returned an error: model overloaded",
        ),
        ({"error": "quota exceeded"}, "model server returned an error: quota exceeded"),
        ({"choices": [{}]}, "choices[0].message is not an object"),
        ({"choices": ["text"]}, "choices[0].message is not an object"),
        (reply({"content": 42}), "choices[0].message.content is int"),
        (reply({"content": "", "tool_calls": {"id": "x"}}), "tool_calls is not a list"),
        (reply({"tool_calls": ["call"]}), "tool_calls[0] is not an object"),
        (reply({"tool_calls": [{"id": "x"}]}), "tool_calls[0].function is not an object"),
        (
            reply({"tool_calls": [{"id": "x", "function": {"arguments": "{}"}}]}),
            "tool_calls[0].function.name is missing",
        ),
        (
            reply({"tool_calls": [{"id": "x", "function": {"name": "", "arguments": "{}"}}]}),
            "tool_calls[0].function.name is missing",
        ),
    ],
)
async def test_malformed_replies(
    respx_mock: respx.MockRouter, client: Any, payload: Any, expected: str
) -> None:
    respx_mock.post(URL).mock(return_value=httpx.Response(200, content=json.dumps(payload)))
    with pytest.raises(ModelError) as caught:
        await OpenAICompatibleModel(BASE, "m", client=client).complete([], [])
    assert expected in str(caught.value)


async def test_owned_client_is_closed_given_client_is_not(
    respx_mock: respx.MockRouter, client: Any
) -> None:
    respx_mock.post(URL).mock(return_value=httpx.Response(200, json=reply({"content": "ok"})))
    async with OpenAICompatibleModel(BASE, "m") as owned:
        assert (await owned.complete([], [])).text == "ok"
    assert owned._client.is_closed
    borrowed = OpenAICompatibleModel(BASE, "m", client=client)
    await borrowed.aclose()
    assert not client.is_closed
