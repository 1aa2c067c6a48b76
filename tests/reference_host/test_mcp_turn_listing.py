"""How often the host lists a mounted server's tools (issue 37, the host with real servers):
once per turn (a chat turn or workflow run, by its run id), again after the server sends
`notifications/tools/list_changed` or was started again, and a definition changed since the
mount is still refused. And a server handed a folder writes in it through the host.

The server is the kit's stdlib-only fixture server (tests/fixtures/mcp/server.py: its
`--list-changed`, `--defect rug-pull` and `--root DIR`); listings are counted on the host's
side (Connection.tools), never timed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.mcp.client import Connection
from reference_host.mcp.mount import McpMounts, McpToolCallback, mount_servers
from reference_host.process.sandbox import support
from reference_host.tools.callbacks import CallContext, ToolResult, plan_and_call
from tests.reference_host.stream_items import data, kinds, stream_deciding
from tests.reference_host.test_mcp_mount import FIXTURE_SERVER, fixture_config, served_host


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per tools/list the host makes (every page read counts once)."""
    made: list[int] = []
    real = Connection.tools

    async def counted(self: Connection) -> Any:
        made.append(1)
        return await real(self)

    monkeypatch.setattr(Connection, "tools", counted)
    return made


async def mounted(tmp_path: Path, *flags: str) -> McpMounts:
    return await mount_servers(fixture_config(tmp_path, "--legacy-only", *flags), tmp_path / "h")


def tool(mounts: McpMounts, name: str) -> McpToolCallback:
    return next(c for c in mounts.callbacks if c.tool == name)


def turn(run_id: str) -> CallContext:
    return CallContext("conversation", run_id)


@pytest.fixture
async def plain(tmp_path: Path) -> AsyncIterator[McpMounts]:
    mounts = await mounted(tmp_path)
    try:
        yield mounts
    finally:
        await mounts.close()


async def test_tools_are_listed_once_per_turn(plain: McpMounts, listings: list[int]) -> None:
    echo, add = tool(plain, "echo"), tool(plain, "add")
    for text in ("a", "b", "c"):
        assert (await plan_and_call(echo, {"text": text}, turn("run_1"))).ok
    assert (await plan_and_call(add, {"a": 1, "b": 2}, turn("run_1"))).ok
    assert len(listings) == 1
    assert (await plan_and_call(echo, {"text": "d"}, turn("run_2"))).ok
    assert len(listings) == 2
    # a call outside any turn (no run id) lists first, every time
    for _ in range(2):
        assert (await plan_and_call(echo, {"text": "e"}, CallContext())).ok
    assert len(listings) == 4


async def test_a_server_started_again_is_listed_again(
    plain: McpMounts, listings: list[int]
) -> None:
    echo = tool(plain, "echo")
    assert (await plan_and_call(echo, {"text": "a"}, turn("run_1"))).ok
    (server,) = plain.servers
    await server.close()  # as if it had exited: the next call starts it again
    assert (await plan_and_call(echo, {"text": "b"}, turn("run_1"))).ok
    assert len(listings) == 2


async def test_list_changed_makes_the_next_call_list_again(
    tmp_path: Path, listings: list[int]
) -> None:
    """The fixture sends notifications/tools/list_changed before each call's answer."""
    mounts = await mounted(tmp_path, "--list-changed")
    try:
        echo = tool(mounts, "echo")
        assert (await plan_and_call(echo, {"text": "a"}, turn("run_1"))).ok
        assert (await plan_and_call(echo, {"text": "b"}, turn("run_1"))).ok
        assert len(listings) == 3  # the mount, then each call after a list_changed
    finally:
        await mounts.close()


async def test_an_announced_change_is_refused_in_the_same_turn(tmp_path: Path) -> None:
    mounts = await mounted(tmp_path, "--list-changed", "--defect", "rug-pull")
    try:
        echo = tool(mounts, "echo")
        assert (await plan_and_call(echo, {"text": "a"}, turn("run_1"))).ok
        second = await plan_and_call(echo, {"text": "b"}, turn("run_1"))
        assert not second.ok and second.error
        assert second.error.startswith(
            "not run: MCP server fixture changed the definition of echo after it was mounted"
        )
    finally:
        await mounts.close()


async def test_an_unannounced_change_is_refused_from_the_next_turn(tmp_path: Path) -> None:
    """Without list_changed, the change shows in the next turn's listing; the rest of the
    turn it was made in runs on the listing the turn began with."""
    mounts = await mounted(tmp_path, "--defect", "rug-pull")
    try:
        echo = tool(mounts, "echo")
        assert (await plan_and_call(echo, {"text": "a"}, turn("run_1"))).ok
        assert (await plan_and_call(echo, {"text": "b"}, turn("run_1"))).ok
        later = await plan_and_call(echo, {"text": "c"}, turn("run_2"))
        assert not later.ok and later.error
        assert "changed the definition of echo after it was mounted" in later.error
        assert echo.listed_digest() not in (None, echo.mounted_digest)
    finally:
        await mounts.close()


async def test_parallel_calls_of_one_chat_turn_list_once(
    tmp_path: Path, listings: list[int]
) -> None:
    """Over HTTP: one chat message with two `/call` lines is one turn (one run id)."""
    policy = ApprovalPolicy(Decision.ALLOW, Decision.ALLOW, 20)
    with served_host(fixture_config(tmp_path, "--legacy-only"), tmp_path / "host", policy) as (
        url,
        _,
    ):
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            mounted_listings = len(listings)
            message = '/call fixture__echo {"text": "a"}\n/call fixture__add {"a": 2, "b": 3}'
            answered = await stream_deciding(client, "/api/chat", {"message": message})
            results = [data(i) for i in answered.items if kinds([i]) == ["tool.result"]]
            assert [r["success"] for r in results] == [True, True], results
            assert len(listings) == mounted_listings + 1
            again = await stream_deciding(
                client, "/api/chat", {"message": '/call fixture__add {"a": 1, "b": 1}'}
            )
            assert kinds(again.items)[-1] == "done"
            assert len(listings) == mounted_listings + 2


# -- a server handed a folder ------------------------------------------------------------


async def write_then_close(mounts: McpMounts, name: str, text: str) -> ToolResult:
    """The fixture server's write tool called once in a turn, the mounts closed after it."""
    try:
        return await plan_and_call(
            tool(mounts, "write"), {"name": name, "text": text}, turn("run_1")
        )
    finally:
        await mounts.close()


async def test_a_server_handed_a_folder_writes_in_it_through_the_host(tmp_path: Path) -> None:
    """As server-filesystem given an allowed folder: the folder argument is writable in the
    server's sandbox, and the file is there for the user afterwards."""
    work = tmp_path / "work"
    work.mkdir()
    result = await write_then_close(await mounted(tmp_path, "--root", str(work)), "note.txt", "hi")
    assert result.ok, result.error
    assert (work / "note.txt").read_text("utf-8") == "hi"


def env_config(tmp_path: Path, root: Path) -> Path:
    """The fixture server told its folder by environment only (not an argument the host
    reads as a folder it is handed)."""
    path = tmp_path / "servers" / "mcp.json"
    path.parent.mkdir(exist_ok=True)
    entry = {
        "command": sys.executable,
        "args": [str(FIXTURE_SERVER), "--legacy-only"],
        "env": {"FIXTURE_MCP_ROOT": str(root)},
    }
    path.write_text(json.dumps({"mcpServers": {"fixture": entry}}))
    return path


async def test_a_root_the_host_hands_every_server_is_writable(tmp_path: Path) -> None:
    """`--mcp-root DIR` (mount_servers' roots): writable in every server's sandbox; without
    it, the same folder is not (where there is a sandbox)."""
    root = tmp_path / "root"
    root.mkdir()
    config = env_config(tmp_path, root)
    mounts = await mount_servers(config, tmp_path / "h", roots=(root,))
    result = await write_then_close(mounts, "a.txt", "a")
    assert result.ok, result.error
    assert (root / "a.txt").read_text("utf-8") == "a"
    if not support().available:
        return
    mounts = await mount_servers(config, tmp_path / "h", roots=())
    refused = await write_then_close(mounts, "b.txt", "b")
    assert not refused.ok and refused.error and "b.txt" in refused.error  # not there
    assert not (root / "b.txt").exists()
