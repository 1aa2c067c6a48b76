"""The OpenAI chat-completions wire format: messages as the server takes them, a whole reply as
a ModelTurn, and error texts cut to a readable excerpt; every malformed shape is a ModelError
that says where it is."""

from __future__ import annotations

import json
import uuid

from plugin_spec.json_types import JsonObject, JsonValue
from reference_host.agent.models import Message, ModelError, ModelTurn, ToolCall

EXCERPT_CHARS = 500


def parse_reply(payload: JsonValue) -> ModelTurn:
    """A chat-completions reply as a ModelTurn; anything malformed is a ModelError."""
    if not isinstance(payload, dict):
        raise ModelError(f"malformed model reply: expected an object, got {kind(payload)}")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices:
        error = payload.get("error")
        if error is not None:
            raise ModelError(f"model server returned an error: {excerpt(error_text(error))}")
        raise ModelError("malformed model reply: no choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ModelError("malformed model reply: choices[0].message is not an object")
    text = content_text(message.get("content"), "choices[0].message.content")
    thinking_raw = message.get("reasoning_content", message.get("reasoning"))
    thinking = thinking_raw if isinstance(thinking_raw, str) else ""
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ModelError("malformed model reply: choices[0].message.tool_calls is not a list")
    calls = tuple(tool_call(raw, index) for index, raw in enumerate(raw_calls))
    usage = payload.get("usage")
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    if isinstance(tokens, bool) or not isinstance(tokens, int):
        tokens = 0
    return ModelTurn(text=text, tool_calls=calls, tokens=tokens, thinking=thinking)


def wire_message(message: Message) -> JsonObject:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: JsonObject = {"role": message.role, "content": message.content}
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


def tool_call(raw: JsonValue, index: int) -> ToolCall:
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


def content_text(content: JsonValue, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(
            text
            for part in content
            if isinstance(part, dict) and isinstance(text := part.get("text"), str)
        )
    raise ModelError(f"malformed model reply: {where} is {kind(content)}")


def error_text(error: JsonValue) -> str:
    if isinstance(error, dict) and isinstance(message := error.get("message"), str):
        return message
    return error if isinstance(error, str) else json.dumps(error, ensure_ascii=False)


def error_excerpt(body: str) -> str:
    """An error body, preferring the OpenAI-style `error.message`."""
    try:
        payload = json.loads(body)
    except ValueError:
        return excerpt(body)
    if isinstance(payload, dict) and "error" in payload:
        return excerpt(error_text(payload["error"]))
    return excerpt(body)


def excerpt(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        return "(empty body)"
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "..."


def kind(value: object) -> str:
    return "null" if value is None else type(value).__name__
