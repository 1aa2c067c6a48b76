"""The MCP profile's checks: their context and their registry (check_registry.Registry).

The checks are the conformance/checks/mcp_*.py modules; conformance.checks.mcp_checks()
imports them, which fills MCP_CHECKS. Only a run with an MCP server imports this module (and
with it conformance.mcp and the MCP SDK the host's launch brings): an MCP check sees an
McpServer, its McpTool for per-tool requirements, and the server's sessions.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from conformance.check_registry import CheckContext, Registry
from conformance.findings import Finding, shown
from conformance.mcp.server import MCP, McpServer, McpTool
from conformance.mcp.wire import Reply

if TYPE_CHECKING:  # the sessions start the server: only their type is needed here
    from conformance.mcp.services import McpServices


@dataclass(frozen=True)
class McpContext(CheckContext[McpServer, McpTool]):
    """An MCP check's view: mcp is the server's sessions, which the kit gives to every live
    MCP check (None for the static suite)."""

    mcp: McpServices | None = None

    @property
    def sessions(self) -> McpServices:
        """The MCP server's sessions (the kit gives them to every live MCP check)."""
        if self.mcp is None:
            raise TypeError(f"{self.requirement.id} is given no MCP sessions")
        return self.mcp

    def server_finding(self, message: str, at: str = "", fix: str = "") -> Finding:
        """A finding on the MCP server, at pointer `at` of what it answered."""
        return self.plugin.finding(self.requirement.id, message, at, fix)

    def expect(self, ok: bool, message: str, got: object, at: str) -> Iterator[Finding]:
        """A finding at `at` unless ok: what is wrong, then the value the server gave, quoted
        ("<message>: got: <got>"), so that a shape rule is its test and its message only."""
        if not ok:
            yield self.server_finding(f"{message}: got: {shown(got)}", at)

    def answered(self, message: str, reply: Reply, at: str = "", fix: str = "") -> Finding:
        """A finding on the answer to a request the check sent: what is wrong, then how the
        request ended (Reply.describe), so that every such finding quotes the answer alike."""
        return self.server_finding(f"{message}: {reply.describe()}", at, fix)


MCP_CHECKS = Registry[McpContext]("MCP", (MCP,))
check = MCP_CHECKS.check
