"""The same echo as a tool of an MCP server written with the MCP Python SDK, over stdio.

mcp 2.x calls the high-level server MCPServer (mcp.server.mcpserver); 1.x called it FastMCP
(mcp.server.fastmcp). structured_output=False keeps the reply to one copy of the text (the
SDK's default for a `-> str` tool also sends it again as structuredContent {"result": ...}),
so both sides move the same bytes as the JSON-RPC echo workers. echo_structured is the same
tool with the SDK's defaults, measured for reference.
"""

try:
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server

server = Server("bench-echo", log_level="WARNING")


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def echo_structured(text: str) -> str:
    """The same, with the SDK's default output (text content plus structuredContent)."""
    return text


if __name__ == "__main__":
    server.run()
