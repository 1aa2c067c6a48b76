"""How an MCP tool call was refused, in a line: what the reports quote of a tool that was
not exercised (exercised.py).
"""

from __future__ import annotations

from conformance.findings import cut
from conformance.mcp.wire import Reply

ERROR_CHARS = 300


def refusal(reply: Reply) -> str:
    """How an MCP call was refused, shortly: the error's code and message, or the text of an
    isError result; the reply as it began otherwise."""
    error = reply.error
    if error is not None:
        return cut(f"error {error.get('code')}: {error.get('message')}", ERROR_CHARS)
    result = reply.result
    content = result.get("content") if isinstance(result, dict) else None
    if isinstance(content, list):
        texts = [
            text for b in content if isinstance(b, dict) and isinstance(text := b.get("text"), str)
        ]
        flag = "isError: " if isinstance(result, dict) and result.get("isError") else ""
        return cut(flag + " ".join(texts), ERROR_CHARS)
    return cut(reply.describe(), ERROR_CHARS)
