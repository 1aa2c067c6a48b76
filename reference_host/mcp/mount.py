"""The servers of an mcpServers file as plugins: their tools are ToolCallbacks like any other
(the agent loop, the SSE call and result events, approvals and workflows cannot tell them
apart), offered under minted names.

Names: `offered_name(server, tool)` of plugin_spec.mcp, made distinct from the built-ins' and
every other server's; the server's own name for the tool is what goes on the wire. Owner: the
server, as `mcp:<server>` (a plugin id has no colon, so it is never an installed plugin's); it
is the server's id in the plugin list too. Approval: every server in the file is untrusted, so
its annotations are read as absent and never relax an approval
(plugin_spec.mcp.approval_class): every tool is `external`.

Definitions: the model is offered each tool as the server listed it at mount, and an approval
is bound to the digest of that listed definition (agent/approval_binding.py). The server may
list something else later (a "rug pull"), so its tools are listed again before the first call
of each turn (a chat turn or workflow run: the call's run id), after the server said
`notifications/tools/list_changed`, and after it was started again; a call is refused,
whatever was approved, when the tool's definition in that listing is no longer the one
mounted. Listing before every call cost a second round trip per call. A call without a run
id (made outside a turn) lists first, as before.

A server that crashed is started again by the next call to one of its tools, once per call;
when that start fails too the call gets an error result saying so (with how many starts have
failed in a row and the end of the server's stderr). close() stops every server.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types
from mcp import MCPError
from mcp_types import CONNECTION_CLOSED

from plugin_spec.mcp import approval_class, distinct_name
from plugin_spec.tool_definition import Effect, ToolDefinition
from reference_host.mcp.client import Connection
from reference_host.mcp.config import McpConfigError, read_config
from reference_host.mcp.launch import Launch, prune_server_data, server_data
from reference_host.mcp.results import error_text, tool_result
from reference_host.mcp.start_problems import start_hint
from reference_host.mcp.stderr_log import log_path, tail
from reference_host.process.bounds import DEFAULT_LIMITS, WorkerLimits
from reference_host.tools.callbacks import (
    CallContext,
    CallPlan,
    SentAsIs,
    ToolResult,
    failure,
)

log = logging.getLogger(__name__)

PROFILE = "mcp"
OWNER_PREFIX = "mcp:"  # a mounted tool's owner: mcp:<server>
CALL_TIMEOUT = 300.0  # seconds one tools/call may take (a turn's own limit usually ends it first)
STDERR_LINES = 5
CONNECTION_CLOSED_MESSAGE = "Connection closed"  # the SDK's, with CONNECTION_CLOSED


class MountedServer:
    """One mounted server: its launch, its live connection (None until the first start or
    after a crash was seen), its tools as listed at mount, and the era it spoke."""

    def __init__(self, launch: Launch) -> None:
        self.launch = launch
        self.name = launch.server.name
        self.tools: list[mcp_types.Tool] = []
        # the digest of each tool's definition as the server listed it last (at mount, then
        # before each call)
        self.listed: dict[str, str] = {}
        self.era = ""
        self.protocol_version = ""
        self.version = ""
        self.failed_starts = 0
        self._connection: Connection | None = None
        self._lock = asyncio.Lock()
        # the connection and turn (run id) that self.listed was listed on and for
        self._listed_on: Connection | None = None
        self._listed_for = ""

    @property
    def owner(self) -> str:
        """The owner of the server's tools, and its id in the plugin list."""
        return owner_of(self.name)

    @property
    def stderr(self) -> Path:
        """Where its stderr goes: beside its data folder, out of the sandbox's reach
        (stderr_log.py)."""
        return log_path(self.launch.data_dir)

    @property
    def pid(self) -> int | None:
        """The pid the SDK started (the sandbox's bwrap, or the server), while it runs."""
        return self._connection.pid if self._connection is not None else None

    async def mount(self) -> None:
        """Start the server and read its tools; raises McpConfigError saying why it failed."""
        try:
            connection = await self._start()
            self.tools = _unique(await connection.tools())
            self.listed = digests(self.tools)
            self._listed_on = connection
        except Exception as exc:
            await self.close()
            raise McpConfigError(
                f"MCP server {self.name!r} could not be mounted: {error_text(exc)}"
                f"{self._stderr_tail()}"
            ) from None

    async def call(
        self, tool: str, arguments: dict[str, Any], mounted: str, turn: str = ""
    ) -> ToolResult:
        """tools/call with the server's own tool name, if the server still lists the tool
        with the definition whose digest is mounted (listed once per turn, see above); every
        failure is a failed result."""
        async with self._lock:
            connection = self._connection
            if connection is None or connection.lost or not connection.alive():
                try:
                    connection = await self._restart()
                except Exception as exc:
                    return failure(
                        f"MCP server {self.name} exited and could not be started again "
                        f"({self.failed_starts} failed start(s) in a row): {error_text(exc)}"
                        f"{self._stderr_tail()}"
                    )
            if self._stale(connection, turn):
                try:
                    self.listed = digests(_unique(await connection.tools()))
                except Exception as exc:
                    what = f"listing its tools before the call to {tool}"
                    return self._failure(connection, what, exc)
                self._listed_on, self._listed_for = connection, turn
        listed = self.listed.get(tool)
        if listed is None:
            return failure(f"not run: MCP server {self.name} no longer lists {tool}")
        if listed != mounted:
            return failure(
                f"not run: MCP server {self.name} changed the definition of {tool} after it "
                "was mounted (the tool offered and approved is the one it listed then; "
                "restart the host to mount the new definition)"
            )
        try:
            return tool_result(await connection.call(tool, arguments, CALL_TIMEOUT))
        except Exception as exc:
            return self._failure(connection, f"the call to {tool}", exc)

    def _stale(self, connection: Connection, turn: str) -> bool:
        """Whether the tools must be listed before a call in turn: not yet in this turn (or
        no turn), on this connection, or the server said they changed since."""
        return (
            not turn
            or turn != self._listed_for
            or connection is not self._listed_on
            or connection.tools_changed
        )

    def _failure(self, connection: Connection, what: str, exc: Exception) -> ToolResult:
        """A request that raised, as a failed result: the server stopped by the host, gone,
        refused, or else."""
        if connection.refused is not None:
            connection.lost = True
            return failure(
                f"MCP server {self.name} {connection.refused} during {what}; it was stopped, "
                f"and the next call starts it again{self._stderr_tail()}"
            )
        if _closed(exc) or not connection.alive():
            connection.lost = True
            return failure(
                f"MCP server {self.name} exited during {what}; the next call starts it "
                f"again{self._stderr_tail()}"
            )
        if isinstance(exc, MCPError):
            return failure(
                f"MCP server {self.name} refused {what}: {exc.error.message} "
                f"(JSON-RPC error {exc.error.code})"
            )
        return failure(f"MCP server {self.name}: {what} failed: {error_text(exc)}")

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    async def _restart(self) -> Connection:
        await self.close()
        return await self._start()

    async def _start(self) -> Connection:
        self.launch.data_dir.mkdir(parents=True, exist_ok=True)
        connection = Connection(self.launch, self.stderr)
        try:
            client = await connection.open()
        except Exception:
            self.failed_starts += 1
            raise
        self.failed_starts = 0
        self._connection = connection
        self.era = "modern" if connection.modern else "legacy"
        self.protocol_version = client.protocol_version
        info = client.server_info
        self.version = info.version if info is not None else ""
        return connection

    def _stderr_tail(self) -> str:
        """The server's last stderr lines, and what they say went wrong where the sandbox
        is the likely cause (start_problems.py)."""
        lines = tail(self.stderr, STDERR_LINES)
        if not lines:
            return ""
        env = self.launch.spec.environment()
        command = self.launch.server.command
        hint = start_hint("\n".join(lines), env, os.environ, env.get("HOME", ""), command)
        return f"; its stderr ends: {' | '.join(lines)}" + (f"; {hint}" if hint else "")


@dataclass(eq=False)
class McpToolCallback(SentAsIs):
    """One tool of a mounted server, offered under definition.name, called as tool; a
    tools.callbacks.MountedTool bound to mounted_digest, the digest of its definition as the
    server listed it at mount."""

    server: MountedServer
    tool: str
    definition: ToolDefinition
    effect: Effect
    owner: str
    mounted_digest: str

    @property
    def server_version(self) -> str:
        return self.server.version

    @property
    def catalog_name(self) -> str:
        """Its name in the workflow catalog (identity `mcp:<server>:<tool>`): the server's
        own, which the names minted for other servers and built-ins do not change."""
        return self.tool

    def listed_digest(self) -> str | None:
        return self.server.listed.get(self.tool)

    async def call(self, plan: CallPlan, context: CallContext) -> ToolResult:
        try:
            arguments = plan.arguments.object()
        except ValueError as exc:
            return failure(str(exc))
        return await self.server.call(self.tool, arguments, self.mounted_digest, context.run_id)


class McpMounts:
    """The mounted servers of one config file, their callbacks, and their plugin listing."""

    def __init__(self, servers: list[MountedServer], callbacks: list[McpToolCallback]) -> None:
        self.servers = servers
        self.callbacks = callbacks

    def listing(self) -> list[dict[str, Any]]:
        """Each server as the host's plugin list shows it, with the era it spoke."""
        return [
            {
                "id": server.owner,
                "name": server.name,
                "version": server.version,
                "profile": PROFILE,
                "enabled": True,
                "supportsAi": bool(server.tools),
                "tools": [c.definition.name for c in self.callbacks if c.server is server],
                "era": server.era,
                "protocolVersion": server.protocol_version,
            }
            for server in self.servers
        ]

    async def close(self) -> None:
        """Stop every server (and whatever each started)."""
        await asyncio.gather(*(server.close() for server in self.servers))


async def mount_servers(
    config_file: Path,
    data_dir: Path,
    *,
    taken: Iterable[str] = (),
    sandbox: bool = True,
    pass_env: tuple[str, ...] = (),
    roots: tuple[Path, ...] = (),
    bounds: WorkerLimits = DEFAULT_LIMITS,
) -> McpMounts:
    """Start every server the file lists (but those marked disabled) and make callbacks of
    their tools, named apart from taken (the built-ins' names); roots are folders every
    server may write in its sandbox; bounds are every server's (bounds.py). Raises
    McpConfigError for a bad file or a server that cannot be mounted; the servers already
    started are stopped."""
    configs = [c for c in read_config(config_file) if not c.disabled]
    hidden = (data_dir.resolve(),) if sandbox else None
    await asyncio.to_thread(prune_server_data, data_dir, [c.name for c in configs])
    servers = [
        MountedServer(Launch(c, server_data(data_dir, c.name), hidden, pass_env, roots, bounds))
        for c in configs
    ]
    mounted: list[MountedServer] = []
    try:
        for server in servers:
            mounted.append(server)
            await server.mount()
    except BaseException:
        await asyncio.gather(*(s.close() for s in mounted))
        raise
    return McpMounts(servers, make_callbacks(servers, set(taken)))


def make_callbacks(servers: Iterable[MountedServer], taken: set[str]) -> list[McpToolCallback]:
    """The servers' tools under names distinct from taken and from each other."""
    callbacks = []
    for server in servers:
        for tool in server.tools:
            name = distinct_name(server.name, tool.name, taken)
            taken.add(name)
            listed = tool.model_dump(by_alias=True, exclude_none=True)
            callbacks.append(
                McpToolCallback(
                    server,
                    tool.name,
                    ToolDefinition(name, tool.description or "", dict(tool.input_schema)),
                    Effect.parse(approval_class(listed, trusted=False)),
                    owner_of(server.name),
                    definition_digest(tool),
                )
            )
    return callbacks


def owner_of(server: str) -> str:
    return f"{OWNER_PREFIX}{server}"


def definition_digest(tool: mcp_types.Tool) -> str:
    """sha256 of a tool's definition as the server listed it: every field (name, title,
    description, schemas, annotations, icons...) but `_meta`, in canonical JSON."""
    listed = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    listed.pop("_meta", None)
    text = json.dumps(listed, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def digests(tools: Iterable[mcp_types.Tool]) -> dict[str, str]:
    return {tool.name: definition_digest(tool) for tool in tools}


def _closed(exc: Exception) -> bool:
    """Whether exc is the SDK's answer to a request whose session closed under it (the
    server's stdout ended), not an error the server sent."""
    return (
        isinstance(exc, MCPError)
        and exc.error.code == CONNECTION_CLOSED
        and exc.error.message == CONNECTION_CLOSED_MESSAGE
    )


def _unique(tools: list[mcp_types.Tool]) -> list[mcp_types.Tool]:
    """The first tool of each name (a server SHOULD NOT list one twice)."""
    seen: dict[str, mcp_types.Tool] = {}
    for tool in tools:
        seen.setdefault(tool.name, tool)
    return list(seen.values())


Factory = Callable[[], McpMounts]
