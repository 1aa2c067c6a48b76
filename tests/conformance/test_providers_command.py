"""`plugin-conformance providers` and the report's matrix list every tool a plugin offers.

A tool whose name a provider's name rule refuses was left out of the matrix, and the request
row said the plugin "fits": the provider would answer 400 to any request carrying it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.__main__ import main
from tests.conftest import plugin_with_manifest, tools_manifest

SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "string", "description": "The item."}},
    "required": ["id"],
    "additionalProperties": False,
}
RULES = {"OpenAI": "OPENAI-NAME", "Anthropic": "ANTHROPIC-NAME", "Gemini": "GEMINI-NAME"}


def _plugin(tmp_path: Path) -> Path:
    """A plugin with a portable tool, one no provider takes ("bad name!") and one only
    Gemini takes (a colon)."""
    tools = {"lookup_item": SCHEMA, "bad name!": SCHEMA, "item:get": SCHEMA}
    return plugin_with_manifest(tmp_path, tools_manifest("fixture.bad-tool-name", tools))


def _row(table: str, tool: str) -> list[str]:
    """The cells of the matrix row of tool, after the plugin and tool columns."""
    (line,) = [
        line
        for line in table.splitlines()
        if line.startswith(f"| fixture.bad-tool-name | {tool} |")
    ]
    return [cell.strip() for cell in line.strip("|").split("|")][2:]


def test_a_tool_a_name_rule_refuses_is_listed_as_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["providers", str(_plugin(tmp_path))])
    out, err = capsys.readouterr()

    assert _row(out, "bad name!") == [f"rejected ({rule})" for rule in RULES.values()]
    assert _row(out, "item:get") == [
        "rejected (OPENAI-NAME)",
        "rejected (ANTHROPIC-NAME)",
        "accepted",
    ]
    assert _row(out, "lookup_item") == ["accepted", "accepted", "accepted"]
    request = _row(out, "*one request with the built-ins*")
    assert "fits" not in request
    assert all(rule in cell for cell, rule in zip(request, RULES.values(), strict=True))
    for title, rule in RULES.items():
        assert f"bad name!, {title}: refused by {rule}: name 'bad name!'" in out
    assert status != 0
    assert "bad name!" in err


def test_a_plugin_every_provider_takes_exits_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = plugin_with_manifest(tmp_path, tools_manifest("fixture.fine", {"lookup": SCHEMA}))
    assert main(["providers", str(folder)]) == 0
    assert "| fixture.fine | *one request with the built-ins* | fits | fits | fits |" in (
        capsys.readouterr().out
    )


def test_the_report_matrix_lists_the_rejected_tool(
    run_kit, pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """The kit's Markdown report holds the same matrix, built from the same judgements."""
    run_kit([_plugin(tmp_path)], "-m", "manifest")
    markdown = (pytester.path / "kit-report.md").read_text("utf-8")
    assert _row(markdown, "bad name!") == [f"rejected ({rule})" for rule in RULES.values()]
    assert "fits" not in _row(markdown, "*one request with the built-ins*")
