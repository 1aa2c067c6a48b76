"""PluginProcessManager: one lazily started worker per plugin, restarted after a failure.

A timeout or a crash costs the pending calls and the process, never the host: the next call
starts a fresh worker. Params arrive with their FileRefs already handed over as paths
(grants.GrantStore.prepare).
Whatever a stopped worker started is ended with it (connection.py, lineage.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from plugin_spec.fengyu_decls import ResourceLimits
from plugin_spec.json_types import JsonValue, ReadOnlyJson
from reference_host.process.connection import StrayObserver, WorkerConnection
from reference_host.process.launch import WorkerSpec
from reference_host.process.limits import (
    ENFORCED,
    LimitPolicy,
    Overrun,
    ResourceWatch,
)
from reference_host.process.record import LineageRecord
from reference_host.process.start_gate import StartGate
from reference_host.process.timeouts import effective_timeout
from reference_host.process.worker_errors import WorkerLaunchError

Grants = tuple[tuple[Path, ...], tuple[Path, ...]]  # folders: writable, readable


class PluginProcessManager:
    """Starts, calls and stops the workers of registered plugins."""

    def __init__(self, record: LineageRecord | None = None, limits: LimitPolicy = ENFORCED) -> None:
        """observers see (plugin id, method, params) of each call as dispatched, FileRefs
        already resolved: diagnostics for tests and the kit's host checks. record keeps
        the lineage token of each worker until its processes are ended (record.py). limits
        says how declared resources are watched (limits.py); overrun_observers see (plugin
        id, overrun) of each overrun; stdout_observers see (plugin id, line, problem) of each
        stdout line that is not a JSON-RPC response (connection.stdout_problem)."""
        self._record = record
        self._policy = limits
        self._resources: dict[str, ResourceLimits] = {}
        self.overrun_observers: list[Callable[[str, Overrun], None]] = []
        self.stdout_observers: list[Callable[[str, str, str], None]] = []
        self._specs: dict[str, WorkerSpec] = {}
        # why a plugin has no spec (its runtime's file is missing...), for the call's error
        self.no_spec: dict[str, str] = {}
        self._connections: dict[str, WorkerConnection] = {}
        self._gates: dict[str, StartGate] = {}
        self.observers: list[Callable[[str, str, ReadOnlyJson], None]] = []
        self._retiring: set[asyncio.Task[None]] = set()

    def register(self, spec: WorkerSpec, resources: ResourceLimits | None = None) -> None:
        """Add or replace a plugin's worker spec and its declared resources; a running old
        worker keeps serving until stopped, so an upgrade takes effect with the next start."""
        self._specs[spec.plugin_id] = spec
        self._resources[spec.plugin_id] = resources or ResourceLimits()

    async def replace(
        self,
        plugin_id: str,
        spec: WorkerSpec | None,
        grace: float = 5.0,
        resources: ResourceLimits | None = None,
    ) -> None:
        """Make spec the plugin's worker spec (None: the plugin has no worker now) and stop a
        worker started from another one.

        Taken through the plugin's start gate: a start already under way from the old spec
        finishes first and is then stopped, so no worker of a replaced folder outlives this;
        the starts queued behind it wait, and then start from the new spec (start_gate.py).
        Calls already sent to the old worker get their answers while it drains its stdin.
        """
        async with self._gate(plugin_id).change():
            if spec is None:
                self._specs.pop(plugin_id, None)
            else:
                self._specs[plugin_id] = spec
            self._resources[plugin_id] = resources or ResourceLimits()
            stale = self._connections.get(plugin_id)
            if stale is not None and stale.spec != spec:
                del self._connections[plugin_id]
            else:
                stale = None
        if stale is not None:
            await stale.close(grace)

    async def preflight(self, spec: WorkerSpec, grace: float = 5.0) -> None:
        """Start a worker from spec and stop it again, as FengYu's update gate does: raises
        what the start raised (WorkerHandshakeError for a refused handshake)."""
        connection = await WorkerConnection.start(spec, self._record)
        await connection.close(grace)

    def connection(self, plugin_id: str) -> WorkerConnection | None:
        return self._connections.get(plugin_id)

    async def invoke(
        self,
        plugin_id: str,
        method: str,
        params: ReadOnlyJson,
        *,
        tool_timeout: float | None = None,
        caller_timeout: float | None = None,
        method_timeout: float | None = None,
        grants: Grants | None = None,
    ) -> JsonValue:
        """Call method on the plugin's worker and return its result.

        grants: the folders (writable, readable) of the calling conversation's grants. In
        the sandbox these are the only grant folders the worker reaches; a worker started
        with another conversation's is replaced, as FengYu restarts a worker whose grants
        changed, so no call sees another conversation's files.

        Raises a WorkerError subclass: WorkerRpcError for a JSON-RPC error (the worker stays
        up), and WorkerTimeout or WorkerCrashed otherwise (the next call restarts the worker).
        """
        spec = self._specs.get(plugin_id)
        if spec is None:
            raise self._no_worker(plugin_id)
        timeout = effective_timeout(
            tool_timeout, caller_timeout, spec.call_timeout, method=method_timeout
        )
        for observe in self.observers:
            observe(plugin_id, method, params)
        connection = self._ready(plugin_id, grants) or await self._running(plugin_id, grants)
        # paths into the folders the sandbox shows elsewhere (a FileRef's copy), as the worker
        # sees them, and back (sandbox.Place)
        view = connection.spec.view
        return view.outside_value(await connection.call(method, view.inside_value(params), timeout))

    async def start(self, plugin_id: str) -> None:
        """Start the plugin's worker (and greet it) unless one is running; raises what the
        start raised."""
        await self._running(plugin_id)

    async def notify(self, plugin_id: str, method: str, params: ReadOnlyJson) -> None:
        """Send a notification (no answer comes back), within the plugin's call timeout."""
        spec = self._specs.get(plugin_id)
        if spec is None:
            raise self._no_worker(plugin_id)
        connection = await self._running(plugin_id)
        await connection.notify(method, params, effective_timeout(backend=spec.call_timeout))

    async def stop(self, plugin_id: str, grace: float = 5.0) -> None:
        connection = self._connections.pop(plugin_id, None)
        if connection is not None:
            await connection.close(grace)

    async def close(self, grace: float = 5.0) -> None:
        """Stop every worker: stdin closed, processes reaped, stragglers killed after grace."""
        await asyncio.gather(*(self.stop(pid, grace) for pid in list(self._connections)))
        await asyncio.gather(*self._retiring, return_exceptions=True)
        if self._record is not None:
            await asyncio.to_thread(self._record.close)

    async def _running(self, plugin_id: str, grants: Grants | None = None) -> WorkerConnection:
        """The plugin's running worker, started (or replaced) to serve grants; None for
        grants takes whichever is running."""
        connection = self._connections.get(plugin_id)
        spec = self._spec(plugin_id, grants)
        if _serves(connection, spec, grants):
            assert connection is not None
            return connection  # the common case passes no gate
        async with self._gate(plugin_id).start():
            spec = self._spec(plugin_id, grants)
            connection = self._connections.get(plugin_id)
            if not _serves(connection, spec, grants):
                if connection is not None and connection.alive:
                    self._retire(connection)  # its calls in flight still get their answers
                elif connection is not None:
                    await connection.close(grace=0)
                connection = await WorkerConnection.start(
                    spec, self._record, self._watch(plugin_id), self._stray(plugin_id)
                )
                self._connections[plugin_id] = connection
            assert connection is not None
            return connection

    def _ready(self, plugin_id: str, grants: Grants | None) -> WorkerConnection | None:
        """The running worker when a call without grants can take it as it is (any running
        worker serves one): found without a coroutine of its own."""
        connection = self._connections.get(plugin_id)
        if grants is None and connection is not None and connection.alive:
            return connection
        return None

    def _no_worker(self, plugin_id: str) -> WorkerLaunchError:
        """The error of a call to a plugin without a worker spec, saying why where known."""
        why = self.no_spec.get(plugin_id)
        return WorkerLaunchError(f"plugin {plugin_id} has no worker" + (f": {why}" if why else ""))

    def waiting_starts(self, plugin_id: str) -> int:
        """Calls waiting to start the plugin's worker behind the start under way."""
        gate = self._gates.get(plugin_id)
        return 0 if gate is None else gate.waiting_starts

    def _gate(self, plugin_id: str) -> StartGate:
        return self._gates.setdefault(plugin_id, StartGate())

    def _spec(self, plugin_id: str, grants: Grants | None) -> WorkerSpec:
        """The plugin's spec, its sandbox given the calling conversation's grant folders."""
        spec = self._specs.get(plugin_id)
        if spec is None:
            raise self._no_worker(plugin_id)
        if grants is None or spec.sandbox is None:
            return spec
        return replace(spec, sandbox=spec.sandbox.with_grants(*grants))

    def _retire(self, connection: WorkerConnection, grace: float = 5.0) -> None:
        """Close a replaced worker in the background: stdin closed, answers drained."""
        task = asyncio.get_running_loop().create_task(connection.close(grace))
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    def _watch(self, plugin_id: str) -> ResourceWatch:
        """What the next start of the plugin's worker is watched for."""

        def report(overrun: Overrun) -> None:
            for observe in self.overrun_observers:
                observe(plugin_id, overrun)

        return ResourceWatch(self._resources.get(plugin_id, ResourceLimits()), self._policy, report)

    def _stray(self, plugin_id: str) -> StrayObserver:
        """What the next start of the plugin's worker tells of its stray stdout lines."""

        def report(line: str, problem: str) -> None:
            for observe in self.stdout_observers:
                observe(plugin_id, line, problem)

        return report


def _serves(connection: WorkerConnection | None, spec: WorkerSpec, grants: Grants | None) -> bool:
    """Whether connection is a live worker fit for a call with grants."""
    if connection is None or not connection.alive:
        return False
    return grants is None or connection.spec == spec
