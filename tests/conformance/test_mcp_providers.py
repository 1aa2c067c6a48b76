"""An MCP server and the model providers (spec: providers.md#choosing-providers): judged only
against the providers --conformance-provider names, and its whole request counted without the
reference host's built-ins, which other clients do not have."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.mcp.server import McpServer, McpTool
from conformance.provider_view import request_refusals_of
from conformance.run_store import RunStore
from tests.conformance.test_mcp_fixtures import MCP_FIXTURES, run_on

OPENAI_FORMAT = MCP_FIXTURES / "MCP-PROV-001-openai-format" / "mcp.json"


def test_an_mcp_server_is_judged_against_a_provider_only_when_the_run_names_it(
    pytester: pytest.Pytester,
) -> None:
    result = run_on(pytester, OPENAI_FORMAT, "-m", "listing")

    statuses = result.statuses()
    assert {statuses[f"MCP-PROV-00{n}"] for n in (1, 2, 3)} == {"not-applicable"}
    reasons = {r["requirement"]: r["reason"] for r in result.report["results"]}
    assert "--conformance-provider openai" in reasons["MCP-PROV-001"]
    assert result.result.ret == 0


def server_with(count: int) -> McpServer:
    """A server of `count` tools with a plain object schema each, as loaded."""
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    }
    server = McpServer("many", ("true",), Path("."), {}, (), "--mcp-command true")
    server.tools = [McpTool({"name": f"t{i}", "inputSchema": schema}, i) for i in range(count)]
    return server


def strict_tool_refusals(server: McpServer) -> list[str]:
    refusals = request_refusals_of(server, [], "anthropic", RunStore())
    return [n.rule.id for n in refusals if n.rule.id == "ANTHROPIC-STRICT-TOOLS"]


def test_an_mcp_servers_request_counts_no_host_builtins() -> None:
    """19 tools and the reference host's 2 built-ins would be 21 strict tools, past
    Anthropic's 20; the server's own 21 are still too many."""
    assert strict_tool_refusals(server_with(19)) == []
    assert strict_tool_refusals(server_with(21)) == ["ANTHROPIC-STRICT-TOOLS"]
