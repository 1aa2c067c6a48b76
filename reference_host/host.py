"""The host: every part wired together, for the HTTP API, the CLI, tests and the kit.

Data flows one way: a chat message -> a snapshot of the registry -> the agent loop -> tool
callbacks -> workers (through the process manager) -> events for the SSE stream.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from plugin_spec.erp_decls import erp_decls
from plugin_spec.fengyu_decls import call_timeout, resource_limits, tool_decls
from plugin_spec.workflow_catalog import CatalogEntry
from reference_host.agent.approval import ApprovalBroker, ApprovalPolicy
from reference_host.agent.approval_binding import ApprovalBinder
from reference_host.agent.loop import RunScope, RunSettings, run_agent
from reference_host.agent.models import ChatModel, Message
from reference_host.agent.turn_limit import DEFAULT_TURN_TIME_LIMIT
from reference_host.erp.actors import ActorDirectory
from reference_host.erp.rest_tools import RestToolCallback
from reference_host.grants.copies import COPIES, HOST_FOLDER, MAX_BYTES
from reference_host.grants.grant_store import GrantStore
from reference_host.grants.quota import DEFAULT_COPIES, DEFAULT_TOTAL_BYTES, CopyLimits
from reference_host.plugins.lifecycle import (
    PluginError,
    PluginInfo,
    PluginService,
    Staged,
    Validator,
)
from reference_host.plugins.worker_tools import WorkerToolCallback
from reference_host.process.bounds import DEFAULT_LIMITS, WorkerLimits
from reference_host.process.launch import WorkerSpec, manifest_spec
from reference_host.process.lineage import become_subreaper
from reference_host.process.manager import PluginProcessManager
from reference_host.process.record import LineageRecord
from reference_host.process.worker_errors import WorkerError, WorkerLaunchError
from reference_host.storage.database import PluginRow, Store
from reference_host.stream.conversation_log import ConversationLog, user_message
from reference_host.stream.events import Event
from reference_host.tools.callbacks import CallContext, ToolCallback
from reference_host.tools.catalog_entries import from_snapshot
from reference_host.tools.snapshot import ToolRegistry

if TYPE_CHECKING:  # mounted by __main__ (--mcp-config): a host without them imports no MCP SDK
    from reference_host.mcp.mount import McpMounts

SYSTEM_PROMPT = "You are the assistant of a desktop host; use the tools when they help."


# The HTTP settings a host starts with: loopback names only, and JSON bodies up to 1 MiB.
DEFAULT_ALLOWED_HOSTS = ("localhost", "127.0.0.1", "[::1]")
DEFAULT_MAX_BODY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class HostConfig:
    data_dir: Path
    db_path: Path | None = None
    approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    allowed_roots: tuple[Path, ...] = ()
    log_level: str = "INFO"
    erp_base_url: str = "http://127.0.0.1:8801"
    actors_file: Path | None = None
    worker_env: tuple[str, ...] = ()  # passed through to workers (spec: host.md)
    # The bounds of every worker and MCP server, where its manifest declares none
    # (spec: host.md#worker-bounds; --worker-limit NAME=VALUE).
    worker_limits: WorkerLimits = DEFAULT_LIMITS
    # Launch commands by plugin id, instead of backend/worker (the kit's --worker-cmd).
    worker_commands: Mapping[str, str] = field(default_factory=dict)
    # Hosts (HOST or HOST:PORT) the built-in web_fetch may reach though they are not public;
    # the caller builds the built-ins with them (spec: host.md#what-web_fetch-can-reach).
    web_fetch_allow: tuple[str, ...] = ()
    # The HTTP API's access rules and body limit (reference_host.http.access;
    # spec: host.md#allowed-roots-and-hosts).
    allowed_hosts: tuple[str, ...] = DEFAULT_ALLOWED_HOSTS
    token: str | None = field(default=None, repr=False)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    # Read copies of grants, over every conversation (spec: host.md#fileref-grants): how
    # many, their bytes together, and the bytes of one copy (or of one commit).
    max_read_copies: int = DEFAULT_COPIES
    max_read_copy_bytes: int = DEFAULT_TOTAL_BYTES
    max_copy_bytes: int = MAX_BYTES
    # Seconds one chat turn may take in all, approvals and tool calls included
    # (spec: host.md#limits).
    turn_time_limit: float = DEFAULT_TURN_TIME_LIMIT
    # Workers run in the OS sandbox where one can be made (process/sandbox.py); False runs
    # them unconfined, as FengYu's "unsandboxed plugins" toggle does.
    sandbox: bool = True

    @property
    def database(self) -> Path:
        return self.db_path or self.data_dir / "host.sqlite3"


class Host:
    def __init__(
        self,
        config: HostConfig,
        *,
        validator: Validator | None = None,
        builtins: Iterable[ToolCallback] = (),
        mcp: McpMounts | None = None,
    ) -> None:
        self.config = config
        # MCP servers mounted from --mcp-config (reference_host.mcp): their tools are offered
        # beside the built-ins, and the host stops the servers when it closes.
        self.mcp = mcp
        builtins = [*builtins, *(mcp.callbacks if mcp is not None else ())]
        config.data_dir.mkdir(parents=True, exist_ok=True)
        # Orphans of workers come back to this process, and what an earlier host on this
        # data folder left running (it was killed) is ended before anything starts
        # (spec: host.md#worker-processes-and-cleanup).
        become_subreaper()
        lineages = LineageRecord(config.data_dir / "workers")
        lineages.end_stale()
        self.store = Store(config.database)
        self.manager = PluginProcessManager(lineages)
        # copies of granted files left by a host that did not close (grants live in memory),
        # and where hosts before this one made them
        shutil.rmtree(config.data_dir / HOST_FOLDER, ignore_errors=True)
        for leftover in (config.data_dir / "plugin-data").glob(f"*/{COPIES}"):
            shutil.rmtree(leftover, ignore_errors=True)
        limits = CopyLimits(
            config.max_read_copies, config.max_read_copy_bytes, config.max_copy_bytes
        )
        self.grants = GrantStore(list(config.allowed_roots), config.data_dir / HOST_FOLDER, limits)
        self.approvals = ApprovalBroker()
        self.conversations = ConversationLog()  # what followers of a conversation are sent
        self.actors = ActorDirectory(config.actors_file)
        self.http = httpx.AsyncClient(timeout=30.0)
        self.registry = ToolRegistry(self.store, builtins, self._callbacks)
        self.plugins = PluginService(
            self.store,
            self.registry,
            config.data_dir / "plugins",
            validator,
        )
        self.plugins.remove_orphans()
        self.binder = ApprovalBinder(self.registry, self.store)
        # preflight folders of a host that was killed mid-install (their workers were ended
        # through the lineage record)
        shutil.rmtree(self.config.data_dir / "preflight", ignore_errors=True)
        # One lifecycle change at a time, from its commit until its worker has switched and
        # the folders no worker needs any more are gone.
        self._lifecycle = asyncio.Lock()
        for row in self.store.plugins(enabled_only=True):
            if (spec := self._worker_spec(row)) is not None:
                self.manager.register(spec, resource_limits(row.manifest))

    async def install(self, source: Path | str, downgrade: bool = False) -> PluginInfo:
        """Install or upgrade; an upgraded plugin's running worker is replaced. An older
        version than the installed one is refused unless downgrade.

        The copy runs before the lifecycle lock is taken, so a disable meanwhile need not wait
        for it (and the commit keeps that disable). The old version's folder is removed only
        after its worker has stopped, so calls meanwhile reach the old worker or the new one.
        """
        staged = await asyncio.to_thread(self.plugins.stage, source, downgrade)
        try:
            await self._preflight(staged)
            async with self._lifecycle:
                info, previous = self.plugins.commit(staged)
                await self._refresh_worker(info.id)
                await asyncio.to_thread(self.plugins.remove_unused, info.id, previous)
        finally:
            self.plugins.discard(staged)
        return info

    async def _preflight(self, staged: Staged) -> None:
        """FengYu's gate before an install or upgrade takes effect: a worker that declares a
        protocol version is started from the staged copy and must pass the handshake, or
        nothing changes and the installed version stays (spec: host.md#installing-a-plugin).
        """
        if staged.manifest.get("erpTools") is not None:
            return
        scratch = self.config.data_dir / "preflight" / uuid.uuid4().hex
        try:
            spec = manifest_spec(
                staged.plugin_id,
                staged.folder,
                staged.manifest,
                scratch / "data",
                override=self.config.worker_commands.get(staged.plugin_id),
                scratch=scratch / "bin",
                hidden=self._hidden,
                bounds=self.config.worker_limits,
                log_level=self.config.log_level,
                pass_env=self.config.worker_env,
            )
        except WorkerLaunchError:
            return  # no worker to greet: the plugin's tools report that when called
        try:
            if spec.protocol_version is not None:
                await self.manager.preflight(spec)
        except WorkerError as exc:
            stderr = [f"worker stderr: {line}" for line in exc.stderr.splitlines()[-10:]]
            raise PluginError(
                f"{staged.source.name}: its worker did not pass FengYu's handshake; nothing "
                "was installed or upgraded",
                [exc.message, *stderr],
            ) from None
        finally:
            await asyncio.to_thread(shutil.rmtree, scratch, True)

    async def enable(self, plugin_id: str) -> PluginInfo:
        async with self._lifecycle:
            info = self.plugins.enable(plugin_id)
            await self._refresh_worker(plugin_id)
        return info

    async def disable(self, plugin_id: str) -> PluginInfo:
        async with self._lifecycle:
            info = self.plugins.disable(plugin_id)
            await self._refresh_worker(plugin_id)
        return info

    async def uninstall(self, plugin_id: str) -> None:
        """Uninstall; the plugin's folder is removed after its worker has stopped."""
        async with self._lifecycle:
            root = self.plugins.unregister(plugin_id)
            await self._refresh_worker(plugin_id)
            await asyncio.to_thread(self.plugins.remove_unused, plugin_id, root)

    async def chat(
        self,
        message: str,
        *,
        model: ChatModel,
        conversation_id: str | None = None,
        history: list[Message] | None = None,
        tenant: str = "",
        actor: str = "",
    ) -> AsyncIterator[Event]:
        """One agent run on a fresh snapshot; yields its events, done or error last, each
        also kept in the conversation's log for its followers (after the user's message).

        Tools that need a permission (ERP tools) are offered only when the actor has it.
        """
        conversation = conversation_id or f"conv_{uuid.uuid4()}"
        scope = self.run_scope(conversation, tenant, actor)
        system = "\n\n".join(
            p for p in (SYSTEM_PROMPT, self.grants.system_prompt(conversation)) if p
        )
        messages = [Message("system", system), *(history or []), Message("user", message)]
        self.conversations.append(conversation, user_message(message))
        async for event in run_agent(model, messages, scope):
            self.conversations.append(conversation, event)
            yield event

    def run_scope(self, conversation_id: str, tenant: str = "", actor: str = "") -> RunScope:
        """The scope of one chat turn or workflow run: a fresh snapshot narrowed to what the
        actor may use, a new run id, and this host's run settings."""
        snapshot = self.registry.snapshot().only(
            lambda callback: self.permitted(callback, tenant, actor)
        )
        context = CallContext(conversation_id, f"run_{uuid.uuid4()}", tenant, actor)
        return RunScope(snapshot, context, self.run_settings())

    def run_settings(self) -> RunSettings:
        """How chat turns and workflow runs treat their calls: this host's approval policy,
        broker and binder, and the turn's time limit."""
        config = self.config
        return RunSettings(config.approval, self.approvals, self.binder, config.turn_time_limit)

    async def close(self) -> None:
        if self.mcp is not None:
            await self.mcp.close()
        await self.manager.close()
        await self.http.aclose()
        self.grants.close()
        self.store.close()

    def plugin_data(self, plugin_id: str) -> Path:
        """The plugin's data folder: its worker's TMP and HOME (grants' copies are kept out
        of it, in <data>/grants, where one conversation's cannot reach another's)."""
        return self.config.data_dir / "plugin-data" / plugin_id

    def permitted(self, callback: ToolCallback, tenant: str, actor: str) -> bool:
        permission = getattr(callback, "required_permission", None)
        return permission is None or self.actors.permits(tenant, actor, permission)

    def _available(self, plugin_id: str) -> bool:
        row = self.store.plugin(plugin_id)
        return row is not None and row.enabled

    def catalog(self) -> list[CatalogEntry]:
        """The workflow catalog (spec: host.md#saved-workflows): every tool offered now, with
        identity and revision."""
        return from_snapshot(self.registry.snapshot())

    def discover(self, tenant: str, actor: str) -> list[dict[str, Any]]:
        """The ERP tools this actor may use in this tenant, with their active state
        (spec: erp.md#ownership-and-discovery)."""
        owners = self.store.tool_codes()
        listed = []
        for row in self.store.plugins():
            for decl in erp_decls(row.manifest):
                if self.actors.permits(tenant, actor, decl.permission):
                    _, active = owners.get(decl.code, (row.id, False))
                    listed.append(
                        {
                            "toolCode": decl.code,
                            "name": decl.definition.name,
                            "description": decl.definition.description,
                            "plugin": row.id,
                            "applicationCode": decl.application,
                            "riskLevel": decl.risk,
                            "requiredPermission": decl.permission,
                            "strictPermissionCheck": decl.strict,
                            "active": active and row.enabled,
                        }
                    )
        return listed

    def _callbacks(self, row: PluginRow) -> list[ToolCallback]:
        if row.profile == "erp":
            return [
                RestToolCallback(
                    row.id, decl, self.http, self.config.erp_base_url, self.actors, self._available
                )
                for decl in erp_decls(row.manifest)
            ]
        return [
            WorkerToolCallback(row.id, decl, self.manager, self.grants, self._available)
            for decl in tool_decls(row.manifest)
        ]

    async def _refresh_worker(self, plugin_id: str) -> None:
        """After a lifecycle change: the plugin's worker spec becomes the one its row now
        says (none when it is gone, disabled or has no worker), and a worker started from
        another spec is stopped, also one whose start was under way."""
        row = self.store.plugin(plugin_id)
        spec = self._worker_spec(row) if row is not None and row.enabled else None
        limits = resource_limits(row.manifest) if row is not None else None
        await self.manager.replace(plugin_id, spec, resources=limits)

    @property
    def _hidden(self) -> tuple[Path, ...] | None:
        """What a worker's sandbox hides: the host's own data (its database, other plugins'
        folders), but what is bound inside it; None when workers run unconfined."""
        return (self.config.data_dir.resolve(),) if self.config.sandbox else None

    def _worker_spec(self, row: PluginRow) -> WorkerSpec | None:
        """How the plugin's worker starts; None for an ERP plugin or one without a worker
        (the manager is told why: a call's error names the missing file)."""
        if row.profile == "erp":
            return None
        self.manager.no_spec.pop(row.id, None)
        try:
            return manifest_spec(
                row.id,
                row.root,
                row.manifest,
                self.plugin_data(row.id),
                override=self.config.worker_commands.get(row.id),
                scratch=self.config.data_dir / "runtime-bin" / row.id,
                hidden=self._hidden,
                bounds=self.config.worker_limits,
                log_level=self.config.log_level,
                call_timeout=call_timeout(row.manifest),
                pass_env=self.config.worker_env,
            )
        except WorkerLaunchError as exc:
            self.manager.no_spec[row.id] = exc.message
            return None
