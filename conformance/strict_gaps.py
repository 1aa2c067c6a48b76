"""Items a strict run may not leave unchecked (spec: docs/guide/options.md#--conformance-strict).

A skipped item is normally honest: there was nothing to check. Two kinds of skip are not: a
code-first folder whose build output is missing skips most of the catalog (44 of 56 items of
FengYu's react-* templates), and a machine without bubblewrap or strace skips every effect
check. A run that passes with those skips says nothing about what was skipped, so a strict
run fails when it has any, naming how many items could not run and why; a non-strict run
only says so. --conformance-allow-unobserved accepts the second kind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from conformance.fengyu.code_first import BUILD_ADVICE
from conformance.fengyu.syscall_trace import effects_unseen
from plugin_spec.json_types import JsonMapping

UNCHECKED_STATUSES = ("skipped", "not-applicable")
ALLOW_UNOBSERVED = "--conformance-allow-unobserved"
UNBUILT_FIX = (
    "build the folder (`fengyu build`) and run the kit on the built package, the folder with "
    "target/fengyu-manifest/manifest.json's content as its manifest.json"
)
UNOBSERVED_FIX = (
    "install what the reason names, or pass {flag} to accept a run that cannot see what "
    "tools do to files and the network"
)


@dataclass(frozen=True)
class Gap:
    """Items that could not run for one reason: how many, and what would let them run."""

    reason: str
    count: int
    fix: str


def strict_gaps(records: Iterable[JsonMapping], allow_unobserved: bool) -> list[Gap]:
    """The run's items (report records) skipped for a reason a strict run does not accept,
    counted by reason."""
    fixes = {BUILD_ADVICE: UNBUILT_FIX}
    if (unseen := effects_unseen()) and not allow_unobserved:
        fixes[unseen] = UNOBSERVED_FIX.format(flag=ALLOW_UNOBSERVED)
    counts = Counter(
        str(r.get("reason"))
        for r in records
        if r.get("status") in UNCHECKED_STATUSES and r.get("reason") in fixes
    )
    return [Gap(reason, count, fixes[reason]) for reason, count in counts.most_common()]
