"""Worker processes: how a plugin's worker is launched, spoken to, timed out and restarted."""

from reference_host.process.errors import (
    WorkerCrashed,
    WorkerError,
    WorkerLaunchError,
    WorkerProtocolError,
    WorkerRpcError,
    WorkerTimeout,
)
from reference_host.process.launch import WorkerSpec, worker_command
from reference_host.process.manager import PluginProcessManager
from reference_host.process.timeouts import effective_timeout

__all__ = [
    "PluginProcessManager",
    "WorkerCrashed",
    "WorkerError",
    "WorkerLaunchError",
    "WorkerProtocolError",
    "WorkerRpcError",
    "WorkerSpec",
    "WorkerTimeout",
    "effective_timeout",
    "worker_command",
]
