"""Call timeout precedence (spec: fengyu-worker.md#timeouts-and-the-end-of-input): tool, then
caller, then backend default, then 60 s."""

from __future__ import annotations

MIN_SECONDS = 1.0
MAX_SECONDS = 600.0
DEFAULT_SECONDS = 60.0


def effective_timeout(
    tool: float | None = None, caller: float | None = None, backend: float | None = None
) -> float:
    """The first declared value in precedence order, clamped to [1, 600] seconds."""
    for value in (tool, caller, backend):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return min(max(float(value), MIN_SECONDS), MAX_SECONDS)
    return DEFAULT_SECONDS
