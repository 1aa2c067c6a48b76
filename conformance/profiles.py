"""The plugin profiles the kit checks (FengYu, ERP, MCP servers), as one type.

A union rather than a protocol: the kit's core reads only what all three dataclasses have,
and each profile's checks take a context typed by their profile (conformance/checks/fengyu.py,
erp.py, mcp.py), so mypy sees every attribute a check touches. The MCP server is named for
the type checker only: a FengYu or ERP run imports no MCP module (the MCP SDK comes with the
host's launch of a server), and tells an MCP server by its profile (is_mcp).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, TypeGuard

from conformance.erp.plugin import ErpPlugin, ErpTool, load_erp_plugin
from conformance.fengyu.manifest import AiTool, FengYuPlugin, load_fengyu_plugin
from plugin_spec.plugin_folders import is_erp_plugin

if TYPE_CHECKING:
    from conformance.mcp.server import McpServer, McpTool

MCP = "mcp"  # the profile of an MCP server (conformance.mcp.server.MCP)

Plugin: TypeAlias = "FengYuPlugin | ErpPlugin | McpServer"
Tool: TypeAlias = "AiTool | ErpTool | McpTool"


def is_mcp(plugin: Plugin) -> TypeGuard[McpServer]:
    """Whether plugin is an MCP server, without importing conformance.mcp to ask."""
    return plugin.profile == MCP


def load_plugin(root: Path) -> FengYuPlugin | ErpPlugin:
    """The plugin in root, by profile: ERP when it has metadata/tool/ and no manifest.json."""
    return load_erp_plugin(root) if is_erp_plugin(root) else load_fengyu_plugin(root)
