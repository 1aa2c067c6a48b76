"""What can go wrong when calling a worker; each carries what a user needs to act on it."""

from __future__ import annotations

from typing import Any


class WorkerError(Exception):
    """Base of every worker call failure; `stderr` is the worker's recent log tail."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.stderr = stderr


class WorkerLaunchError(WorkerError):
    """No way to start the worker (no command, missing executable, exec failed)."""


class WorkerTimeout(WorkerError):
    """The call took longer than its timeout; the worker was killed and will restart."""


class WorkerCrashed(WorkerError):
    """The worker exited or closed stdout while calls were pending."""


class WorkerProtocolError(WorkerError):
    """The worker broke the framing (e.g. a frame over 16 MiB); it was killed."""


class WorkerRpcError(WorkerError):
    """A JSON-RPC error response: a business error, the worker stays up."""

    def __init__(self, code: int, message: str, data: Any = None, stderr: str = "") -> None:
        super().__init__(f"{message} (code {code})", stderr)
        self.code = code
        self.rpc_message = message
        self.data = data
