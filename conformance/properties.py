"""Run a property with hypothesis and keep the minimal counterexample for the report.

Checks describe one attempt (draw an input, call the worker, judge the outcome); this
module runs it under the kit's hypothesis settings. A hang short-circuits the search: every
further attempt would cost a full timeout, so the first hanging input is reported unshrunk.
A random search runs under a seed the kit chooses, so a rerun line can name it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from conformance.findings import NotApplicable
from conformance.search_settings import PropertySettings, seeds_being_recorded
from conformance.strategies import GeneratorGap

# Every phase but explain: explaining a failure costs hundreds of extra worker calls and the
# report already shows the minimal request, the reply and a reproduction.
SEARCH_PHASES = tuple(p for p in Phase if p is not Phase.explain)


@dataclass(frozen=True)
class Counterexample:
    problem: str
    outcome: Any
    shrunk: bool = True
    hang: bool = False
    fix: str = ""


Attempt = Callable[[st.DataObject], Counterexample | None]


def find_counterexample(attempt: Attempt, options: PropertySettings) -> Counterexample | None:
    """The minimal failing attempt, or None when every attempt passed.

    Raises NotApplicable when inputs cannot be generated for this schema, or when every
    attempt was filtered out (assume) before it called anything: no call, no verdict.
    """
    found: list[Counterexample] = []
    hung: list[Counterexample] = []
    gaps: list[str] = []
    called = [0]
    chosen = None
    if options.seed is None and not options.derandomize:
        chosen = random.getrandbits(32)

    @settings(
        max_examples=options.examples,
        deadline=None,
        database=None,
        derandomize=options.derandomize and options.seed is None,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        print_blob=False,
    )
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        if hung or gaps:
            raise AssertionError("stop")
        try:
            counterexample = attempt(data)
        except GeneratorGap as exc:
            gaps.append(str(exc))
            raise AssertionError(str(exc)) from None
        called[0] += 1
        if counterexample is not None:
            found.append(counterexample)
            if counterexample.hang:
                hung.append(counterexample)
            raise AssertionError(counterexample.problem)

    chosen_or_given = options.seed if options.seed is not None else chosen
    run = seed(chosen_or_given)(prop) if chosen_or_given is not None else prop
    try:
        run()
    except Unsatisfiable:
        raise NotApplicable("no input could be generated for this check") from None
    except Exception:
        if not (found or gaps):
            raise
    if gaps:
        raise NotApplicable(gaps[0])
    if not called[0]:
        raise NotApplicable(
            "every generated input was filtered out before a call: nothing to judge"
        )
    if found and chosen is not None and (seeds := seeds_being_recorded()) is not None:
        seeds.append(chosen)
    if hung:
        return replace(hung[0], shrunk=False)
    return found[-1] if found else None
