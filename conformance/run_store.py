"""What one kit run computes once and several of its items read.

A plugin's schema findings, each provider's judgement of its tools, its live worker: each is
asked for by many items and by the reports, and each belongs to the run. Kept here, they are
dropped with the run (the pytest session keeps the run in config.stash until unconfigure),
where a module-level cache would outlive it, unbounded, holding plugins of finished runs.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import ParamSpec, TypeVar, cast

P = ParamSpec("P")
T = TypeVar("T")


class RunStore:
    """Values keyed by the function that computes them and its arguments (a plugin is a key
    by identity), and what to do when the run ends."""

    def __init__(self) -> None:
        self._values: dict[tuple[Hashable, ...], object] = {}
        self._closers: list[Callable[[], object]] = []

    def once(self, compute: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """compute(*args, **kwargs), computed on the first ask of this run only."""
        key = (compute, *args, *sorted(kwargs.items()))
        if key not in self._values:
            self._values[key] = compute(*args, **kwargs)
        return cast(T, self._values[key])

    def on_close(self, closer: Callable[[], object]) -> None:
        """Call closer when the run ends (a worker to stop, a folder to remove)."""
        self._closers.append(closer)

    def close(self) -> None:
        """End the run: call the closers, newest first, and forget every value."""
        closers, self._closers = self._closers, []
        for closer in reversed(closers):
            closer()
        self._values.clear()
