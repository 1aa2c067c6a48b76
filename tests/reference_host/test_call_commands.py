"""The default scripted model: `/call <tool> <json>` lines become tool calls
(reference_host.agent.call_commands)."""

from __future__ import annotations

import json

import pytest

from plugin_spec.tool_definition import ToolDefinition
from reference_host.agent.call_commands import (
    RESULT_CHARS,
    CallCommandModel,
    CallError,
    parse_calls,
)
from reference_host.agent.models import Message, ModelTurn

TOOLS = [ToolDefinition("web_fetch", "Fetch."), ToolDefinition("excel_execute", "Split.")]


def test_each_line_is_one_call_in_order() -> None:
    calls = parse_calls('/call excel_analyze\n\n  /call excel_configure {"mode": "BY_SHEET"}  \n')
    assert [(c.name, c.arguments) for c in calls] == [
        ("excel_analyze", "{}"),
        ("excel_configure", '{"mode": "BY_SHEET"}'),
    ]
    assert len({c.id for c in calls}) == 2 and all(c.id.startswith("call_") for c in calls)


def test_arguments_keep_their_spaces_and_text() -> None:
    (call,) = parse_calls('/call render {"markdown": "# Hi  there", "n": 1}')
    assert call.arguments == '{"markdown": "# Hi  there", "n": 1}'


def test_a_message_without_a_command_asks_for_nothing() -> None:
    assert parse_calls("hello\nhow do I /call a tool?") == ()
    assert parse_calls("/caller x {}") == ()
    assert parse_calls("") == ()


@pytest.mark.parametrize(
    ("message", "line", "reason"),
    [
        ("/call", 1, "/call needs a tool name"),
        ("/call a {}\nand then", 2, "expected '/call <tool> <json arguments>', found 'and then'"),
        ("/call a {nope}", 1, "the arguments of a are not JSON: Expecting property name"),
        ("/call a [1, 2]", 1, "the arguments of a must be a JSON object"),
        ("/call a " + "[" * 100_000, 1, "the arguments of a are "),
    ],
)
def test_a_malformed_command_names_its_line(message: str, line: int, reason: str) -> None:
    with pytest.raises(CallError) as caught:
        parse_calls(message)
    assert caught.value.line == line
    assert caught.value.reason.startswith(reason)


async def complete(*messages: Message) -> ModelTurn:
    return await CallCommandModel().complete(list(messages), TOOLS)


async def test_the_model_calls_what_the_message_names() -> None:
    turn = await complete(Message("system", "s"), Message("user", "/call web_fetch {}"))
    assert [c.name for c in turn.tool_calls] == ["web_fetch"] and turn.text == ""


async def test_after_the_results_it_answers_with_them() -> None:
    long = json.dumps({"success": True, "text": "x" * (RESULT_CHARS * 2)})
    turn = await complete(
        Message("user", "/call a {}\n/call b {}"),
        Message("assistant", ""),
        Message(
            "tool", '{"success": true, "summary": "Wrote 3 files."}', tool_call_id="1", name="a"
        ),
        Message("tool", '{"success": false, "error": "no workbook"}', tool_call_id="2", name="b"),
        Message("tool", long, tool_call_id="3", name="c"),
        Message("tool", "plain text", tool_call_id="4", name="d"),
    )
    summary, failed, cut, plain = turn.text.split("\n")
    assert (summary, failed, plain) == (
        "a: Wrote 3 files.",
        "b failed: no workbook",
        "d: plain text",
    )
    assert cut.startswith("c: " + long[:RESULT_CHARS])
    assert cut.endswith(f"... ({len(long)} characters)")
    assert turn.tool_calls == ()


async def test_any_other_message_gets_help_naming_the_tools() -> None:
    turn = await complete(Message("user", "hello"))
    assert "/call <tool> <json arguments>" in turn.text
    assert "Tools offered: excel_execute, web_fetch." in turn.text


async def test_a_malformed_command_is_answered_not_called() -> None:
    turn = await complete(Message("user", "/call web_fetch nope"))
    assert turn.tool_calls == ()
    assert turn.text.startswith("Cannot run that /call: line 1: the arguments of web_fetch")
