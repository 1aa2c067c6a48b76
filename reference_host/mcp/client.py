"""One running MCP server and its session, through the official SDK's Client.

The SDK's Client is an async context manager whose task group must be entered and left in
one task, while the host calls tools from its request tasks; so each connection lives in a
task of its own, which opens the Client (mode "auto": `server/discover`, else `initialize`),
hands it over, and holds it until close() asks it to leave.

Leaving runs the SDK's shutdown (close stdin, wait, SIGTERM the process group, SIGKILL). The
SDK signals the group only when the server itself outlives its stdin: children of a server
that exits at once are left running. So close() then SIGKILLs the group and ends the lineage
(every process carrying the connection's token, those that left the group too).

A line the SDK cannot read for its nesting (its JSON reader stops near 200 levels) is only
logged by the SDK, so the request it answered waited out its whole timeout (300 s): such a
line stops the server at once instead, `refused` says why, and the pending requests fail. So
does a line past the 16 MiB frame limit, which the transport (transport.py) refuses unread.
A server is held to the bounds of every worker (process/bounds.py) the same way: its tree
and its data folder are sampled once a second, and the first sample over a bound stops it
with RESOURCE_LIMIT.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import Any

import mcp_types
import psutil
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from pydantic import ValidationError

from plugin_spec.fengyu_decls import ResourceLimits
from plugin_spec.mcp import CLIENT_INFO
from reference_host.mcp.launch import Launch
from reference_host.mcp.stderr_log import open_log
from reference_host.mcp.transport import LineTooLong, stdio_client
from reference_host.process.limits import FENGYU_INTERVAL, Overrun, watch_tree
from reference_host.process.lineage import carriers, end_lineage, new_token
from reference_host.process.reaper import MANAGED
from reference_host.process.tree import kill_group
from reference_host.process.worker_errors import WorkerResourceLimit

log = logging.getLogger(__name__)

OPEN_TIMEOUT = 60.0  # the handshake (a first `npx` or `uvx` run downloads the server)
LIST_PAGES = 100  # tools/list pages read at most (a server whose cursors never end)
TOO_DEEP = "sent an answer nested too deep to read (the MCP SDK reads about 200 levels)"
TOO_LONG = f"sent {LineTooLong()}, which is not read"


class Connection:
    """A started server: its Client, the pid the SDK started (bwrap in the sandbox, else the
    server) and the era it spoke."""

    def __init__(self, launch: Launch, stderr: Path) -> None:
        self._launch = launch
        self._stderr = stderr
        self._token = new_token()
        self._leave = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.client: Client | None = None
        self.pid: int | None = None
        # set when a request found the session closed (the server's stdout ended): the next
        # call starts the server again, even while its process has not been reaped yet
        self.lost = False
        # why the host stopped the server itself (a line nested too deep, a bound), else None
        self.refused: str | None = None
        # set by notifications/tools/list_changed: the next call lists the tools again
        self.tools_changed = False
        self._watch: asyncio.Task[None] | None = None

    async def open(self) -> Client:
        """Start the server and open its session; raises what kept it from opening."""
        loop = asyncio.get_running_loop()
        opened: asyncio.Future[Client] = loop.create_future()
        self._task = asyncio.create_task(self._hold(opened), name=f"mcp {self._launch.server.name}")
        try:
            self.client = await asyncio.wait_for(asyncio.shield(opened), OPEN_TIMEOUT)
        except TimeoutError:
            await self.close()
            raise TimeoutError(
                f"no session within {OPEN_TIMEOUT:g} s of the start (a first npx or uvx run "
                "downloads the server, which its cache in the server's HOME then keeps: start "
                "the host again, or run the command once by hand)"
            ) from None
        except BaseException:
            await self.close()
            raise
        return self.client

    @property
    def modern(self) -> bool:
        """Whether the server adopted `server/discover` (2026-07-28), not `initialize`."""
        return self.client is not None and self.client.session.discover_result is not None

    def alive(self) -> bool:
        """Whether the started process still runs (not exited, not a zombie)."""
        if self.pid is None:
            return False
        try:
            return psutil.Process(self.pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    async def tools(self) -> list[mcp_types.Tool]:
        """Every tool the server lists, page by page (a list_changed notification that comes
        meanwhile marks this listing stale too)."""
        assert self.client is not None
        self.tools_changed = False
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(LIST_PAGES):
            page = await self.client.list_tools(cursor=cursor, cache_mode="bypass")
            tools += page.tools
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def call(
        self, name: str, arguments: dict[str, Any], timeout: float | None
    ) -> mcp_types.CallToolResult:
        assert self.client is not None
        progress = _progress_logger(self._launch.server.name, name)
        return await self.client.call_tool(
            name, arguments, read_timeout_seconds=timeout, progress_callback=progress
        )

    async def close(self) -> None:
        """Leave the session (the SDK's shutdown), then end whatever it left running."""
        self._leave.set()
        if self._watch is not None:
            self._watch.cancel()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await self._task
        if self.pid is not None:
            kill_group(self.pid)
        await asyncio.to_thread(end_lineage, self._token)
        self.client = None

    async def _hold(self, opened: asyncio.Future[Client]) -> None:
        try:
            with open_log(self._stderr) as errlog:
                parameters = self._launch.parameters(self._token)
                transport = stdio_client(parameters, errlog=errlog)  # type: ignore[arg-type]
                info = mcp_types.Implementation(
                    name=CLIENT_INFO["name"], version=CLIENT_INFO["version"]
                )
                async with Client(
                    transport,
                    mode="auto",
                    cache=None,
                    client_info=info,
                    message_handler=self._on_message,
                ) as client:
                    self._find_pid()
                    if self.pid is not None:
                        self._watch = asyncio.create_task(self._watch_bounds(self.pid))
                    opened.set_result(client)
                    await self._leave.wait()
        except BaseException as exc:
            if not opened.done():
                opened.set_exception(exc if isinstance(exc, Exception) else RuntimeError(exc))
            elif not isinstance(exc, asyncio.CancelledError):
                log.debug("MCP server %s: the session ended: %r", self._launch.server.name, exc)
        finally:
            if self.pid is not None:
                MANAGED.discard(self.pid)

    async def _on_message(self, message: Any) -> None:
        """What the SDK hands the client besides answers: notifications/tools/list_changed
        marks the listing stale; a line it could not read for its nesting, or one too long
        to read (transport.py), stops the server (its pending requests then fail at once)."""
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self.tools_changed = True
            return
        if not isinstance(message, Exception) or self.refused is not None:
            return
        why = (
            TOO_LONG
            if isinstance(message, LineTooLong)
            else TOO_DEEP
            if _too_deep(message)
            else None
        )
        if why is not None:
            self.refused = why
            log.warning("MCP server %s %s; stopped", self._launch.server.name, why)
            if self.pid is not None:
                kill_group(self.pid)

    async def _watch_bounds(self, pid: int) -> None:
        """Sample the server's tree and data folder against its bounds until it stops; the
        first sample over one stops it (its pending requests then fail at once)."""
        spec = self._launch.spec

        def overran(overrun: Overrun) -> bool:
            log.error("MCP server %s: %s", self._launch.server.name, overrun.message)
            if self.refused is None:
                self.refused = (
                    f"went over its bounds ({WorkerResourceLimit.code}: {overrun.message})"
                )
            kill_group(pid)
            return False

        await watch_tree(
            pid,
            self._token,
            ResourceLimits(),
            FENGYU_INTERVAL,
            overran,
            spec.machinery(),
            spec.limits,
            spec.data_dir,
        )

    def _find_pid(self) -> None:
        """The SDK's child among the processes carrying the token; registered as managed, so
        the host's orphan reaper leaves its exit status to asyncio's watcher."""
        me = os.getpid()
        for pid in carriers(self._token):
            with contextlib.suppress(psutil.Error):
                if psutil.Process(pid).ppid() == me:
                    self.pid = pid
                    MANAGED.add(pid)
                    return


def _too_deep(exc: Exception) -> bool:
    """Whether exc is pydantic's refusal of a line for its nesting depth."""
    return isinstance(exc, ValidationError) and any(
        error.get("type") == "json_invalid" and "recursion limit" in str(error.get("msg"))
        for error in exc.errors()
    )


def _progress_logger(server: str, tool: str) -> ProgressFnT:
    """A progress callback for one call: the call then carries a progressToken, as clients
    that show progress send, and what the server reports is logged."""

    async def logged(progress: float, total: float | None, message: str | None) -> None:
        log.debug("MCP server %s: %s at %s/%s %s", server, tool, progress, total, message or "")

    return logged
