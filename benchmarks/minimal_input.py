"""Section 10: the simplest valid input of a slow schema, as the kit finds it now against the
search it made before (hypothesis's explain phase included), timed in the same run.

The schema is shaped like excel-mcp-server's format_range, as pydantic writes it: required
strings, one with a `pattern` (so the kit's schema walk, conformance/simplest.py, gives up and
hypothesis searches), and many optional properties that may be null. On the real server that
search took 84.3 s with the explain phase and 0.2 s without, for the same input. Each
repetition builds a fresh InputSpace (its minimal() is worked out once per space, then a copy
is handed out: the second ask of a space is the row's note).
"""

from __future__ import annotations

import time

from hypothesis import Phase, find
from hypothesis import settings as search_settings

from benchmarks.common import Row, Settings, median
from conformance.strategies import InputSpace

SECTION = "10 minimal input of a slow schema"
TARGET_RATIO = 0.2  # the kit's search / the search with explain, at most
OPTIONAL_KINDS = ("boolean", "string", "integer", "object")


def slow_schema(optional: int) -> dict[str, object]:
    properties: dict[str, object] = {
        "filepath": {"type": "string"},
        "sheet_name": {"type": "string"},
        "start_cell": {"type": "string", "pattern": "^[A-Z]{1,3}[0-9]{1,7}$"},
    }
    for i in range(optional):
        kind = OPTIONAL_KINDS[i % len(OPTIONAL_KINDS)]
        properties[f"option_{i}"] = {"anyOf": [{"type": kind}, {"type": "null"}], "default": None}
    return {
        "type": "object",
        "properties": properties,
        "required": ["filepath", "sheet_name", "start_cell"],
    }


def with_explain(space: InputSpace) -> object:
    """minimal()'s search as it was: every phase, explain included."""
    return find(
        space.strategy,
        space.validator.is_valid,
        settings=search_settings(database=None, max_examples=200, phases=tuple(Phase)),
    )


def run(settings: Settings) -> tuple[list[Row], list[str]]:
    reps = 1 if settings.quick else 3
    schema = slow_schema(6 if settings.quick else 12)
    now: list[float] = []
    before: list[float] = []
    again: list[float] = []
    found: set[str] = set()
    for _ in range(reps):  # the two searches take turns
        space = InputSpace.of(schema)
        start = time.perf_counter()
        found.add(repr(space.minimal()))
        now.append(time.perf_counter() - start)
        start = time.perf_counter()
        space.minimal()
        again.append(time.perf_counter() - start)
        start = time.perf_counter()
        found.add(repr(with_explain(InputSpace.of(schema))))
        before.append(time.perf_counter() - start)
    value, baseline = median(now), median(before)
    row = Row(
        SECTION,
        "minimal() / the search with explain",
        value,
        "with explain",
        baseline,
        unit="ms",
        target=f"<= {TARGET_RATIO:g}x",
        met=value / baseline <= TARGET_RATIO,
        note=(
            f"{len(schema['properties'])} properties, {reps} rep(s); the second ask of a space "
            f"{median(again) * 1e6:.0f} µs; inputs found: {' | '.join(sorted(found))}"
        ),
    )
    return [row], []
