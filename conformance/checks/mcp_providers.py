"""Will the providers take an MCP server's tools? (spec: providers.md; the judging is
providers.py's): a rejected tool's finding points into the server's tools/list answer.

A server is written for any client and model, and a provider's limits are its host's choice:
it is judged only for the providers --conformance-provider names (which makes their
requirements MUST: KitRun.requirements_for).
"""

from __future__ import annotations

from collections.abc import Iterator

from conformance.catalog import Level
from conformance.checks.mcp import McpContext, check
from conformance.checks.providers import provider_findings
from conformance.findings import Finding, NotApplicable
from conformance.provider_view import Offered
from plugin_spec.providers.rules import load_provider


@check("MCP-PROV-001", "MCP-PROV-002", "MCP-PROV-003")
def providers_take_the_tools(ctx: McpContext) -> Iterator[Finding]:
    """OpenAI, Anthropic, Gemini: the catalog names each requirement's provider."""
    provider_id = ctx.requirement.provider
    if ctx.requirement.level is not Level.MUST:
        raise NotApplicable(
            f"an MCP server is judged against {load_provider(provider_id).title}'s rules only "
            f"when the run names the provider: --conformance-provider {provider_id}",
            blocked_by=(),
        )

    def in_listing(tool: Offered, at: str, message: str, fix: str) -> Finding:
        return ctx.server_finding(message, at, fix)

    yield from provider_findings(ctx, provider_id, in_listing)
