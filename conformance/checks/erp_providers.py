"""Will the providers take an ERP plugin's tools? (spec: providers.md; the judging is
providers.py's): a rejected tool's finding points into its tool file."""

from __future__ import annotations

from collections.abc import Iterator

from conformance.checks.erp import ErpContext, check
from conformance.checks.providers import provider_findings
from conformance.findings import Finding
from conformance.provider_view import Offered


@check("ERP-PROV-001", "ERP-PROV-002", "ERP-PROV-003")
def providers_take_the_tools(ctx: ErpContext) -> Iterator[Finding]:
    """OpenAI, Anthropic, Gemini: the catalog names each requirement's provider."""

    def in_tool_file(tool: Offered, at: str, message: str, fix: str) -> Finding:
        assert tool.erp is not None  # offered() names the file of every ERP tool
        return ctx.tool_finding(tool.erp, at, message, fix)

    yield from provider_findings(ctx, ctx.requirement.provider, in_tool_file)
