"""Worker processes: how a plugin's worker is launched, spoken to, timed out and restarted."""

from reference_host.process.errors import (
    WorkerCancelled,
    WorkerCrashed,
    WorkerError,
    WorkerHandshakeError,
    WorkerLaunchError,
    WorkerPermissionDenied,
    WorkerProtocolError,
    WorkerResourceLimit,
    WorkerRpcError,
    WorkerTimeout,
)
from reference_host.process.launch import WorkerSpec, manifest_spec, worker_command
from reference_host.process.manager import PluginProcessManager
from reference_host.process.timeouts import effective_timeout

__all__ = [
    "PluginProcessManager",
    "WorkerCancelled",
    "WorkerCrashed",
    "WorkerError",
    "WorkerHandshakeError",
    "WorkerLaunchError",
    "WorkerPermissionDenied",
    "WorkerProtocolError",
    "WorkerResourceLimit",
    "WorkerRpcError",
    "WorkerSpec",
    "WorkerTimeout",
    "effective_timeout",
    "manifest_spec",
    "worker_command",
]
