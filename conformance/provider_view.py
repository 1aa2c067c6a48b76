"""What each model provider makes of a plugin's tools: every tool as the model is offered it,
judged against the provider's dated rules (plugin_spec.providers), and what keeps the whole
request of a run's tools and the host's built-ins from the provider. The FY-PROV and
ERP-PROV checks turn it into findings; every run's summary shows it as the tools x providers
matrix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from conformance.erp.plugin import ErpPlugin, ErpTool, model_name
from conformance.fengyu.manifest import FengYuPlugin
from conformance.profiles import Plugin, is_mcp
from conformance.run_store import RunStore
from plugin_spec.json_types import JsonArray, JsonObject, ReadOnlyJson
from plugin_spec.mcp import offered_name
from plugin_spec.providers.judge import Judgement, Noted, judge_tool, request_refusals
from plugin_spec.providers.rules import all_providers, load_provider
from plugin_spec.tool_definition import model_schema
from reference_host.builtins import BUILTIN_DEFINITIONS

PORTABLE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # a tool name every provider takes


@dataclass(frozen=True)
class Offered:
    """A tool as the model is offered it: name, input schema, and where the schema is written."""

    name: str
    schema: ReadOnlyJson
    at: str  # the schema's pointer in its file; inner pointers are appended
    # The tool file of an ERP tool; a FengYu tool is in the manifest, an MCP tool in the
    # server's listing.
    erp: ErpTool | None = None


def offered(plugin: Plugin) -> list[Offered]:
    """The tools of a plugin that has named them, as the host would offer them."""
    if isinstance(plugin, FengYuPlugin):
        return [
            Offered(
                t.name,
                model_schema(t.input_schema.data) if t.input_schema else None,
                t.input_schema.pointer if t.input_schema else t.pointer,
            )
            for t in plugin.tools
            if isinstance(t.name, str)
        ]
    if isinstance(plugin, ErpPlugin):
        return [
            Offered(model_name(t.code), model_schema(t.data.get("inputSchema")), "/inputSchema", t)
            for t in plugin.tools
            if isinstance(t.code, str)
        ]
    # an MCP server: offered under the name a host mints (offered_name)
    return [
        Offered(offered_name(plugin.name, t.name), t.input_schema, f"{t.pointer}/inputSchema")
        for t in plugin.tools
        if t.name is not None
    ]


def own_rules(plugin: Plugin) -> tuple[str, str]:
    """The profile's requirements on a tool's name and on its schema being an object schema:
    a tool that breaks them is their finding, so the providers do not judge it again."""
    if is_mcp(plugin):
        return "MCP-TL-005", "MCP-TL-001"
    if isinstance(plugin, ErpPlugin):
        return "ERP-TOOL-009", "ERP-TOOL-012"
    return "FY-MAN-006", "FY-MAN-010"


def judgeable(tool: Offered) -> bool:
    """A portable name and an object inputSchema: what the profile's own rules ask first."""
    schema = tool.schema
    return bool(PORTABLE_NAME.fullmatch(tool.name)) and (
        isinstance(schema, dict) and schema.get("type") == "object"
    )


def judgements(plugin: Plugin, provider_id: str) -> tuple[tuple[Offered, Judgement], ...]:
    """Every tool the plugin offers, judged by one provider once per run: the provider's item,
    the whole request of each plugin of the run and the report's matrix all read it, so
    callers ask for it through the run's store."""
    provider = load_provider(provider_id)
    return tuple((t, judge_tool(provider, t.name, t.schema)) for t in offered(plugin))


@cache
def _builtin_judgements(provider_id: str) -> tuple[Judgement, ...]:
    provider = load_provider(provider_id)
    return tuple(judge_tool(provider, d.name, d.input_schema) for d in BUILTIN_DEFINITIONS)


def request_refusals_of(
    plugin: Plugin, peers: Sequence[Plugin], provider_id: str, store: RunStore
) -> list[Noted]:
    """What keeps one request from the provider: it carries this plugin's tools and those of
    the other plugins in the run (a name offered twice is sent once), and the reference host's
    built-ins unless the plugin is an MCP server, which other hosts mount beside their own
    built-ins: a tool count with the reference host's would fail it for that host's tools."""
    builtins = () if is_mcp(plugin) else _builtin_judgements(provider_id)
    sent = {j.tool: j for j in builtins}
    for one in (plugin, *peers):
        for _, judgement in store.once(judgements, one, provider_id):
            sent.setdefault(judgement.tool, judgement)
    return request_refusals(load_provider(provider_id), list(sent.values()))


def provider_matrix(plugin: Plugin, peers: list[Plugin], store: RunStore) -> JsonObject:
    """What the reports show of the providers: each tool's verdict per provider with every
    change and rejection, and what keeps the whole request from each provider. Every tool
    offered is listed, those the profile's own rules fail too (a name no provider takes is
    rejected by each provider's name rule, not left out of the matrix)."""
    tools: dict[str, JsonObject] = {}
    for p in all_providers():
        for tool, judgement in store.once(judgements, plugin, p.id):
            tools.setdefault(tool.name, {})[p.id] = judgement.to_json()
    request: JsonObject = {}
    for p in all_providers():
        refusals: JsonArray = [n.to_json() for n in request_refusals_of(plugin, peers, p.id, store)]
        request[p.id] = refusals
    return {"tools": dict(tools), "request": request}
