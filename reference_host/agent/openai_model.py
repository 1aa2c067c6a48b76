"""A ChatModel over any OpenAI-compatible `POST /v1/chat/completions` endpoint, streaming.

Works with OpenAI itself and with the usual local servers (vLLM, llama.cpp, Ollama, LM Studio,
LiteLLM). `base_url` is the server root: the request goes to `{base_url}/v1/chat/completions`.

The request asks for `"stream": true`, and the answer is read as `text/event-stream` with the
host's own spec-exact parser (reference_host.stream.sse_parser) as it arrives: each
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
  stops. A huge line or an endless stream is a ModelError, not unbounded memory. The answer
  must come uncompressed (`Accept-Encoding: identity`; any other `Content-Encoding` is a
  ModelError): httpx inflates each network chunk whole, so 64 KiB of gzip could become
  64 MiB before the cap saw it.
- `timeout` bounds every wait for bytes, and also the time between events: a stream of
  keep-alive comments alone is a ModelError after `timeout` seconds, as silence is.
- Whatever breaks mid-stream (the connection drops, a chunk carrying `error`, a data line
  that is not JSON, the stream ending with neither `[DONE]` nor a `finish_reason`) is a
  ModelError; the agent loop ends the chat with an `error` event after the tokens already sent.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Sequence
from types import TracebackType

import httpx

from plugin_spec.json_types import JsonValue, ReadOnlyJson, loads
from plugin_spec.tool_definition import ToolDefinition
from reference_host.agent.models import Message, ModelError, ModelTurn, TurnPart, whole
from reference_host.agent.openai_stream import StreamedTurn
from reference_host.agent.openai_wire import error_excerpt, excerpt, parse_reply, wire_message
from reference_host.stream.sse_parser import SSEEvent, SSEParser

DEFAULT_TIMEOUT = 120.0
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
    ) -> dict[str, ReadOnlyJson]:
        """The JSON body of one completion request."""
        body: dict[str, ReadOnlyJson] = {
            "model": self.model,
            "messages": [wire_message(message) for message in messages],
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
                    for part in whole(await self._read_body(response, content_type)):
                        yield part
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
        headers = {"Accept": "text/event-stream", "Accept-Encoding": "identity"}
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
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise ModelError(
                    f"model server at {self.url} answered with Content-Encoding "
                    f"{excerpt(encoding)}; only an uncompressed answer is read"
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
                f"{error_excerpt(text)}"
            )

    async def _read_stream(self, response: httpx.Response) -> AsyncIterator[TurnPart]:
        parser = SSEParser()
        turn = StreamedTurn()
        read = 0
        last_event = time.monotonic()
        async for chunk in response.aiter_bytes():
            read += len(chunk)
            if read > self._max_turn_bytes:
                raise ModelError(
                    f"model stream from {self.url} exceeded {self._max_turn_bytes} bytes "
                    "in one turn"
                )
            items = parser.feed(chunk)
            if any(isinstance(item, SSEEvent) for item in items):
                last_event = time.monotonic()
            elif time.monotonic() - last_event > self._timeout:
                raise ModelError(
                    f"model stream from {self.url} sent no event for {self._timeout:g}s "
                    "(keep-alive comments only, or a line never ended)"
                )
            for item in items:
                if not isinstance(item, SSEEvent):
                    continue  # comments: keep-alives
                if item.data.strip() == DONE:
                    yield turn.finish(self.url, done=True)
                    return
                for delta in turn.add(self._chunk(item.data, turn.chunks + 1)):
                    yield delta
        yield turn.finish(self.url, done=False)

    def _chunk(self, data: str, number: int) -> JsonValue:
        try:
            return loads(data)
        except (ValueError, RecursionError):
            raise ModelError(
                f"model stream from {self.url}: chunk {number} is not JSON: {excerpt(data)}"
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
                f"({content_type or 'no Content-Type'}): {excerpt(text)}"
            ) from None
        return parse_reply(payload)


async def _read_bounded(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """At most limit bytes of the body, and whether that was all of it."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            return bytes(body[:limit]), False
    return bytes(body), True
