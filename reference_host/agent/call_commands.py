"""The default model of `python -m reference_host serve`: tool calls typed by hand.

A plugin author wants to see a tool the way an assistant uses it (the call and result events,
the approval, the FileRef the host injects) without writing a fake model server. A chat
message made of `/call <tool> <json arguments>` lines makes this model call those tools in one
turn (several lines are parallel calls); when the results come back it answers with them.
Any other message gets a short help text naming the tools on offer. The model keeps no state:
each turn is decided from the messages it is shown.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence

from plugin_spec.tool_definition import ToolDefinition
from reference_host.agent.models import Message, ModelTurn, ToolCall, TurnModel

COMMAND = "/call"
RESULT_CHARS = 2000


class CallError(Exception):
    """A `/call` message that cannot be run as written: the line and what is wrong."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


def parse_calls(message: str) -> tuple[ToolCall, ...]:
    """The calls a message asks for: one per `/call <tool> [json]` line; () when the message
    is no command. Blank lines are skipped; once one line is a command, every line must be."""
    lines = [(number, line.strip()) for number, line in enumerate(message.splitlines(), 1)]
    lines = [(number, line) for number, line in lines if line]
    if not any(_is_command(line) for _, line in lines):
        return ()
    return tuple(_call(number, line) for number, line in lines)


def _is_command(line: str) -> bool:
    return line == COMMAND or line.startswith(COMMAND + " ")


def _call(number: int, line: str) -> ToolCall:
    if not _is_command(line):
        raise CallError(number, f"expected '{COMMAND} <tool> <json arguments>', found {line!r}")
    _, _, rest = line.partition(" ")
    name, _, arguments = rest.strip().partition(" ")
    if not name:
        raise CallError(number, f"{COMMAND} needs a tool name")
    arguments = arguments.strip() or "{}"
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise CallError(
            number, f"the arguments of {name} are not JSON: {exc.msg} (column {exc.colno})"
        ) from None
    except RecursionError:
        raise CallError(number, f"the arguments of {name} are nested too deeply") from None
    if not isinstance(value, dict):
        raise CallError(number, f"the arguments of {name} must be a JSON object")
    return ToolCall(f"call_{uuid.uuid4().hex[:12]}", name, arguments)


def help_text(tools: Sequence[ToolDefinition]) -> str:
    names = ", ".join(sorted(tool.name for tool in tools)) or "none"
    return (
        "This is the reference host's scripted model: it calls the tools you name. Send "
        f'`{COMMAND} <tool> <json arguments>`, e.g. `{COMMAND} web_fetch {{"url": "..."}}`, '
        f"one line per call (several lines run in parallel). Tools offered: {names}."
    )


def results_text(answers: Sequence[Message]) -> str:
    """The reply after the tool results, one line per tool: its summary or error when the
    output is FengYu's envelope, else the output itself (cut to RESULT_CHARS)."""
    return "\n".join(_result_line(answer) for answer in answers)


def _result_line(answer: Message) -> str:
    try:
        value = json.loads(answer.content)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        if value.get("success") is False and isinstance(value.get("error"), str):
            return f"{answer.name} failed: {value['error']}"
        if isinstance(value.get("summary"), str):
            return f"{answer.name}: {value['summary']}"
    output = answer.content
    if len(output) > RESULT_CHARS:
        output = f"{output[:RESULT_CHARS]}... ({len(answer.content)} characters)"
    return f"{answer.name}: {output}"


class CallCommandModel(TurnModel):
    """Calls the tools a `/call` message names, then reports their results."""

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> ModelTurn:
        answers: list[Message] = []
        for message in reversed(messages):
            if message.role != "tool":
                break
            answers.insert(0, message)
        if answers:
            return ModelTurn(text=results_text(answers))
        last = messages[-1] if messages else Message("user")
        try:
            calls = parse_calls(last.content) if last.role == "user" else ()
        except CallError as exc:
            return ModelTurn(text=f"Cannot run that {COMMAND}: {exc}.")
        if not calls:
            return ModelTurn(text=help_text(tools))
        return ModelTurn(tool_calls=calls)
