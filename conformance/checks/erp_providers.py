"""Will the providers take an ERP plugin's tools? (spec: providers.md; the judging is
providers.py's): a rejected tool's finding points into its tool file."""

from __future__ import annotations

from collections.abc import Iterator

from conformance.checks.erp import ErpContext, check
from conformance.checks.providers import provider_findings
from conformance.findings import Finding
from conformance.provider_view import Offered


def _rejected(ctx: ErpContext, provider_id: str) -> Iterator[Finding]:
    def at_tool(tool: Offered, at: str, message: str, fix: str) -> Finding:
        assert tool.erp is not None  # offered() names the file of every ERP tool
        return ctx.tool_finding(tool.erp, at, message, fix)

    return provider_findings(ctx, provider_id, at_tool)


@check("ERP-PROV-001")
def openai_takes_the_tools(ctx: ErpContext) -> Iterator[Finding]:
    yield from _rejected(ctx, "openai")


@check("ERP-PROV-002")
def anthropic_takes_the_tools(ctx: ErpContext) -> Iterator[Finding]:
    yield from _rejected(ctx, "anthropic")


@check("ERP-PROV-003")
def gemini_takes_the_tools(ctx: ErpContext) -> Iterator[Finding]:
    yield from _rejected(ctx, "gemini")
