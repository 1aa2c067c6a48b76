"""The check registry: small named functions, each serving one or more requirements.

A check takes a CheckContext and yields Findings. The runner keeps only the findings for the
requirement being tested, so a check that sees many requirements at once (schema validation)
serves each of them without special cases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from conformance.catalog import Requirement, load_catalog
from conformance.erp.plugin import ErpPlugin, ErpTool
from conformance.fengyu.manifest import FengYuPlugin
from conformance.findings import Finding
from conformance.mcp.server import McpServer
from conformance.profiles import Plugin, Tool
from conformance.run_store import RunStore

if TYPE_CHECKING:  # services start workers and HTTP clients: only their types are needed here
    from conformance.erp.endpoints import EndpointServices
    from conformance.fengyu.services import WorkerServices
    from conformance.mcp.services import McpServices
    from conformance.previous_version import Upgrade

CheckFn = Callable[["CheckContext"], Iterable[Finding]]


@dataclass(frozen=True)
class CheckContext:
    """What a check may look at: the plugin, the requirement, the other plugins in the run,
    the live services its suite needs (started on first use) and, for per-tool checks, the
    tool. workers serves FengYu worker, tool and host checks, endpoints ERP endpoint checks,
    upgrade the upgrade checks (None without --previous-manifest); store holds what the run
    computes once for many items (store.once)."""

    plugin: Plugin
    requirement: Requirement
    peers: Sequence[Plugin] = field(default_factory=tuple)
    workers: WorkerServices | None = None
    tool: Tool | None = None
    endpoints: EndpointServices | None = None
    upgrade: Upgrade | None = None
    store: RunStore = field(default_factory=RunStore)
    mcp: McpServices | None = None

    @property
    def fengyu(self) -> FengYuPlugin:
        """The plugin of a FengYu requirement; the catalog runs those on FengYu plugins only."""
        if not isinstance(self.plugin, FengYuPlugin):
            profile = self.plugin.profile
            raise TypeError(f"{self.requirement.id} checks FengYu plugins, not {profile}")
        return self.plugin

    @property
    def erp(self) -> ErpPlugin:
        """The plugin of an ERP requirement; the catalog runs those on ERP plugins only."""
        if not isinstance(self.plugin, ErpPlugin):
            profile = self.plugin.profile
            raise TypeError(f"{self.requirement.id} checks ERP plugins, not {profile}")
        return self.plugin

    @property
    def server(self) -> McpServer:
        """The server of an MCP requirement; the catalog runs those on MCP servers only."""
        if not isinstance(self.plugin, McpServer):
            profile = self.plugin.profile
            raise TypeError(f"{self.requirement.id} checks MCP servers, not {profile}")
        return self.plugin

    @property
    def sessions(self) -> McpServices:
        """The MCP server's sessions (the kit gives them to every live MCP check)."""
        if self.mcp is None:
            raise TypeError(f"{self.requirement.id} is given no MCP sessions")
        return self.mcp

    def finding(
        self, message: str, file: str, pointer: str = "", line: int | None = None, fix: str = ""
    ) -> Finding:
        """A finding of the requirement being checked: a check names its id only in @check."""
        return Finding(self.requirement.id, message, file, pointer, line, fix)

    def manifest_finding(self, at: str, message: str, fix: str = "") -> Finding:
        """A finding at pointer `at` of the FengYu plugin's manifest.json, with its line."""
        return self.fengyu.finding(self.requirement.id, at, message, fix)

    def server_finding(self, message: str, at: str = "", fix: str = "") -> Finding:
        """A finding on the MCP server, at pointer `at` of what it answered."""
        return self.server.finding(self.requirement.id, message, at, fix)

    def tool_finding(self, tool: ErpTool, at: str, message: str, fix: str = "") -> Finding:
        """A finding at pointer `at` of one ERP tool file, with its line."""
        return tool.finding(self.requirement.id, at, message, fix)


_CHECKS: dict[str, list[CheckFn]] = {}


def _name(func: CheckFn) -> tuple[str, str]:
    return func.__module__, func.__qualname__


def check(*requirement_ids: str) -> Callable[[CheckFn], CheckFn]:
    """Register a check for the given requirement ids (each must be in the catalog)."""
    catalog = load_catalog()

    def register(func: CheckFn) -> CheckFn:
        for rid in requirement_ids:
            if rid not in catalog:
                raise KeyError(f"{func.__qualname__} names {rid}, which is not in the catalog")
            # A check module imported again (pytester's in-process runs restore sys.modules
            # between runs) replaces its checks rather than adding them twice.
            checks = _CHECKS.setdefault(rid, [])
            checks[:] = [f for f in checks if _name(f) != _name(func)] + [func]
        return func

    return register


def checks_for(requirement_id: str) -> list[CheckFn]:
    return list(_CHECKS.get(requirement_id, ()))


def run_checks(context: CheckContext) -> list[Finding]:
    """Every finding for context.requirement, from every check registered for it."""
    rid = context.requirement.id
    return [
        finding
        for func in checks_for(rid)
        for finding in func(context)
        if finding.requirement == rid
    ]


def unchecked_requirements() -> list[str]:
    """Catalog entries no check serves: each one is a defect of the kit."""
    return [rid for rid in load_catalog() if rid not in _CHECKS]
