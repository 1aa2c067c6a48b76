"""Will the providers take these tools? (spec: providers.md)

Each tool, under the name the model sees, is judged against the provider's dated rules: a
rejection is a finding naming the rule, its source and the day it was read; a rewrite by the
provider's SDK is not a finding, but the reports list each change (provider_view.py).
The whole request is judged too: this plugin's tools, the other plugins of the run and the
host's built-ins (not for an MCP server: other hosts mount it beside their own), as one
snapshot. An MCP server is judged only for the providers --conformance-provider names: it is
written for any client and model, and a provider's limits are its host's choice.
"""

from __future__ import annotations

from collections.abc import Iterator

from conformance.catalog import Level
from conformance.check_registry import CheckContext, check
from conformance.fengyu.manifest import FengYuPlugin
from conformance.findings import Finding, NotApplicable
from conformance.mcp.server import McpServer
from conformance.profiles import Plugin
from conformance.provider_view import (
    Offered,
    judgeable,
    judgements,
    offered,
    own_rules,
    request_refusals_of,
)
from plugin_spec.providers.judge import Noted
from plugin_spec.providers.rules import Provider, load_provider


def judged(plugin: Plugin) -> list[Offered]:
    """The tools a provider can be asked about. None of them, where the plugin has tools,
    means the profile's own rules failed first."""
    tools = offered(plugin)
    if not tools:
        raise NotApplicable("the plugin offers no tool to judge", blocked_by=())
    fit = [t for t in tools if judgeable(t)]
    if not fit:
        name_rule, schema_rule = own_rules(plugin)
        raise NotApplicable(
            f"no tool has a portable name ({name_rule}) and an object inputSchema "
            f"({schema_rule}) to judge"
        )
    return fit


def _message(provider: Provider, tool: str, noted: Noted) -> str:
    rule = noted.rule
    return (
        f"{provider.title} ({provider.mode}) rejects tool {tool!r}: {noted.line()}\n"
        f"rule: {rule.text}\nsource: {rule.source.title}, {rule.source.url} (read {rule.read})"
    )


def _fix(noted: Noted) -> str:
    return f"{noted.rule.id}: {noted.rule.text}"


def provider_findings(ctx: CheckContext, provider_id: str) -> Iterator[Finding]:
    provider = load_provider(provider_id)
    # The run makes the requirements of the providers --conformance-provider names MUST
    # (KitRun.requirements_for): a SHOULD here is a provider the run did not name.
    if isinstance(ctx.plugin, McpServer) and ctx.requirement.level is not Level.MUST:
        raise NotApplicable(
            f"an MCP server is judged against {provider.title}'s rules only when the run names "
            f"the provider: --conformance-provider {provider_id}",
            blocked_by=(),
        )
    judged(ctx.plugin)  # nothing to judge is a skip, not a pass
    for tool, judgement in ctx.store.once(judgements, ctx.plugin, provider_id):
        if not judgeable(tool):
            continue
        for noted in judgement.rejections:
            message, at = _message(provider, tool.name, noted), tool.at + noted.hit.pointer
            if tool.erp is not None:
                yield ctx.tool_finding(tool.erp, at, message, _fix(noted))
            elif tool.server is not None:
                yield tool.server.finding(ctx.requirement.id, message, at, _fix(noted))
            else:
                yield ctx.manifest_finding(at, message, _fix(noted))
    whole = "/aiTools" if isinstance(ctx.plugin, FengYuPlugin) else ""
    file = {"mcp": "tools/list", "erp": "metadata/tool"}.get(ctx.plugin.profile, "manifest.json")
    carried = "" if isinstance(ctx.plugin, McpServer) else " and the host's built-ins"
    for noted in request_refusals_of(ctx.plugin, ctx.peers, provider_id, ctx.store):
        yield ctx.finding(
            f"{provider.title} rejects the request that carries this plugin's tools and the "
            f"run's other plugins'{carried}: {noted.line()}\nrule: {noted.rule.text}\n"
            f"source: {noted.rule.source.title}, {noted.rule.source.url} "
            f"(read {noted.rule.read})",
            file,
            whole,
            fix=_fix(noted),
        )


@check("FY-PROV-001", "ERP-PROV-001", "MCP-PROV-001")
def openai_takes_the_tools(ctx: CheckContext) -> Iterator[Finding]:
    yield from provider_findings(ctx, "openai")


@check("FY-PROV-002", "ERP-PROV-002", "MCP-PROV-002")
def anthropic_takes_the_tools(ctx: CheckContext) -> Iterator[Finding]:
    yield from provider_findings(ctx, "anthropic")


@check("FY-PROV-003", "ERP-PROV-003", "MCP-PROV-003")
def gemini_takes_the_tools(ctx: CheckContext) -> Iterator[Finding]:
    yield from provider_findings(ctx, "gemini")
