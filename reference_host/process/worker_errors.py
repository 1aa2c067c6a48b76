"""What can go wrong when calling a worker; each carries what a user needs to act on it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plugin_spec.fengyu_runtime import CANCELLED_CODE, PERMISSION_DENIED_CODE, error_data_code

if TYPE_CHECKING:  # only its type: limits.py samples processes, errors stay plain
    from reference_host.process.limits import Overrun


class WorkerError(Exception):
    """Base of every worker call failure; `stderr` is the worker's recent log tail."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.stderr = stderr


class WorkerLaunchError(WorkerError):
    """No way to start the worker (no command, missing executable, exec failed)."""


class WorkerHandshakeError(WorkerLaunchError):
    """The worker did not pass FengYu's `$/fengyu/initialize` handshake; it was killed."""


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


class WorkerCancelled(WorkerRpcError):
    """The worker answered `data.code` CANCELLED: the call was cancelled, the worker is up."""

    def __init__(self, code: int, message: str, data: Any = None, stderr: str = "") -> None:
        super().__init__(code, message, data, stderr)
        self.message = f"the call was cancelled: {message}"


class WorkerPermissionDenied(WorkerRpcError):
    """The worker answered `data.code` PERMISSION_DENIED (FengYu's HTTP 403): what the
    caller sees says so, apart from any other business error."""

    def __init__(self, code: int, message: str, data: Any = None, stderr: str = "") -> None:
        super().__init__(code, message, data, stderr)
        self.message = f"permission denied by the plugin: {message}"


def rpc_error(error: Any, stderr: str = "") -> WorkerRpcError:
    """The exception for a JSON-RPC error object, by its FengYu `data.code`."""
    detail = error if isinstance(error, dict) else {}
    kind = {CANCELLED_CODE: WorkerCancelled, PERMISSION_DENIED_CODE: WorkerPermissionDenied}.get(
        error_data_code(detail) or "", WorkerRpcError
    )
    return kind(detail.get("code", 0), str(detail.get("message", "")), detail.get("data"), stderr)


class WorkerResourceLimit(WorkerError):
    """The worker's process tree went over its declared backend.resources (FengYu's fault
    RESOURCE_LIMIT); the pending calls failed and the tree was killed."""

    code = "RESOURCE_LIMIT"

    def __init__(self, overrun: Overrun, stderr: str = "") -> None:
        super().__init__(f"{self.code}: {overrun.message}; the worker was killed", stderr)
        self.overrun = overrun
