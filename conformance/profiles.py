"""The plugin profiles the kit checks (FengYu, ERP, MCP servers), as one type.

A union rather than a protocol: the kit's core reads only what both dataclasses have, and a
check narrows to the one profile its requirement applies to (CheckContext.fengyu/.erp), so
mypy sees every attribute a check touches.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeAlias

from conformance.erp.plugin import ErpPlugin, ErpTool, load_erp_plugin
from conformance.fengyu.manifest import AiTool, FengYuPlugin, load_fengyu_plugin
from conformance.mcp.server import McpServer, McpTool
from plugin_spec.plugin_folders import is_erp_plugin

Plugin: TypeAlias = FengYuPlugin | ErpPlugin | McpServer
Tool: TypeAlias = AiTool | ErpTool | McpTool


def load_plugin(root: Path) -> FengYuPlugin | ErpPlugin:
    """The plugin in root, by profile: ERP when it has metadata/tool/ and no manifest.json."""
    return load_erp_plugin(root) if is_erp_plugin(root) else load_fengyu_plugin(root)
