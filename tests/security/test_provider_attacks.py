"""A hostile plugin against the provider profiles (spec: providers.md): schemas and names built
to crash the judge, to blow up its cost or the report, to break the Markdown matrix, and
schemas the worker SDK's null handling (FY-PROV-004) gets wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.__main__ import main as kit_main
from conformance.provider_report import SHOWN, provider_matrix_markdown
from fengyu_worker import Worker
from plugin_spec.providers import checks
from plugin_spec.providers.judge import fits, judge_set, judge_tool
from plugin_spec.providers.rules import all_providers, load_provider
from tests.conftest import plugin_with_manifest, tools_manifest


def manifest(plugin_id: str, tools: dict[str, Any]) -> dict[str, Any]:
    return tools_manifest(plugin_id, tools, "Hostile", "Attacks the provider report.")


def providers_markdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: Any, status: int = 0
) -> str:
    root = plugin_with_manifest(tmp_path, data, "hostile")
    assert kit_main(["providers", str(root)]) == status
    return capsys.readouterr().out


# --- the Markdown matrix ------------------------------------------------------------------

HOSTILE_PROPS = {
    "a`b\nc|d": {"type": "string", "maxLength": 3},
    "</details><b>x": {"type": "integer", "minimum": 1},
}


def test_a_label_with_pipes_and_newlines_keeps_one_row_per_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plugin id is free text: a | or a newline in it split every row of the matrix, so
    verdicts landed under the wrong columns."""
    schema = {"type": "object", "properties": HOSTILE_PROPS}
    out = providers_markdown(
        tmp_path, capsys, manifest("evil|id\n| x | y |", {"ok_tool": schema, "tool_2": schema})
    )
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert len(rows) == 4, out  # header, two tools, the whole request
    for row in rows[1:]:
        # plugin, tool and three providers: five cells, whatever the label holds
        assert row.replace("\\|", "").count("|") == 6, row


def test_a_tool_name_with_a_trailing_newline_is_left_to_the_name_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Python's `$` matches before a final newline, so "tool\\n" once passed the name rules
    (they fullmatch now): every provider rejects it by its name rule, and its row, the name
    escaped, does not break the table."""
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = {"tool\n": schema, "other": schema}
    out = providers_markdown(tmp_path, capsys, manifest("fixture.newline", tools), status=1)
    rows = [line for line in out.splitlines() if line.startswith("| fixture.newline")]
    assert len(rows) == 3, out
    assert rows[0] == (
        "| fixture.newline | tool\\n | rejected (OPENAI-NAME) | rejected (ANTHROPIC-NAME) "
        "| rejected (GEMINI-NAME) |"
    )
    assert rows[1].startswith("| fixture.newline | other |")


def test_property_names_cannot_close_the_details_or_a_code_span(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = {"type": "object", "properties": HOSTILE_PROPS}
    out = providers_markdown(tmp_path, capsys, manifest("fixture.names", {"t": schema}))
    assert out.count("</details>") == 1 and out.rstrip().endswith("</details>"), out
    details = out[out.index("<details>") :].splitlines()[2:-1]
    assert all(line.startswith("- ") for line in details if line), details
    pointer = next(line for line in details if "maxLength" in line)
    # the pointer's backtick and newline stay inside one code span
    assert "``/properties/a`b\\nc|d``" in pointer, pointer


def test_the_details_list_a_bounded_number_of_hits_per_tool() -> None:
    """An anyOf of many untyped branches is one rejection per branch per provider: the
    Markdown lists SHOWN of them and counts the rest (the JSON keeps them all)."""
    schema = {
        "type": "object",
        "properties": {"a": {"anyOf": [{} for _ in range(500)]}},
        "required": ["a"],
    }
    verdicts = {p.id: judge_tool(p, "t", schema).to_json() for p in all_providers()}
    plugin = {
        "label": "fixture.fanout",
        "providers": {"tools": {"t": verdicts}, "request": {p.id: [] for p in all_providers()}},
    }
    lines = provider_matrix_markdown([plugin])
    gemini = [line for line in lines if ", Gemini: " in line]
    assert len(gemini) <= 2 * SHOWN + 2, len(gemini)
    assert any("480 more refusals, listed in the JSON report" in line for line in gemini), gemini


def test_a_long_pointer_is_cut_in_the_markdown() -> None:
    """Long property names nested deep make every pointer as long as the schema: the report
    was about 45 times the manifest (a 3.7 MiB manifest, 168 MB of Markdown)."""
    name = "x" * 5000
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(10):
        schema = {"type": "object", "properties": {name: schema}}
    verdicts = {p.id: judge_tool(p, "t", schema).to_json() for p in all_providers()}
    plugin = {
        "label": "fixture.long",
        "providers": {"tools": {"t": verdicts}, "request": {p.id: [] for p in all_providers()}},
    }
    lines = provider_matrix_markdown([plugin])
    assert max(len(line) for line in lines) < 1000


# --- the judge ------------------------------------------------------------------------------


def test_making_many_properties_required_is_linear() -> None:
    """OPENAI-REQUIRED copied `required` once per optional property (quadratic: 150,000
    properties took 49 s to judge). Judged here on a size that stays fast; the required list
    must come out complete and in order."""
    n = 3000
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(n)}}
    sent = judge_tool(load_provider("openai"), "t", schema).sent
    assert sent["required"] == [f"p{i}" for i in range(n)]
    assert "required" not in schema  # the caller's schema is left alone


def test_a_required_given_by_the_plugin_is_extended_not_shared() -> None:
    required = ["p0"]
    schema = {
        "type": "object",
        "properties": {"p0": {"type": "string"}, "p1": {"type": "string"}},
        "required": required,
    }
    sent = judge_tool(load_provider("openai"), "t", schema).sent
    assert sent["required"] == ["p0", "p1"] and required == ["p0"]


WEIRD = [
    {"type": "object", "properties": {"a": {"$ref": "#"}}},
    {"type": "object", "properties": {"a": {"type": 5}}},
    {"type": "object", "properties": [{"type": "string"}]},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": [["a"], {"a": 1}]},
    {"type": "object", "properties": {"a": {"oneOf": {"type": "string"}, "anyOf": "x"}}},
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 1, "description": [1]}}},
    {"type": "object", "properties": {"a": {"type": "string", "format": {"x": 1}}}},
    {"type": "object", "properties": {"\ud800": {"type": "string"}}},
    {"type": "object", "properties": {"a": {"type": []}}, "$defs": [1]},
    {"type": ["object", "null"], "properties": {"a": {"type": "string"}}},
]


@pytest.mark.parametrize("schema", WEIRD, ids=range(len(WEIRD)))
def test_weird_schemas_are_judged_without_raising(schema: Any) -> None:
    for provider in all_providers():
        judged = judge_tool(provider, "t", schema)
        json.dumps(judged.to_json())
        [n.line() for n in (*judged.rejections, *judged.changes)]
        judge_set(provider, [("t", schema)])
    json.dumps(fits([("t", schema)]))


def test_registered_checks_are_the_ones_the_rule_files_name() -> None:
    """Every rule's check exists (a typo would make the judge raise KeyError on every tool)."""
    named = {r.check for p in all_providers() for r in p.rules}
    assert named <= set(checks.TOOL_CHECKS) | set(checks.SET_CHECKS)


# --- the worker SDK's nulls (FY-PROV-004) --------------------------------------------------


def call(schema: Any, params: Any) -> dict[str, Any]:
    worker = Worker()

    @worker.method("echo", schema)
    def echo(params: dict[str, Any], ctx: Any) -> Any:
        return params

    message = {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": params}
    reply = worker.handle(json.dumps(message).encode())
    assert reply is not None
    return reply


def test_a_required_that_lists_an_object_does_not_crash_registration() -> None:
    """Nulls.of put `required` into a set: an object in it raised TypeError when the method
    was registered, so the worker died at start."""
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": [{"x": 1}]}
    reply = call(schema, {"a": None})
    assert "error" in reply or "result" in reply


def test_a_broken_schema_is_a_clean_error_not_a_crash() -> None:
    """A `properties` that is a list made the validator raise AttributeError out of the
    worker's loop. The plugin's own schema is at fault, not the caller: an internal error."""
    reply = call({"type": "object", "properties": [1]}, {"a": 1})
    assert reply["error"]["code"] == -32603
    assert reply["error"]["data"]["code"] == "INTERNAL_ERROR"
    assert "cannot be evaluated" in reply["error"]["message"]


NULLABLE = {
    "type": "object",
    "properties": {
        "sheet": {"type": "string", "nullable": True},
        "level": {"type": "string", "enum": ["a", "b"], "nullable": True},
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"cell": {"type": "string", "nullable": True}},
                "required": ["cell"],
            },
        },
        "name": {"type": "string"},
    },
    "required": ["name"],
}


def test_nullable_optional_null_reaches_the_handler() -> None:
    """`nullable: true` is how the manifest subset admits null (fengyu-manifest.md): such a
    null is a value, not an omitted property, so the SDK must not drop it."""
    reply = call(NULLABLE, {"name": "n", "sheet": None, "level": None})
    assert reply.get("result") == {"name": "n", "sheet": None, "level": None}, reply


def test_nullable_required_null_is_valid() -> None:
    reply = call(NULLABLE, {"name": "n", "rows": [{"cell": None}]})
    assert reply.get("result") == {"name": "n", "rows": [{"cell": None}]}, reply


def test_a_null_for_an_optional_non_nullable_property_is_still_dropped() -> None:
    reply = call(NULLABLE, {"name": "n", "rows": None})
    assert reply.get("result") == {"name": "n"}, reply


def test_a_null_for_a_required_non_nullable_property_is_still_refused() -> None:
    reply = call(NULLABLE, {"name": None})
    assert reply["error"]["code"] == -32602


def test_a_referenced_object_is_beyond_the_subset_and_no_call_is_half_checked() -> None:
    """An object behind a $ref (what pydantic emits) would get null for its optional
    properties under OpenAI's rewrite, which Nulls, following properties and items only,
    would not drop. A manifest cannot hold a $ref (FY-MAN-011) and the SDK evaluates the
    subset only, so every call of such a method is an internal error naming the keyword."""
    schema = {
        "type": "object",
        "properties": {"address": {"$ref": "#/$defs/address"}},
        "required": ["address"],
        "$defs": {"address": {"type": "object", "properties": {"zip": {"type": "string"}}}},
    }
    error = call(schema, {"address": {"zip": None}})["error"]
    assert (error["code"], error["data"]) == (-32603, {"code": "INTERNAL_ERROR"})
    assert "$ref is beyond the manifest subset" in error["message"]
