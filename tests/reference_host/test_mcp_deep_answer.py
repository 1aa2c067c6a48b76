"""An MCP server's answer nested too deep for the SDK to read fails the call at once, naming
why (reference_host/mcp/client.py): the SDK only logged the line, so the call waited out its
whole timeout (300 s). The failure names the depth, not the timeout: no wall-clock bound."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from reference_host.mcp.mount import mount_servers
from reference_host.tools.callbacks import CallContext, plan_and_call
from tests.reference_host.one_tool_mcp import one_tool_server

# Answers `nest` with structured content nested depth deep.
SERVER = one_tool_server(
    "nest",
    {"depth": {"type": "integer"}},
    r"""
    depth = message["params"]["arguments"]["depth"]
    nested = "[" * depth + "]" * depth
    text = json.dumps({"jsonrpc": "2.0", "id": rid})[:-1]
    content = '"content": [{"type": "text", "text": "deep"}]'
    send(text + ', "result": {' + content + ', "structuredContent": {"a": ' + nested + "}}}\n")
    """,
)


async def test_an_answer_nested_too_deep_fails_the_call_at_once(tmp_path: Path) -> None:
    (tmp_path / "deep.py").write_text(SERVER)
    config = tmp_path / "mcp.json"
    servers = {"deep": {"command": sys.executable, "args": ["deep.py"]}}
    config.write_text(json.dumps({"mcpServers": servers}))
    mounts = await mount_servers(config, tmp_path / "host")
    try:
        (nest,) = mounts.callbacks
        shallow = await plan_and_call(nest, {"depth": 20}, CallContext())
        assert shallow.ok, shallow.error
        async with asyncio.timeout(120):  # a hang guard: a regression waits out 300 s
            deep = await plan_and_call(nest, {"depth": 5000}, CallContext())
        assert not deep.ok and deep.error
        assert "MCP server deep sent an answer nested too deep to read" in deep.error
        again = await plan_and_call(nest, {"depth": 20}, CallContext())
        assert again.ok, again.error
    finally:
        await mounts.close()
