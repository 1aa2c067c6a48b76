"""Will the providers take these tools? (spec: providers.md)

Each tool, under the name the model sees, is judged against the provider's dated rules: a
rejection is a finding naming the rule, its source and the day it was read; a rewrite by the
provider's SDK is not a finding, but the reports list each change (provider_view.py).
The whole request is judged too: this plugin's tools, the other plugins of the run and the
host's built-ins (not for an MCP server: other hosts mount it beside their own), as one
snapshot. An MCP server is judged only for the providers --conformance-provider names: it is
written for any client and model, and a provider's limits are its host's choice.

The judging is shared; each profile registers it for its own requirement ids, saying where a
rejected tool's finding points: fengyu_providers.py, erp_providers.py, mcp_providers.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from conformance.check_registry import CheckContext
from conformance.fengyu.manifest import FengYuPlugin
from conformance.findings import Finding, NotApplicable
from conformance.profiles import Plugin, is_mcp
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


# Where the finding on a rejected tool points: (tool, pointer, message, fix) -> Finding.
ToolFinding = Callable[[Offered, str, str, str], Finding]


def provider_findings(
    ctx: CheckContext[Plugin, Any], provider_id: str, tool_finding: ToolFinding
) -> Iterator[Finding]:
    """The provider's rejections of the plugin's tools, each where tool_finding puts it, and
    of the whole request that carries them."""
    provider = load_provider(provider_id)
    judged(ctx.plugin)  # nothing to judge is a skip, not a pass
    for tool, judgement in ctx.store.once(judgements, ctx.plugin, provider_id):
        if not judgeable(tool):
            continue
        for noted in judgement.rejections:
            message, at = _message(provider, tool.name, noted), tool.at + noted.hit.pointer
            yield tool_finding(tool, at, message, _fix(noted))
    whole = "/aiTools" if isinstance(ctx.plugin, FengYuPlugin) else ""
    file = {"mcp": "tools/list", "erp": "metadata/tool"}.get(ctx.plugin.profile, "manifest.json")
    carried = "" if is_mcp(ctx.plugin) else " and the host's built-ins"
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
