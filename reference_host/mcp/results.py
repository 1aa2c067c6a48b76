"""What a `tools/call` answered, as the host's ToolResult: a server's failure is a failed
result the model reads, never an exception that would become a 5xx or end the stream.

`isError: true` is the tool's own failure (its text is the error); otherwise the output is
`structuredContent` when the server gave it (the JSON value the workflow bindings read),
else the text of the content blocks. Non-text blocks (images, audio, resources) are named by
their type, since the host's results are JSON for a text model.
"""

from __future__ import annotations

from typing import Any

import mcp_types

from reference_host.tools.callbacks import ToolResult, failure


def tool_result(result: mcp_types.CallToolResult) -> ToolResult:
    text = content_text(result.content)
    if result.is_error:
        return failure(text or "the tool reported an error without a message")
    if result.structured_content is not None:
        return ToolResult(result.structured_content)
    return ToolResult(text)


def content_text(blocks: list[Any]) -> str:
    """The text blocks joined by newlines; `[<type> content]` for each other block."""
    parts = []
    for block in blocks:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        else:
            parts.append(f"[{getattr(block, 'type', 'unknown')} content]")
    return "\n".join(parts)


def error_text(exc: BaseException) -> str:
    """An exception as one line: the first leaf of an exception group, with its type when
    its message says nothing."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    message = str(exc).strip()
    return message or type(exc).__name__
