"""The MCP stdio profile: servers selected by --mcp-command or --mcp-config, driven on raw
pipes (spec: mcp.md)."""
