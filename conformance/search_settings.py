"""How the kit's property searches draw their examples, and the seeds of those that failed.

Apart from properties.py, which imports hypothesis: a run reads these settings and records
failing seeds around every item, also where no search runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from conformance.options import DEFAULT_EXAMPLES


@dataclass(frozen=True)
class PropertySettings:
    """The kit's hypothesis settings: CI-safe by default (bounded, no example database)."""

    examples: int = DEFAULT_EXAMPLES
    seed: int | None = None
    derandomize: bool = False


_FAILING_SEEDS: ContextVar[list[int] | None] = ContextVar("failing_seeds", default=None)


@contextmanager
def failing_seeds() -> Iterator[list[int]]:
    """The seeds the kit chose for searches that found a counterexample inside the block:
    a rerun with `--conformance-seed` of one of them finds it again."""
    seeds: list[int] = []
    token = _FAILING_SEEDS.set(seeds)
    try:
        yield seeds
    finally:
        _FAILING_SEEDS.reset(token)


def seeds_being_recorded() -> list[int] | None:
    """Where a search that fails adds the seed it chose (None outside failing_seeds)."""
    return _FAILING_SEEDS.get()
