"""Declared effects, observed: what a tool's calls did, judged against its effect
(spec: fengyu-worker.md#effects-on-files).

A tool's effect decides whether the user is asked before it runs (read tools are not asked),
so the kit does not take the plugin's word for it. The tool checks (FY-TOOL-*) already make
their calls through EffectWatch; these items judge that log, and make calls of their own only
when it is empty (when they run alone, say with -k FY-EFF).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from hypothesis import strategies as st

from conformance.checks.fengyu import FengYuContext, check
from conformance.checks.fengyu_tools import ToolRun
from conformance.fengyu.attribution import Unattributed
from conformance.fengyu.effects import Observation
from conformance.fengyu.manifest import AiTool
from conformance.findings import Finding, NotApplicable, NotExercised
from conformance.properties import Counterexample, find_counterexample
from plugin_spec.json_types import JsonValue

SHOWN_CHANGES = 10
REFUSED_NOTE = (
    "(the worker runs in FengYu's sandbox, as a host runs it: the package is read-only and "
    "only its data folder and the call's write grants are writable, so FengYu refuses "
    "these writes and the tool fails for its users)"
)


def effect_run(ctx: FengYuContext, effects: tuple[str, ...]) -> ToolRun:
    """The tool's run, when it declares one of effects (a missing effect counts as external,
    spec: host.md#approval-by-effect); otherwise there is nothing to hold it to."""
    tool = ctx.tool
    declared = tool.effect if isinstance(tool, AiTool) and tool.effect is not None else "external"
    if declared not in effects:
        raise NotApplicable(f"the tool declares effect {declared!r}")
    return ToolRun(ctx)


def observed(run: ToolRun) -> list[Observation]:
    """The tool's observed calls, settled (its worker gone); when no tool check has called
    it yet, calls of its own with valid inputs first."""
    effects = run.workers.effects
    if effects.unwatched:
        raise NotApplicable(effects.unwatched)
    name = str(run.tool.name)
    if not effects.log.get(name):

        def attempt(data: st.DataObject) -> Counterexample | None:
            run.call(run.files.substitute(run.space.draw_valid(data.draw), run.classes, data.draw))
            return None

        find_counterexample(attempt, run.workers.settings)
    calls = effects.observed(name)
    if not calls:
        raise NotApplicable("no call of the tool could be made")
    return calls


def unverified(run: ToolRun, calls: list[Observation]) -> None:
    """Raise NotExercised when every observed call of the tool was refused (a check that
    found nothing against it): its effect claim is not verified."""
    if any(call.outcome.succeeded for call in calls):
        return
    last_error = run.not_exercised([call.outcome for call in calls]).last_error
    raise NotExercised(
        f"every call of {run.tool.name!r} was refused (a business error or a JSON-RPC error): "
        f"it did nothing whose effects could be judged, so its effect {run.tool.effect!r} is "
        "not verified (FY-TOOL-001 says why)",
        last_error,
    )


class _Described(Protocol):
    def describe(self) -> str: ...


def _listed(found: Sequence[_Described]) -> str:
    shown = [f"  {item.describe()}" for item in found[:SHOWN_CHANGES]]
    if len(found) > SHOWN_CHANGES:
        shown.append(f"  ... and {len(found) - SHOWN_CHANGES} more")
    return "\n".join(shown)


def _changed(run: ToolRun, declared: str, what: str) -> Iterator[Finding]:
    calls = observed(run)
    for observation in calls:
        for during, changed, attempts in (
            (True, observation.changes, observation.attempts),
            (False, observation.late_changes, observation.late),
        ):
            # A write the sandbox allowed went into the data folder or a writable grant.
            writes = [a for a in attempts if a.kind == "write" and a.refused]
            if not changed and not writes:
                continue
            when = "a call" if during else "after a call answered, something it started"
            problem = f"declares effect {declared!r}, but {when} {what}:\n" + _listed(
                [*changed, *writes]
            )
            if writes:
                problem += f"\n{REFUSED_NOTE}"
            problem = run.workers.shown(problem)
            yield from run.finding(Counterexample(problem, observation.outcome))
            return
    unverified(run, calls)


@check("FY-EFF-001")
def read_tools_change_no_file(ctx: FengYuContext) -> Iterator[Finding]:
    run = effect_run(ctx, ("read",))
    yield from _changed(run, "read", "changed or tried to change files outside its data folder")


@check("FY-EFF-002")
def write_tools_change_only_grants(ctx: FengYuContext) -> Iterator[Finding]:
    run = effect_run(ctx, ("write",))
    yield from _changed(
        run, "write", "changed or tried to change files outside its writable grants and data folder"
    )


@check("FY-EFF-003")
def read_and_write_tools_stay_offline(ctx: FengYuContext) -> Iterator[Finding]:
    run = effect_run(ctx, ("read", "write"))
    declared = str(run.tool.effect)
    calls = observed(run)
    for observation in calls:
        connections = observation.connections
        if connections:
            spec = run.workers.spec
            offline = spec is None or spec.sandbox is None or not spec.sandbox.network
            how = ", ".join(dict.fromkeys(c.describe(tried=offline) for c in connections))
            if offline:
                how += (
                    ", and its sandbox has no network (the "
                    "manifest asks for none of network, network.email, database): under FengYu "
                    "the call never reaches it"
                )
            problem = f"declares effect {declared!r}, but a call {how}:\n" + "\n".join(
                f"  {c.line}" for c in connections[:5]
            )
            yield from run.finding(Counterexample(problem, observation.outcome))
            return
    unverified(run, calls)


def _forbids(effect: JsonValue) -> bool:
    """Whether a tool of this effect may not make a refused write, a connection or a send
    (FY-EFF-001..003)."""
    return effect in ("read", "write")


@check("FY-EFF-004")
def effects_belong_to_a_call(ctx: FengYuContext) -> Iterator[Finding]:
    workers = ctx.workers
    if workers is None or not workers.declared:
        raise NotApplicable("the plugin declares no worker")
    effects = workers.effects
    if effects.unwatched:
        raise NotApplicable(effects.unwatched)
    declared: dict[str, JsonValue] = {
        str(t.name): t.effect or "external"
        for t in workers.plugin.tools
        if isinstance(t, AiTool) and isinstance(t.name, str)
    }
    if workers.launch_error is not None or not workers.answers_at_start:
        raise NotApplicable(workers.start_failure())
    # Alone in its process (-k, or -n where the tools' items ran elsewhere): a call of each
    # tool first, as FY-WRK-020 makes; it judges the calls of its own process.
    workers.exercise("FY-EFF-004")
    effects.settle()
    counted = [
        u
        for u in effects.unattributed
        if (u.attempt.kind != "write" or u.attempt.refused)
        and any(_forbids(declared.get(t, "external")) for t in u.suspects)
    ]
    if counted:
        yield _unattributed_finding(ctx, counted, declared)


def _unattributed_finding(
    ctx: FengYuContext, found: list[Unattributed], declared: dict[str, JsonValue]
) -> Finding:
    suspects = list(dict.fromkeys(t for u in found for t in u.suspects))
    named = ", ".join(f"{t!r} (effect {declared.get(t, 'external')!r})" for t in suspects)
    assert ctx.workers is not None
    message = ctx.workers.shown(
        "the worker wrote or reached out when no single call can be named for it, so the "
        f"kit lays it at no tool's door; the tools that may have: {named}\n"
        + _listed(found)
        + "\n  the trace: "
        + found[0].attempt.line[:300]
    )
    return ctx.manifest_finding("/aiTools", message)
