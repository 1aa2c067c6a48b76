"""Declared effects, observed: what a tool's calls did, judged against its effect
(spec: fengyu-worker.md#effects-on-files).

A tool's effect decides whether the user is asked before it runs (read tools are not asked),
so the kit does not take the plugin's word for it. The tool checks (FY-TOOL-*) already make
their calls through EffectWatch; these items judge that log, and make calls of their own only
when it is empty (when they run alone, say with -k FY-EFF).
"""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import strategies as st

from conformance.checks.fengyu_tools import ToolRun
from conformance.fengyu.effects import Observation
from conformance.fengyu.manifest import AiTool
from conformance.fengyu.net_namespace import isolation
from conformance.findings import Finding, NotApplicable, shown
from conformance.properties import Counterexample, find_counterexample
from conformance.registry import CheckContext, check

SHOWN_CHANGES = 10
COMPARED_CALLS = 3  # calls repeated without network, per tool (successful ones first)


def effect_run(ctx: CheckContext, effects: tuple[str, ...]) -> ToolRun:
    """The tool's run, when it declares one of effects (a missing effect counts as external,
    spec: host.md#approval-by-effect); otherwise there is nothing to hold it to."""
    tool = ctx.tool
    declared = tool.effect if isinstance(tool, AiTool) and tool.effect is not None else "external"
    if declared not in effects:
        raise NotApplicable(f"the tool declares effect {declared!r}")
    return ToolRun(ctx)


def observed(run: ToolRun) -> list[Observation]:
    """The tool's observed calls; when no tool check has called it yet, calls of its own with
    valid inputs."""
    name = str(run.tool.name)
    if not run.workers.effects.observed(name):

        def attempt(data: st.DataObject) -> Counterexample | None:
            run.call(run.files.substitute(run.space.draw_valid(data.draw), run.classes, data.draw))
            return None

        find_counterexample(attempt, run.workers.settings)
    calls = run.workers.effects.observed(name)
    if not calls:
        raise NotApplicable("no call of the tool could be made")
    return calls


def _changed(run: ToolRun, declared: str, what: str) -> Iterator[Finding]:
    for observation in observed(run):
        for during, found in ((True, observation.changes), (False, observation.late)):
            if not found:
                continue
            shown = [f"  {c.describe()}" for c in found[:SHOWN_CHANGES]]
            if len(found) > SHOWN_CHANGES:
                shown.append(f"  ... and {len(found) - SHOWN_CHANGES} more")
            when = "a call" if during else "after a call answered, something it started"
            problem = f"declares effect {declared!r}, but {when} {what}:\n" + "\n".join(shown)
            yield from run.finding(Counterexample(problem, observation.outcome))
            return
    if run.workers.effects.unwatched:
        raise NotApplicable(run.workers.effects.unwatched)


@check("FY-EFF-001")
def read_tools_change_no_file(ctx: CheckContext) -> Iterator[Finding]:
    run = effect_run(ctx, ("read",))
    yield from _changed(run, "read", "changed files outside its data folder (TMP)")


@check("FY-EFF-002")
def write_tools_change_only_grants(ctx: CheckContext) -> Iterator[Finding]:
    run = effect_run(ctx, ("write",))
    yield from _changed(run, "write", "changed files outside its writable grants and TMP")


@check("FY-EFF-003")
def read_and_write_tools_stay_offline(ctx: CheckContext) -> Iterator[Finding]:
    run = effect_run(ctx, ("read", "write"))
    calls = observed(run)
    declared = str(run.tool.effect)
    for observation in calls:
        if observation.connections:
            targets = sorted({c.target for c in observation.connections})
            lines = [f"  {c.request_line or c.target}" for c in observation.connections[:5]]
            problem = (
                f"declares effect {declared!r}, but a call opened a network connection to "
                f"{', '.join(targets)} (through the proxy the kit sets in HTTP_PROXY):\n"
                + "\n".join(lines)
            )
            yield from run.finding(Counterexample(problem, observation.outcome))
            return
    pair = run.workers.network_pair()
    if pair is None:
        raise NotApplicable(
            "only proxy-aware clients could be watched, and they opened no connection; "
            f"a worker without network cannot be started here: {isolation()[1]}"
        )
    succeeded = [o for o in calls if o.outcome.succeeded]
    others = [o for o in calls if not o.outcome.succeeded] if pair.traced else []
    compared = 0
    for observation in [*succeeded, *others][:COMPARED_CALLS]:
        params = observation.outcome.request["params"]
        paired = pair.call(run.tool.method, params, run.timeout, run.files.fresh_outputs)
        compared += paired.control.succeeded
        problems = []
        if paired.attempts:
            problems.append(
                f"tried to connect to {', '.join(paired.attempts[:5])} (its system calls traced "
                "with strace in a copy of the worker without network)"
            )
        if paired.control.succeeded and not paired.offline.succeeded:
            offline = paired.offline
            got = shown(offline.value, 500) if offline.value else offline.message
            problems.append(
                "needs the network: a fresh copy of the worker answers this call with success, "
                "and a copy with no network (an empty network namespace, "
                f"`{' '.join(isolation()[0][:-1])}`) given the same calls answered "
                f"{offline.kind}: {got}"
            )
        if problems:
            problem = f"declares effect {declared!r}, but a call " + "; and it ".join(problems)
            yield from run.finding(Counterexample(problem, observation.outcome))
            return
    if not compared and not pair.traced:
        raise NotApplicable(
            "no call that succeeded also succeeded in a fresh copy of the worker (the tool may "
            "need earlier calls, or no call succeeded at all), so none could be compared with "
            "a copy without network; the proxy saw no connection (strace, which would see "
            "attempts, is not available here)"
        )
