"""A ChatModel over any OpenAI-compatible `POST /v1/chat/completions` endpoint (non-streaming).

Works with OpenAI itself and with the usual local servers (vLLM, llama.cpp, Ollama, LM Studio,
LiteLLM). `base_url` is the server root: the request goes to `{base_url}/v1/chat/completions`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from types import TracebackType
from typing import Any

import httpx

from plugin_spec.tool_definition import ToolDefinition
from reference_host.agent.models import Message, ModelError, ModelTurn, ToolCall, TurnModel

DEFAULT_TIMEOUT = 120.0
EXCERPT_CHARS = 500


class OpenAICompatibleModel(TurnModel):
    """Sends the conversation and the tools, returns the model's text and tool calls.

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
    ) -> None:
        self.url = base_url.rstrip("/") + "/v1/chat/completions"
        self.model = model
        self._api_key = api_key
        self._timeout = timeout
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
            "stream": False,
        }
        if tools:  # tool_choice without tools is rejected by OpenAI
            body["tools"] = [tool.to_openai() for tool in tools]
            body["tool_choice"] = "auto"
        return body

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> ModelTurn:
        headers = {"Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        try:
            response = await self._client.post(
                self.url,
                json=self.request_body(messages, tools),
                headers=headers,
                timeout=self._timeout,
            )
        except httpx.TimeoutException:
            raise ModelError(
                f"model request to {self.url} timed out after {self._timeout:g}s"
            ) from None
        except httpx.HTTPError as exc:
            raise ModelError(
                f"model request to {self.url} failed: {type(exc).__name__}: {exc}"
            ) from None
        if not response.is_success:
            raise ModelError(
                f"model server answered HTTP {response.status_code} from {self.url}: "
                f"{_error_excerpt(response.text)}"
            )
        try:
            payload = json.loads(response.text)
        except ValueError:
            raise ModelError(
                f"model reply from {self.url} is not JSON: {_excerpt(response.text)}"
            ) from None
        return parse_reply(payload)


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
