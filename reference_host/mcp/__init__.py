"""MCP stdio servers mounted as plugins (`--mcp-config FILE`).

config reads the `mcpServers` file, launch turns one entry into the command the official SDK
starts (in the workers' sandbox, with the workers' environment rules), client keeps one
running session, results maps what a tool call answered onto the host's ToolResult, and mount
makes each server's tools ToolCallbacks under minted names, restarting a server that crashed
and stopping every process it started when the host stops.
"""
