"""Call timeout precedence (spec: host.md#timeouts-and-resources): the tool's timeoutSeconds,
then its method's, then the caller's, then backend.callTimeoutSeconds, then 60 s.

FengYu's own resolver knows only the caller, the plugin default and 60; where the per-tool and
per-method values enter is not stated, so the order of the first two is this project's
decision (the protocol-1 worker reference ranked the tool's value first on the AI path).
"""

from __future__ import annotations

MIN_SECONDS = 1.0
MAX_SECONDS = 600.0
DEFAULT_SECONDS = 60.0


def effective_timeout(
    tool: float | None = None,
    caller: float | None = None,
    backend: float | None = None,
    *,
    method: float | None = None,
) -> float:
    """The first declared value in precedence order (tool, method, caller, backend), clamped
    to [1, 600] seconds; 60 s when none is declared."""
    for value in (tool, method, caller, backend):
        if value is not None and type(value) is not bool and isinstance(value, (int, float)):
            return min(max(float(value), MIN_SECONDS), MAX_SECONDS)
    return DEFAULT_SECONDS
