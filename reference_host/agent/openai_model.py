"""A ChatModel over any OpenAI-compatible `POST /v1/chat/completions` endpoint, streaming.

Works with OpenAI itself and with the usual local servers (vLLM, llama.cpp, Ollama, LM Studio,
LiteLLM). `base_url` is the server root: the request goes to `{base_url}/v1/chat/completions`.

The request asks for `"stream": true`, and the answer is read as `text/event-stream` with the
host's own spec-exact parser (reference_host.sse) as it arrives: each
`choices[0].delta.content` piece is yielded as a Delta at once (`reasoning_content` or
`reasoning` as a thinking Delta), `delta.tool_calls[]` pieces are put together by their `index`
into whole calls, and `data: [DONE]` ends the turn. Choices made:

- `stream_options: {"include_usage": true}` is sent, so the last chunk's usage gives
  ModelTurn.tokens. Servers that validate strictly may reject the field (HTTP 400 or 422
  naming it): the request is then sent once more without it, and this model stops asking
  (tokens are then 0, as with any server that reports no usage). `stream_usage=False` never
  asks.
- A server that ignores `stream` and answers `application/json` is still understood: the body
  is parsed as one whole reply (parse_reply) and its text comes as one delta.
- One turn reads at most `max_turn_bytes` (16 MiB by default: about 60 000 streamed tokens at
  some 250 bytes of JSON each); past that, or on an error body larger than 64 KiB, the read
  stops. A huge line or an endless stream is a ModelError, not unbounded memory.
- Whatever breaks mid-stream (the connection drops, a chunk carrying `error`, a data line
  that is not JSON, the stream ending with neither `[DONE]` nor a `finish_reason`) is a
  ModelError; the agent loop ends the chat with an `error` event after the tokens already sent.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import httpx

from plugin_spec.tool_definition import ToolDefinition
from reference_host.agent.models import Delta, Message, ModelError, ModelTurn, ToolCall, TurnPart
from reference_host.sse import SSEEvent, SSEParser

DEFAULT_TIMEOUT = 120.0
EXCERPT_CHARS = 500
MAX_TURN_BYTES = 16 * 1024 * 1024
MAX_ERROR_BODY_BYTES = 64 * 1024
DONE = "[DONE]"
_USAGE_REJECTED_STATUSES = (400, 422)


class OpenAICompatibleModel:
    """Sends the conversation and the tools, streams back the model's text and tool calls.

    Without a `client` the model owns one and closes it in `aclose()` (or `async with`);
    a given client is left to its owner.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        stream_usage: bool = True,
        max_turn_bytes: int = MAX_TURN_BYTES,
    ) -> None:
        self.url = base_url.rstrip("/") + "/v1/chat/completions"
        self.model = model
        self.stream_usage = stream_usage
        self._api_key = api_key
        self._timeout = timeout
        self._max_turn_bytes = max_turn_bytes
        self._owns_client = client is None
        self._client = client if client is not None else httpx.AsyncClient()

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> OpenAICompatibleModel:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def request_body(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> dict[str, Any]:
        """The JSON body of one completion request."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire_message(message) for message in messages],
            "stream": True,
        }
        if self.stream_usage:
            body["stream_options"] = {"include_usage": True}
        if tools:  # tool_choice without tools is rejected by OpenAI
            body["tools"] = [tool.to_openai() for tool in tools]
            body["tool_choice"] = "auto"
        return body

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[TurnPart]:
        """Deltas as the server sends them, then the whole turn."""
        started = False  # whether the answer's headers arrived (for the error's wording)
        try:
            async with contextlib.AsyncExitStack() as stack:
                response = await self._send(stack, messages, tools)
                started = True
                content_type = response.headers.get("content-type", "").lower()
                if content_type.startswith("text/event-stream"):
                    async for part in self._read_stream(response):
                        yield part
                else:
                    turn = await self._read_body(response, content_type)
                    if turn.thinking:
                        yield Delta(turn.thinking, thinking=True)
                    if turn.text:
                        yield Delta(turn.text)
                    yield turn
        except httpx.TimeoutException:
            if started:
                raise ModelError(
                    f"model stream from {self.url} sent nothing for {self._timeout:g}s"
                ) from None
            raise ModelError(
                f"model request to {self.url} timed out after {self._timeout:g}s"
            ) from None
        except httpx.HTTPError as exc:
            what = "stream from {} broke off" if started else "request to {} failed"
            raise ModelError(
                f"model {what.format(self.url)}: {type(exc).__name__}: {exc}"
            ) from None

    async def _send(
        self,
        stack: contextlib.AsyncExitStack,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
    ) -> httpx.Response:
        """The answer's response once its status is a success; an error status is raised."""
        headers = {"Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        while True:
            asked_usage = self.stream_usage
            response = await stack.enter_async_context(
                self._client.stream(
                    "POST",
                    self.url,
                    json=self.request_body(messages, tools),
                    headers=headers,
                    timeout=self._timeout,
                )
            )
            if response.is_success:
                return response
            body, _ = await _read_bounded(response, MAX_ERROR_BODY_BYTES)
            text = body.decode("utf-8", errors="replace")
            if (
                asked_usage
                and response.status_code in _USAGE_REJECTED_STATUSES
                and "stream_options" in text
            ):
                self.stream_usage = False  # a strict server: ask without it from now on
                await response.aclose()
                continue
            raise ModelError(
                f"model server answered HTTP {response.status_code} from {self.url}: "
                f"{_error_excerpt(text)}"
            )

    async def _read_stream(self, response: httpx.Response) -> AsyncIterator[TurnPart]:
        parser = SSEParser()
        turn = _StreamedTurn()
        read = 0
        async for chunk in response.aiter_bytes():
            read += len(chunk)
            if read > self._max_turn_bytes:
                raise ModelError(
                    f"model stream from {self.url} exceeded {self._max_turn_bytes} bytes "
                    "in one turn"
                )
            for item in parser.feed(chunk):
                if not isinstance(item, SSEEvent):
                    continue  # comments: keep-alives
                if item.data.strip() == DONE:
                    yield turn.finish(self.url, done=True)
                    return
                for delta in turn.add(self._chunk(item.data, turn.chunks + 1)):
                    yield delta
        yield turn.finish(self.url, done=False)

    def _chunk(self, data: str, number: int) -> Any:
        try:
            return json.loads(data)
        except ValueError:
            raise ModelError(
                f"model stream from {self.url}: chunk {number} is not JSON: {_excerpt(data)}"
            ) from None

    async def _read_body(self, response: httpx.Response, content_type: str) -> ModelTurn:
        """A whole (non-streamed) reply; the server ignored `stream` or is not a model."""
        body, complete = await _read_bounded(response, self._max_turn_bytes)
        if not complete:
            raise ModelError(
                f"model reply from {self.url} is larger than {self._max_turn_bytes} bytes"
            )
        text = body.decode("utf-8", errors="replace")
        try:
            payload = json.loads(text)
        except ValueError:
            raise ModelError(
                f"model reply from {self.url} is neither an event stream nor JSON "
                f"({content_type or 'no Content-Type'}): {_excerpt(text)}"
            ) from None
        return parse_reply(payload)


@dataclass
class _PendingCall:
    """A tool call being streamed: its pieces so far."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _StreamedTurn:
    """The turn the chunks add up to."""

    chunks: int = 0
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    last_index: int | None = None
    tokens: int = 0
    finished: bool = False  # a finish_reason was seen

    def add(self, payload: Any) -> list[Delta]:
        """One chunk's deltas; its tool-call pieces and usage are kept for the end."""
        self.chunks += 1
        where = f"chunk {self.chunks}"
        if not isinstance(payload, dict):
            raise ModelError(f"malformed model stream: {where} is {_kind(payload)}, not an object")
        if payload.get("error") is not None:
            raise ModelError(
                f"model server returned an error mid-stream: "
                f"{_excerpt(_error_text(payload['error']))}"
            )
        usage = payload.get("usage")
        tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
        if isinstance(tokens, int) and not isinstance(tokens, bool):
            self.tokens = tokens  # cumulative where a server reports it on every chunk
        choices = payload.get("choices")
        if not choices:  # the usage chunk has none
            return []
        if not isinstance(choices, list):
            raise ModelError(f"malformed model stream: {where}: choices is not a list")
        choice = choices[0]
        if not isinstance(choice, dict):
            raise ModelError(f"malformed model stream: {where}: choices[0] is not an object")
        if choice.get("finish_reason"):
            self.finished = True
        delta = choice.get("delta")
        if delta is None:
            return []
        if not isinstance(delta, dict):
            raise ModelError(f"malformed model stream: {where}: choices[0].delta is not an object")
        out = []
        thinking = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(thinking, str) and thinking:
            self.thinking.append(thinking)
            out.append(Delta(thinking, thinking=True))
        text = _content_text(delta.get("content"), f"{where}: choices[0].delta.content")
        if text:
            self.text.append(text)
            out.append(Delta(text))
        pieces = delta.get("tool_calls")
        if pieces is not None:
            if not isinstance(pieces, list):
                raise ModelError(
                    f"malformed model stream: {where}: choices[0].delta.tool_calls is not a list"
                )
            for position, piece in enumerate(pieces):
                self._add_piece(piece, f"{where}: choices[0].delta.tool_calls[{position}]")
        return out

    def _add_piece(self, piece: Any, where: str) -> None:
        if not isinstance(piece, dict):
            raise ModelError(f"malformed model stream: {where} is not an object")
        call_id = piece.get("id")
        call_id = call_id if isinstance(call_id, str) else ""
        function = piece.get("function")
        if function is None:
            function = {}
        if not isinstance(function, dict):
            raise ModelError(f"malformed model stream: {where}.function is not an object")
        name = function.get("name")
        if name is not None and not isinstance(name, str):
            raise ModelError(f"malformed model stream: {where}.function.name is not a string")
        call = self._call_for(piece.get("index"), call_id, where)
        if call_id and not call.id:
            call.id = call_id
        if name and not call.name:
            call.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments.append(arguments)
        elif arguments is not None:  # some servers send the object itself, whole
            call.arguments.append(json.dumps(arguments, ensure_ascii=False))

    def _call_for(self, index: Any, call_id: str, where: str) -> _PendingCall:
        """The call a piece belongs to: by its index; without one (some servers send each
        call whole), by its id, else a new call when it has an id, else the last call."""
        if index is None:
            for known, call in self.calls.items():
                if call_id and call.id == call_id:
                    self.last_index = known
                    return call
            if call_id or self.last_index is None:
                index = max(self.calls, default=-1) + 1
            else:
                index = self.last_index
        elif isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ModelError(f"malformed model stream: {where}.index is not a non-negative integer")
        self.last_index = index
        return self.calls.setdefault(index, _PendingCall())

    def finish(self, url: str, *, done: bool) -> ModelTurn:
        """The whole turn; a stream cut short (no [DONE], no finish_reason) is an error."""
        if not done and not self.finished:
            raise ModelError(
                f"model stream from {url} ended without [DONE] or a finish_reason "
                f"after {self.chunks} chunk(s)"
            )
        calls = []
        for index in sorted(self.calls):
            pending = self.calls[index]
            if not pending.name:
                raise ModelError(
                    f"malformed model stream: tool call index {index}: function.name is missing"
                )
            calls.append(
                ToolCall(
                    id=pending.id or f"call_{uuid.uuid4().hex}",
                    name=pending.name,
                    arguments="".join(pending.arguments) or "{}",
                )
            )
        return ModelTurn(
            text="".join(self.text),
            tool_calls=tuple(calls),
            tokens=self.tokens,
            thinking="".join(self.thinking),
        )


async def _read_bounded(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """At most limit bytes of the body, and whether that was all of it."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            return bytes(body[:limit]), False
    return bytes(body), True


def parse_reply(payload: Any) -> ModelTurn:
    """A chat-completions reply as a ModelTurn; anything malformed is a ModelError."""
    if not isinstance(payload, dict):
        raise ModelError(f"malformed model reply: expected an object, got {_kind(payload)}")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices:
        error = payload.get("error")
        if error is not None:
            raise ModelError(f"model server returned an error: {_excerpt(_error_text(error))}")
        raise ModelError("malformed model reply: no choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ModelError("malformed model reply: choices[0].message is not an object")
    text = _content_text(message.get("content"), "choices[0].message.content")
    thinking_raw = message.get("reasoning_content", message.get("reasoning"))
    thinking = thinking_raw if isinstance(thinking_raw, str) else ""
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ModelError("malformed model reply: choices[0].message.tool_calls is not a list")
    calls = tuple(_tool_call(raw, index) for index, raw in enumerate(raw_calls))
    usage = payload.get("usage")
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    if isinstance(tokens, bool) or not isinstance(tokens, int):
        tokens = 0
    return ModelTurn(text=text, tool_calls=calls, tokens=tokens, thinking=thinking)


def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        wire["content"] = message.content or None
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments or "{}"},
            }
            for call in message.tool_calls
        ]
    if message.name and message.role != "assistant":
        wire["name"] = message.name
    return wire


def _tool_call(raw: Any, index: int) -> ToolCall:
    where = f"choices[0].message.tool_calls[{index}]"
    if not isinstance(raw, dict):
        raise ModelError(f"malformed model reply: {where} is not an object")
    function = raw.get("function")
    if not isinstance(function, dict):
        raise ModelError(f"malformed model reply: {where}.function is not an object")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ModelError(f"malformed model reply: {where}.function.name is missing")
    arguments = function.get("arguments")
    if arguments is None:
        arguments = "{}"
    elif not isinstance(arguments, str):  # some servers send the object itself
        arguments = json.dumps(arguments, ensure_ascii=False)
    call_id = raw.get("id")
    if not isinstance(call_id, str) or not call_id:  # some local servers omit it
        call_id = f"call_{uuid.uuid4().hex}"
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _content_text(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    raise ModelError(f"malformed model reply: {where} is {_kind(content)}")


def _error_text(error: Any) -> str:
    if isinstance(error, dict) and isinstance(message := error.get("message"), str):
        return message
    return error if isinstance(error, str) else json.dumps(error, ensure_ascii=False)


def _error_excerpt(body: str) -> str:
    """An error body, preferring the OpenAI-style `error.message`."""
    try:
        payload = json.loads(body)
    except ValueError:
        return _excerpt(body)
    if isinstance(payload, dict) and "error" in payload:
        return _excerpt(_error_text(payload["error"]))
    return _excerpt(body)


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        return "(empty body)"
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "..."


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
