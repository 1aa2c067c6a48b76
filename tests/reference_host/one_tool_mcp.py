"""The source of a stdio MCP server with one tool, for a test to write and mount: it speaks
just enough of the 2025-11-25 era (discover is unknown to it, so the SDK initializes), and the
test gives the tool's name, its input properties and the code that answers tools/call."""

from __future__ import annotations

import textwrap
from typing import Any

_SERVER = r"""
import json, sys, time
def send(text):
    sys.stdout.write(text); sys.stdout.flush()
def answer(rid, key, value):
    send(json.dumps({"jsonrpc": "2.0", "id": rid, key: value}) + "\n")
def call(message, rid):
%(call)s
for line in sys.stdin:
    message = json.loads(line)
    rid, method = message.get("id"), message.get("method")
    if rid is None:
        continue
    if method == "initialize":
        answer(rid, "result", {"protocolVersion": message["params"]["protocolVersion"],
                               "capabilities": {"tools": {}},
                               "serverInfo": {"name": %(name)r, "version": "1.0.0"}})
    elif method == "tools/list":
        schema = {"type": "object", "properties": %(properties)r}
        tool = {"name": %(name)r, "description": "A test's tool.", "inputSchema": schema}
        answer(rid, "result", {"tools": [tool]})
    elif method == "tools/call":
        call(message, rid)
    else:
        answer(rid, "error", {"code": -32601, "message": "Method not found"})
"""


def one_tool_server(name: str, properties: dict[str, Any], call: str) -> str:
    """The server's source: call is the body of call(message, rid), which answers a
    tools/call request with send(text) (raw: the line's newline is the caller's)."""
    body = textwrap.indent(textwrap.dedent(call).strip(), "    ")
    return _SERVER % {"name": name, "properties": properties, "call": body}
