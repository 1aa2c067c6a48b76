"""OpenAICompatibleModel: the wire format, parsing and errors against respx, then the
streaming answer over real HTTP on loopback (a fake OpenAI server on uvicorn), through the
whole host (create_app + POST /api/chat, read with reference_host.stream.sse_parser)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from plugin_spec.tool_definition import Effect, ToolDefinition
from reference_host.agent.models import Delta, Message, ModelError, ModelTurn, ToolCall
from reference_host.agent.openai_model import OpenAICompatibleModel
from reference_host.http.app import create_app
from reference_host.stream.sse_parser import SSEEvent, SSEItem, SSEParser, parse
from reference_host.support.loopback import serve_on_loopback
from reference_host.tools.callbacks import CallContext, CallPlan, SentAsIs, ToolResult
from tests.conftest import MakeHost
from tests.reference_host.stream_items import data, kinds

BASE = "http://127.0.0.1:8000"
URL = f"{BASE}/v1/chat/completions"
Answer = Callable[[httpx.Response], respx.Route]

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
    "stream": True,
    "stream_options": {"include_usage": True},
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
    """A whole (non-streamed) chat-completions reply."""
    payload: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}}],
    }
    if usage is not None:
        payload["usage"] = usage
    return payload


def chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
) -> bytes:
    """One streamed chunk as its SSE frame; with usage only, the final usage chunk."""
    payload: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk"}
    if delta is None and finish is None:
        payload["choices"] = []
    else:
        payload["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    if usage is not None:
        payload["usage"] = usage
    return frame(payload)


def frame(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def piece(index: int | None, **fields: Any) -> dict[str, Any]:
    """A delta.tool_calls item; function fields (name, arguments) go into `function`."""
    item: dict[str, Any] = {} if index is None else {"index": index}
    function = {k: fields.pop(k) for k in ("name", "arguments") if k in fields}
    item.update(fields)
    if function:
        item["function"] = function
    return item


def calls(*items: dict[str, Any]) -> bytes:
    return chunk({"tool_calls": list(items)})


DONE = b"data: [DONE]\n\n"
SSE_HEADERS = {"content-type": "text/event-stream"}


def sse_response(*frames: bytes) -> httpx.Response:
    return httpx.Response(200, content=b"".join(frames), headers=SSE_HEADERS)


async def run_turn(
    model: OpenAICompatibleModel,
    messages: Sequence[Message] = (),
    tools: Sequence[ToolDefinition] = (),
) -> tuple[list[Delta], ModelTurn]:
    """The deltas of one turn and the whole turn, which must come last."""
    deltas: list[Delta] = []
    turns: list[ModelTurn] = []
    async for part in model.stream(messages, tools):
        assert not turns, "the whole turn must be the stream's last item"
        (turns if isinstance(part, ModelTurn) else deltas).append(part)  # type: ignore[arg-type]
    (turn,) = turns
    return deltas, turn


async def complete(
    model: OpenAICompatibleModel,
    messages: Sequence[Message] = (),
    tools: Sequence[ToolDefinition] = (),
) -> ModelTurn:
    return (await run_turn(model, messages, tools))[1]


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False) as client:
        yield client


@pytest.fixture
def answer(respx_mock: respx.MockRouter) -> Answer:
    """Have the mocked model server answer POST /v1/chat/completions with this response."""
    return lambda response: respx_mock.post(URL).mock(return_value=response)


@pytest.fixture
def model(client: httpx.AsyncClient) -> OpenAICompatibleModel:
    """The model most tests ask: no key, default options, over the respx-mocked client."""
    return OpenAICompatibleModel(BASE, "m", client=client)


# -- the request -------------------------------------------------------------------------


async def test_request_url_headers_and_body(answer: Answer, client: httpx.AsyncClient) -> None:
    route = answer(sse_response(chunk({"content": "You're welcome."}, "stop"), DONE))
    model = OpenAICompatibleModel(BASE + "/", "test-model", api_key="sk-test", client=client)
    turn = await complete(model, CONVERSATION, [FETCH, CLOCK])
    assert turn == ModelTurn(text="You're welcome.")
    request = route.calls.last.request
    assert request.method == "POST"
    assert str(request.url) == URL
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["accept"] == "text/event-stream"
    assert json.loads(request.content) == EXPECTED_BODY
    assert request.extensions["timeout"]["read"] == 120.0


async def test_no_key_no_tools_no_usage(answer: Answer, client: httpx.AsyncClient) -> None:
    route = answer(sse_response(DONE))
    model = OpenAICompatibleModel(BASE, "m", client=client, timeout=7, stream_usage=False)
    await complete(model, [Message(role="user", content="hello")])
    request = route.calls.last.request
    assert "authorization" not in request.headers
    assert json.loads(request.content) == {
        "model": "m",
        "messages": [{"role": "user", "content": "hello"}],
        "stream": True,
    }
    assert request.extensions["timeout"]["read"] == 7


# -- the streamed answer (parsing) -------------------------------------------------------


async def test_deltas_in_order_then_the_whole_turn(
    answer: Answer, model: OpenAICompatibleModel
) -> None:
    answer(
        sse_response(
            b": keep-alive comment\n\n",
            chunk({"role": "assistant", "content": ""}),
            chunk({"reasoning_content": "The user "}),
            chunk({"reasoning": "greets."}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo "}),
            chunk({"content": [{"type": "text", "text": "you"}, {"type": "image"}]}),
            chunk({}, "stop"),
            chunk(usage={"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}),
            DONE,
            frame({"ignored": "after [DONE]"}),
        )
    )
    deltas, turn = await run_turn(model)
    assert deltas == [
        Delta("The user ", thinking=True),
        Delta("greets.", thinking=True),
        Delta("Hel"),
        Delta("lo "),
        Delta("you"),
    ]
    assert turn == ModelTurn(text="Hello you", tokens=5, thinking="The user greets.")


async def test_chunks_split_anywhere_even_inside_a_character(
    answer: Answer, model: OpenAICompatibleModel
) -> None:
    body = chunk({"content": "\u6771\u4eac "}) + chunk({"content": "\U0001f600"}, "stop") + DONE

    async def byte_by_byte() -> AsyncIterator[bytes]:
        for index in range(len(body)):
            yield body[index : index + 1]

    answer(httpx.Response(200, content=byte_by_byte(), headers=SSE_HEADERS))
    deltas, turn = await run_turn(model)
    assert deltas == [Delta("\u6771\u4eac "), Delta("\U0001f600")]
    assert turn.text == "\u6771\u4eac \U0001f600"


async def test_parallel_tool_call_pieces_are_assembled_by_index(
    answer: Answer, model: OpenAICompatibleModel
) -> None:
    answer(
        sse_response(
            chunk({"content": "Checking."}),
            calls(piece(0, id="call_a", type="function", name="web_fetch", arguments="")),
            calls(
                piece(1, id="call_b", type="function", name="clock", arguments='{"zo'),
                piece(0, arguments='{"url":'),
            ),
            calls(piece(2, type="function", name="clock")),  # no id, no arguments
            calls(piece(1, arguments='ne": "\u6771\u4eac"}')),
            calls(piece(0, arguments='"http://example.org"}')),
            chunk({}, "tool_calls"),
            DONE,
        )
    )
    deltas, turn = await run_turn(model)
    assert deltas == [Delta("Checking.")]
    first, second, third = turn.tool_calls
    assert first == ToolCall("call_a", "web_fetch", '{"url":"http://example.org"}')
    assert second == ToolCall("call_b", "clock", '{"zone": "\u6771\u4eac"}')
    assert (third.name, third.arguments) == ("clock", "{}")
    assert third.id.startswith("call_") and len(third.id) > len("call_")
    assert turn.text == "Checking."


async def test_whole_calls_without_index_and_object_arguments(
    answer: Answer, model: OpenAICompatibleModel
) -> None:
    """Some servers send each call whole, without `index`, and arguments as an object."""
    answer(
        sse_response(
            calls(piece(None, id="c1", name="clock", arguments={"zone": "UTC"})),
            calls(piece(None, id="c2", name="web_fetch", arguments='{"url":')),
            calls(piece(None, arguments='"x"}')),  # no id: continues the last call
            calls(piece(None, id="c1", arguments="")),  # a known id: that call
            chunk({}, "tool_calls"),
            DONE,
        )
    )
    turn = await complete(model)
    assert turn.tool_calls == (
        ToolCall("c1", "clock", '{"zone": "UTC"}'),
        ToolCall("c2", "web_fetch", '{"url":"x"}'),
    )


async def test_a_finish_reason_without_done_ends_the_turn(
    answer: Answer, model: OpenAICompatibleModel
) -> None:
    answer(sse_response(chunk({"content": "ok"}, "stop")))
    assert (await complete(model)).text == "ok"


@pytest.mark.parametrize(
    ("frames", "expected"),
    [
        ([b"data: {not json\n\n"], f"model stream from {URL}: chunk 1 is not JSON: {{not json"),
        ([chunk({"content": "a"}), frame([1])], "malformed model stream: chunk 2 is list"),
        (
            [frame({"error": {"message": "overloaded", "type": "server_error"}})],
            "model server returned an error mid-stream: overloaded",
        ),
        ([frame({"error": "quota"})], "model server returned an error mid-stream: quota"),
        ([frame({"choices": "x"})], "chunk 1: choices is not a list"),
        ([frame({"choices": ["x"]})], "chunk 1: choices[0] is not an object"),
        ([frame({"choices": [{"delta": "x"}]})], "chunk 1: choices[0].delta is not an object"),
        ([chunk({"content": 42})], "chunk 1: choices[0].delta.content is int"),
        ([chunk({"tool_calls": {"index": 0}})], "chunk 1: choices[0].delta.tool_calls is not"),
        ([calls("x")], "chunk 1: choices[0].delta.tool_calls[0] is not an object"),  # type: ignore[arg-type]
        ([calls(piece(0, name="a"), piece(-1))], "tool_calls[1].index is not a non-negative"),
        ([calls(piece(0, name="a"), piece("1"))], "tool_calls[1].index is not a non-negative"),  # type: ignore[arg-type]
        ([calls({"index": 0, "function": "f"})], "tool_calls[0].function is not an object"),
        ([calls(piece(0, name=7))], "tool_calls[0].function.name is not a string"),
        (
            [calls(piece(0, id="x", arguments="{}")), chunk({}, "tool_calls"), DONE],
            "malformed model stream: tool call index 0: function.name is missing",
        ),
        (
            [chunk({"content": "half"})],
            f"model stream from {URL} ended without [DONE] or a finish_reason after 1 chunk(s)",
        ),
        ([], "ended without [DONE] or a finish_reason after 0 chunk(s)"),
    ],
)
async def test_malformed_streams(
    answer: Answer, model: OpenAICompatibleModel, frames: list[bytes], expected: str
) -> None:
    answer(sse_response(*frames))
    with pytest.raises(ModelError) as caught:
        await complete(model)
    assert expected in str(caught.value)


async def test_a_turn_larger_than_the_cap_is_an_error(
    answer: Answer, client: httpx.AsyncClient
) -> None:
    answer(sse_response(b"data: " + b"x" * 5000))
    model = OpenAICompatibleModel(BASE, "m", client=client, max_turn_bytes=4096)
    with pytest.raises(ModelError, match=r"exceeded 4096 bytes in one turn$"):
        await complete(model)


# -- a plain JSON answer (a server that ignores stream: true) ----------------------------


async def test_json_reply_text_and_usage(answer: Answer, model: OpenAICompatibleModel) -> None:
    answer(
        httpx.Response(
            200,
            json=reply(
                {"content": "Hello there."},
                usage={"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42},
            ),
        )
    )
    deltas, turn = await run_turn(model)
    assert deltas == [Delta("Hello there.")]
    assert turn == ModelTurn(text="Hello there.", tool_calls=(), tokens=12)


async def test_json_tool_call_reply(answer: Answer, model: OpenAICompatibleModel) -> None:
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
    answer(httpx.Response(200, json=reply(message)))
    deltas, turn = await run_turn(model)
    assert deltas == []
    assert turn.text == ""
    assert turn.tokens == 0
    first, second, third = turn.tool_calls
    assert first == ToolCall("call_a", "web_fetch", '{"url":"http://example.org"}')
    assert second == ToolCall("call_b", "clock", '{"zone": "\u6771\u4eac"}')
    assert third.name == "clock"
    assert third.arguments == "{}"
    assert third.id.startswith("call_")
    assert len(third.id) > len("call_")


async def test_json_mixed_reply_with_reasoning(
    answer: Answer, model: OpenAICompatibleModel
) -> None:
    message = {
        "content": "Let me check.",
        "reasoning_content": "The user wants the time.",
        "tool_calls": [{"id": "c1", "function": {"name": "clock", "arguments": "{}"}}],
    }
    answer(httpx.Response(200, json=reply(message, usage={"completion_tokens": 5})))
    deltas, turn = await run_turn(model, [], [CLOCK])
    assert deltas == [Delta("The user wants the time.", thinking=True), Delta("Let me check.")]
    assert turn == ModelTurn(
        text="Let me check.",
        tool_calls=(ToolCall("c1", "clock", "{}"),),
        tokens=5,
        thinking="The user wants the time.",
    )


async def test_json_content_parts_are_joined(answer: Answer, model: OpenAICompatibleModel) -> None:
    message = {
        "content": [
            {"type": "text", "text": "Hello "},
            {"type": "image"},
            {"type": "text", "text": "you"},
        ],
        "tool_calls": None,
    }
    answer(httpx.Response(200, json=reply(message, usage={"completion_tokens": True})))
    assert await complete(model) == ModelTurn(text="Hello you")


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
async def test_malformed_json_replies(
    answer: Answer, model: OpenAICompatibleModel, payload: Any, expected: str
) -> None:
    answer(
        httpx.Response(
            200, content=json.dumps(payload), headers={"content-type": "application/json"}
        )
    )
    with pytest.raises(ModelError) as caught:
        await complete(model)
    assert expected in str(caught.value)


async def test_neither_an_event_stream_nor_json(
    answer: Answer, model: OpenAICompatibleModel
) -> None:
    answer(httpx.Response(200, html="<html>proxy login</html>"))
    with pytest.raises(ModelError) as caught:
        await complete(model)
    assert str(caught.value) == (
        f"model reply from {URL} is neither an event stream nor JSON "
        "(text/html; charset=utf-8): <html>proxy login</html>"
    )


async def test_a_json_reply_larger_than_the_cap_is_an_error(
    answer: Answer, client: httpx.AsyncClient
) -> None:
    answer(httpx.Response(200, json=reply({"content": "x" * 5000})))
    model = OpenAICompatibleModel(BASE, "m", client=client, max_turn_bytes=4096)
    with pytest.raises(ModelError, match=r"is larger than 4096 bytes$"):
        await complete(model)


# -- errors before the answer ------------------------------------------------------------


async def test_http_error_shows_status_and_api_message(
    answer: Answer, client: httpx.AsyncClient
) -> None:
    answer(
        httpx.Response(
            401, json={"error": {"message": "Incorrect API key provided", "type": "auth"}}
        )
    )
    with pytest.raises(ModelError) as caught:
        await complete(OpenAICompatibleModel(BASE, "m", api_key="bad", client=client))
    assert str(caught.value) == (
        f"model server answered HTTP 401 from {URL}: Incorrect API key provided"
    )


async def test_http_error_body_excerpt_is_bounded(
    answer: Answer, model: OpenAICompatibleModel
) -> None:
    body = "<html>" + "Bad gateway. " * 10_000 + "</html>"  # more than the 64 KiB read
    answer(httpx.Response(502, text=body))
    with pytest.raises(
        ModelError, match=r"^model server answered HTTP 502 .*: <html>Bad gateway"
    ) as caught:
        await complete(model)
    message = str(caught.value)
    assert len(message) < 650
    assert message.endswith("...")


async def test_http_error_with_empty_body(answer: Answer, model: OpenAICompatibleModel) -> None:
    answer(httpx.Response(503))
    with pytest.raises(ModelError, match=r"HTTP 503 .*\(empty body\)$"):
        await complete(model)


async def test_a_server_rejecting_stream_options_is_asked_again_without(
    respx_mock: respx.MockRouter, model: OpenAICompatibleModel
) -> None:
    rejected = httpx.Response(
        422, json={"detail": [{"loc": ["body", "stream_options"], "msg": "extra field"}]}
    )
    route = respx_mock.post(URL).mock(
        side_effect=[rejected, sse_response(chunk({"content": "hi"}, "stop"), DONE)]
    )
    model = model
    assert (await complete(model)).text == "hi"
    first, second = (json.loads(call.request.content) for call in route.calls)
    assert first["stream_options"] == {"include_usage": True}
    assert "stream_options" not in second
    assert model.stream_usage is False


async def test_a_400_not_about_stream_options_is_not_retried(
    answer: Answer, model: OpenAICompatibleModel
) -> None:
    route = answer(httpx.Response(400, json={"error": {"message": "context too long"}}))
    with pytest.raises(ModelError, match=r"HTTP 400 .*: context too long$"):
        await complete(model)
    assert route.call_count == 1


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
    respx_mock: respx.MockRouter, client: httpx.AsyncClient, error: Exception, expected: str
) -> None:
    respx_mock.post(URL).mock(side_effect=error)
    with pytest.raises(ModelError) as caught:
        await complete(OpenAICompatibleModel(BASE, "m", client=client, timeout=3))
    assert str(caught.value) == expected


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (httpx.ReadTimeout("read timed out"), f"model stream from {URL} sent nothing for 3s"),
        (
            httpx.RemoteProtocolError("incomplete chunked read"),
            f"model stream from {URL} broke off: RemoteProtocolError: incomplete chunked read",
        ),
    ],
)
async def test_transport_errors_mid_stream(
    answer: Answer, client: httpx.AsyncClient, error: Exception, expected: str
) -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield chunk({"content": "partial"})
        raise error

    answer(httpx.Response(200, content=broken(), headers=SSE_HEADERS))
    seen: list[Any] = []
    with pytest.raises(ModelError) as caught:
        async for part in OpenAICompatibleModel(BASE, "m", client=client, timeout=3).stream([], []):
            seen.append(part)
    assert seen == [Delta("partial")]
    assert str(caught.value) == expected


async def test_owned_client_is_closed_given_client_is_not(
    answer: Answer, client: httpx.AsyncClient
) -> None:
    answer(sse_response(chunk({"content": "ok"}, "stop"), DONE))
    async with OpenAICompatibleModel(BASE, "m") as owned:
        assert (await complete(owned)).text == "ok"
    assert owned._client.is_closed
    borrowed = OpenAICompatibleModel(BASE, "m", client=client)
    await borrowed.aclose()
    assert not client.is_closed


# -- over real HTTP: a fake OpenAI server and the whole host, both on loopback -----------

GATE_TIMEOUT = 20.0
CLIENT_TIMEOUT = 20.0


@dataclass(frozen=True)
class Drop:
    """In a scripted stream: the fake server breaks the connection here."""


@dataclass(frozen=True)
class Gate:
    """In a scripted stream: the fake server waits here until the test opens the gate."""

    opened: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Endless:
    """In a scripted stream: comments from here on, forever (until the client hangs up)."""


Step = bytes | Drop | Gate | Endless


class FakeOpenAI:
    """A streaming /v1/chat/completions: each request gets the next queued answer (a
    Starlette Response, or steps to stream as text/event-stream); request bodies are kept."""

    def __init__(self) -> None:
        self.answers: deque[Response | list[Step]] = deque()
        self.requests: list[dict[str, Any]] = []

    def app(self) -> Starlette:
        return Starlette(
            routes=[Route("/v1/chat/completions", self._completions, methods=["POST"])]
        )

    async def _completions(self, request: Request) -> Response:
        self.requests.append(await request.json())
        answer = self.answers.popleft()
        if isinstance(answer, Response):
            return answer
        return StreamingResponse(self._steps(answer), media_type="text/event-stream")

    async def _steps(self, steps: list[Step]) -> AsyncIterator[bytes]:
        for step in steps:
            if isinstance(step, Drop):
                raise ConnectionAbortedError("the fake model server drops the connection")
            if isinstance(step, Gate):
                if not await asyncio.to_thread(step.opened.wait, GATE_TIMEOUT):
                    raise TimeoutError("the test never opened the gate")
            elif isinstance(step, Endless):
                while True:
                    yield b": still thinking\n\n"
                    await asyncio.sleep(0)
            else:
                yield step


class Tally(SentAsIs):
    """A read-only built-in (no approval) that records the arguments it was called with."""

    definition = ToolDefinition(
        "tally", "Count n.", {"type": "object", "properties": {"n": {"type": "integer"}}}
    )
    effect = Effect.READ
    owner = "builtin"

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def call(self, plan: CallPlan, context: CallContext) -> ToolResult:
        self.seen.append(plan.arguments.object())
        return ToolResult.of({"success": True, "counted": self.seen[-1]["n"]})


@dataclass
class Loopback:
    fake: FakeOpenAI
    model_url: str
    host_url: str
    tally: Tally


@pytest.fixture
def fake_model() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    with serve_on_loopback(fake.app(), name="fake model server") as url:
        yield fake, url


@pytest.fixture
def loopback(
    fake_model: tuple[FakeOpenAI, str], make_host: MakeHost, tmp_path: Path
) -> Iterator[Loopback]:
    """The host (create_app) on uvicorn, its OpenAICompatibleModel talking to the fake; both
    the model's client and the Host live in the host server's own event loop."""
    fake, model_url = fake_model
    tally = Tally()

    @contextlib.asynccontextmanager
    async def app() -> AsyncIterator[Any]:
        host = make_host(data_dir=tmp_path / "host", builtins=[tally])
        model = OpenAICompatibleModel(model_url, "fake-model")
        try:
            yield create_app(host, lambda: model)
        finally:
            await model.aclose()
            await host.close()

    with serve_on_loopback(make_app=app, lifespan="on", name="host server") as host_url:
        yield Loopback(fake, model_url, host_url, tally)


async def chat(loopback: Loopback) -> list[SSEItem]:
    """POST /api/chat and the whole SSE answer, parsed."""
    async with httpx.AsyncClient(timeout=CLIENT_TIMEOUT, trust_env=False) as client:
        response = await client.post(f"{loopback.host_url}/api/chat", json={"message": "hi"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse(response.content)


async def test_token_deltas_are_separate_token_events_in_order(loopback: Loopback) -> None:
    loopback.fake.answers.append(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "One"}),
            chunk({"content": ", two"}),
            chunk({"content": ", three."}),
            chunk({}, "stop"),
            chunk(usage={"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24}),
            DONE,
        ]
    )
    items = await chat(loopback)
    assert kinds(items) == [":connected", "token", "token", "token", "done"]
    assert [data(item)["text"] for item in items[1:4]] == ["One", ", two", ", three."]
    done = data(items[-1])
    assert (done["text"], done["tokens"]) == ("One, two, three.", 4)
    (request,) = loopback.fake.requests
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    assert request["messages"][-1] == {"role": "user", "content": "hi"}


async def test_the_first_token_reaches_the_client_before_the_model_goes_on(
    loopback: Loopback,
) -> None:
    """The fake waits after its first delta until the client has read that token: a host
    that held tokens back to the end of the turn would never let it go on."""
    gate = Gate()
    loopback.fake.answers.append(
        [chunk({"content": "first"}), gate, chunk({"content": " second"}, "stop"), DONE]
    )
    parser = SSEParser()
    items: list[SSEItem] = []
    url = f"{loopback.host_url}/api/chat"
    async with (
        httpx.AsyncClient(timeout=CLIENT_TIMEOUT, trust_env=False) as client,
        client.stream("POST", url, json={"message": "hi"}) as response,
    ):
        async for raw in response.aiter_bytes():
            items += parser.feed(raw)
            if any(isinstance(item, SSEEvent) for item in items):
                gate.opened.set()
    items += parser.close()
    assert kinds(items) == [":connected", "token", "token", "done"]
    assert [data(item)["text"] for item in items[1:]] == ["first", " second", "first second"]


async def test_thinking_deltas_are_thinking_events(loopback: Loopback) -> None:
    loopback.fake.answers.append(
        [
            chunk({"reasoning_content": "Greet "}),
            chunk({"reasoning_content": "back."}),
            chunk({"content": "Hello!"}, "stop"),
            DONE,
        ]
    )
    items = await chat(loopback)
    assert kinds(items) == [":connected", "thinking", "thinking", "token", "done"]
    assert [data(item)["text"] for item in items[1:4]] == ["Greet ", "back.", "Hello!"]


async def test_parallel_tool_call_deltas_are_assembled_and_run(loopback: Loopback) -> None:
    loopback.fake.answers.append(
        [
            calls(piece(0, id="call_a", type="function", name="tally", arguments="")),
            calls(piece(1, id="call_b", type="function", name="tally", arguments='{"n"')),
            calls(piece(0, arguments='{"n": 1')),
            calls(piece(1, arguments=": 2}"), piece(0, arguments="}")),
            chunk({}, "tool_calls"),
            DONE,
        ]
    )
    loopback.fake.answers.append([chunk({"content": "Counted both."}, "stop"), DONE])
    items = await chat(loopback)
    assert kinds(items) == [
        ":connected",
        "tool.call",
        "tool.result",
        "tool.call",
        "tool.result",
        "token",
        "done",
    ]
    first_call, first_result, second_call, second_result = (data(i) for i in items[1:5])
    assert (first_call["id"], first_call["name"], first_call["arguments"]) == (
        "call_a",
        "tally",
        '{"n": 1}',
    )
    assert (second_call["id"], second_call["arguments"]) == ("call_b", '{"n": 2}')
    assert (first_result["id"], first_result["success"]) == ("call_a", True)
    assert (second_result["id"], second_result["success"]) == ("call_b", True)
    assert loopback.tally.seen == [{"n": 1}, {"n": 2}]
    assert data(items[-1])["text"] == "Counted both."
    _, second_request = loopback.fake.requests
    assistant, result_a, result_b = second_request["messages"][-3:]
    assert [call["id"] for call in assistant["tool_calls"]] == ["call_a", "call_b"]
    assert [call["function"]["arguments"] for call in assistant["tool_calls"]] == [
        '{"n": 1}',
        '{"n": 2}',
    ]
    assert (result_a["tool_call_id"], result_b["tool_call_id"]) == ("call_a", "call_b")
    assert json.loads(result_b["content"]) == {"success": True, "counted": 2}


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        ([Drop()], "broke off: RemoteProtocolError"),
        (
            [frame({"error": {"message": "the GPU fell over", "type": "server_error"}})],
            "model server returned an error mid-stream: the GPU fell over",
        ),
        ([b"data: {oops\n\n"], "chunk 3 is not JSON: {oops"),
        ([], "ended without [DONE] or a finish_reason after 2 chunk(s)"),
    ],
)
async def test_an_error_mid_stream_is_the_last_event_after_the_tokens(
    loopback: Loopback, tail: list[Step], expected: str
) -> None:
    loopback.fake.answers.append([chunk({"content": "Hel"}), chunk({"content": "lo"}), *tail])
    items = await chat(loopback)
    assert kinds(items) == [":connected", "token", "token", "error"]
    assert [data(item)["text"] for item in items[1:3]] == ["Hel", "lo"]
    message = data(items[-1])["message"]
    assert message.startswith("model error: ")
    assert expected in message


async def test_a_non_2xx_answer_is_an_error_event(loopback: Loopback) -> None:
    loopback.fake.answers.append(
        JSONResponse({"error": {"message": "model is loading", "code": 503}}, status_code=503)
    )
    items = await chat(loopback)
    assert kinds(items) == [":connected", "error"]
    assert data(items[-1])["message"] == (
        f"model error: model server answered HTTP 503 from {loopback.model_url}"
        "/v1/chat/completions: model is loading"
    )


async def test_a_plain_json_answer_still_works(loopback: Loopback) -> None:
    loopback.fake.answers.append(
        JSONResponse(reply({"content": "Whole answer."}, usage={"completion_tokens": 3}))
    )
    items = await chat(loopback)
    assert kinds(items) == [":connected", "token", "done"]
    assert data(items[1])["text"] == "Whole answer."
    assert (data(items[-1])["text"], data(items[-1])["tokens"]) == ("Whole answer.", 3)


async def test_a_server_rejecting_stream_options_over_http(loopback: Loopback) -> None:
    loopback.fake.answers.append(
        JSONResponse(
            {"error": {"message": "Unrecognized request argument: stream_options"}},
            status_code=400,
        )
    )
    loopback.fake.answers.append([chunk({"content": "a"}, "stop"), DONE])
    loopback.fake.answers.append([chunk({"content": "b"}, "stop"), DONE])
    assert kinds(await chat(loopback)) == [":connected", "token", "done"]
    assert kinds(await chat(loopback)) == [":connected", "token", "done"]
    asked = ["stream_options" in request for request in loopback.fake.requests]
    assert asked == [True, False, False]


async def test_an_endless_stream_stops_at_the_cap(fake_model: tuple[FakeOpenAI, str]) -> None:
    fake, url = fake_model
    fake.answers.append([chunk({"content": "hmm"}), Endless()])
    seen: list[Any] = []
    async with OpenAICompatibleModel(url, "m", max_turn_bytes=64 * 1024) as model:
        with pytest.raises(ModelError, match=r"exceeded 65536 bytes in one turn$"):
            async for part in model.stream([], []):
                seen.append(part)
    assert seen == [Delta("hmm")]
