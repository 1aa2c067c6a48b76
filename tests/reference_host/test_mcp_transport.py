"""The host's MCP transport reads stdout within bounds (reference_host/mcp/transport.py): a
line past the 16 MiB frame limit is refused unread and fails its call at once, naming why,
without the reader holding more than the limit; a long line under it and a flood of
notifications are read, and nothing of them is kept once handed on."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from plugin_spec.framing import MAX_FRAME_BYTES
from reference_host.mcp.mount import McpMounts, mount_servers
from reference_host.mcp.transport import _lines
from reference_host.tools.callbacks import CallContext, plan_and_call
from tests.conftest import REPO
from tests.reference_host.one_tool_mcp import one_tool_server

FIXTURE = REPO / "tests" / "fixtures" / "mcp" / "server.py"

# `big` answers with a text of `mib` MiB, on one line ended by a newline or not.
SERVER = one_tool_server(
    "big",
    {"mib": {"type": "integer"}, "newline": {"type": "boolean"}},
    r"""
    arguments = message["params"]["arguments"]
    head = '{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "'
    send(head % json.dumps(rid) + "x" * (arguments["mib"] << 20) + '"}]}}')
    if arguments["newline"]:
        send("\n")
    else:
        time.sleep(3600)
    """,
)


async def mounted(tmp_path: Path, args: list[str]) -> McpMounts:
    config = tmp_path / "mcp.json"
    servers = {"s": {"command": sys.executable, "args": args}}
    config.write_text(json.dumps({"mcpServers": servers}))
    return await mount_servers(config, tmp_path / "host")


async def test_a_line_past_the_frame_limit_fails_the_call_at_once(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text(SERVER)
    mounts = await mounted(tmp_path, ["big.py"])
    try:
        (big,) = mounts.callbacks
        long = await plan_and_call(big, {"mib": 12, "newline": True}, CallContext())
        assert long.ok, long.error
        assert len(long.output) == 12 << 20
        endless = await plan_and_call(big, {"mib": 20, "newline": False}, CallContext())
        assert not endless.ok and endless.error
        assert (
            f"MCP server s sent a line longer than {MAX_FRAME_BYTES} bytes (the 16 MiB frame "
            "limit), which is not read during the call to big; it was stopped" in endless.error
        )
        again = await plan_and_call(big, {"mib": 1, "newline": True}, CallContext())
        assert again.ok, again.error
    finally:
        await mounts.close()


async def test_a_flood_of_notifications_is_read_through(tmp_path: Path) -> None:
    flood = str(50 << 20)
    mounts = await mounted(tmp_path, [str(FIXTURE), "--legacy-only", "--flood", flood])
    try:
        echo = next(c for c in mounts.callbacks if c.tool == "echo")
        result = await plan_and_call(echo, {"text": "after the flood"}, CallContext())
        assert result.ok, result.error
        assert result.output == {"text": "after the flood"}
    finally:
        await mounts.close()


class Chunks:
    """A byte stream of chunks, counting what was taken from it."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.taken = 0

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._each()

    async def _each(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.taken += len(chunk)
            yield chunk
            await anyio.lowlevel.checkpoint()


async def test_the_reader_holds_at_most_one_frame() -> None:
    chunk = b"y" * 65536
    stream = Chunks([b'{"a": 1}\n{"b"', b": 2}\n", *[chunk] * 400])  # then 25 MiB, no newline
    lines = [line async for line in _lines(stream)]  # type: ignore[arg-type]
    assert lines == [b'{"a": 1}', b'{"b": 2}', None]
    assert stream.taken <= MAX_FRAME_BYTES + 2 * len(chunk)
