"""One kit run: the plugin folders under test, what will be checked on each, and the verdicts.

Kept apart from the pytest hooks so that the rules (what a finding means for the outcome)
read in one place and can be tested without pytest's machinery.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Any

from conformance import checks  # noqa: F401  (registers every check)
from conformance.baseline import Baseline, ExpectedFailure
from conformance.catalog import Level, Requirement, load_catalog
from conformance.checks.fengyu_files import file_parameters, path_like_parameters
from conformance.checks.providers import provider_matrix
from conformance.erp.endpoints import EndpointServices
from conformance.erp.plugin import ErpPlugin
from conformance.fengyu.manifest import FENGYU_V1, FengYuPlugin
from conformance.fengyu.migrate import MigrationError, migrate_v1
from conformance.fengyu.services import WorkerServices
from conformance.findings import Finding, NotApplicable, named_requirements
from conformance.profiles import Plugin, Tool, load_plugin
from conformance.properties import PropertySettings, failing_seeds
from conformance.registry import CheckContext, run_checks
from conformance.upgrade import Upgrade, compare, current_manifest, read_previous
from plugin_spec.json_files import JsonFileError
from plugin_spec.plugin_folders import expand

# A plugin's live services: its worker's (FengYu) or its endpoints' (ERP).
Services = WorkerServices | EndpointServices


class KitUsageError(Exception):
    """A plugin folder the kit cannot check at all (missing, not a folder)."""


class Status(StrEnum):
    PASSED = "passed"
    WARNED = "warned"
    FAILED = "failed"
    SKIPPED = "skipped"  # blocked: another requirement's failure keeps it from running
    NOT_APPLICABLE = "not-applicable"  # nothing to check on this plugin (or without an option)
    EXPECTED = "expected-failure"
    STALE = "stale-baseline-entry"


# Statuses of an item that checked nothing: a run made only of them proves nothing.
UNCHECKED = frozenset({Status.SKIPPED, Status.NOT_APPLICABLE})


@dataclass(frozen=True)
class Verdict:
    status: Status
    findings: list[Finding]
    reason: str = ""
    blocked_by: tuple[str, ...] = ()
    seed: int | None = None  # the seed the kit chose for the search that failed

    @classmethod
    def skipped(cls, reason: str, blocked_by: tuple[str, ...]) -> Verdict:
        """Skipped because of blocked_by's failure, or not applicable when nothing blocks."""
        status = Status.SKIPPED if blocked_by else Status.NOT_APPLICABLE
        return cls(status, [], reason, blocked_by)


@dataclass(frozen=True)
class EndpointSettings:
    """Where and as whom the ERP endpoint checks call (--plugin-base-url and friends)."""

    base_url: str | None = None
    tenant: str = "conformance"
    actor: str = "conformance-kit"


@dataclass(frozen=True)
class Target:
    """One thing to check: a requirement on a plugin, or on one of its tools."""

    plugin: Plugin
    requirement: Requirement
    tool: Tool | None = None

    @property
    def tool_name(self) -> str | None:
        return str(self.tool.name) if self.tool is not None else None


@dataclass
class KitRun:
    plugins: list[Plugin]
    baseline: Baseline
    strict: bool = False
    worker_override: str | None = None
    settings: PropertySettings = field(default_factory=PropertySettings)
    endpoints: EndpointSettings = field(default_factory=lambda: EndpointSettings())
    previous: str | None = None
    worker_env: tuple[str, ...] = ()
    providers: frozenset[str] = frozenset()  # --conformance-provider: their requirements MUST
    labels: dict[int, str] = field(default_factory=dict)
    _upgrades: dict[int, Upgrade] = field(default_factory=dict)
    _workers: dict[int, Services] = field(default_factory=dict)
    _static_failures: dict[int, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def load(
        cls,
        dirs: list[str],
        baseline: Baseline,
        strict: bool,
        base: Path,
        worker_override: str | None = None,
        settings: PropertySettings | None = None,
        endpoints: EndpointSettings | None = None,
        previous: str | None = None,
        worker_env: tuple[str, ...] = (),
        providers: frozenset[str] = frozenset(),
    ) -> KitRun:
        given = []
        for raw in dirs:
            root = (base / raw).resolve()
            if not root.is_dir():
                raise KitUsageError(f"--plugin-dir {raw}: {root} is not a folder")
            given.append(root)
        roots = list(dict.fromkeys(expand(given)))
        plugins = [load_plugin(root) for root in roots]
        run = cls(
            plugins,
            baseline,
            strict,
            worker_override,
            settings or PropertySettings(),
            endpoints or EndpointSettings(),
            previous,
            worker_env,
            providers,
        )
        run.labels = _unique_labels(run.plugins)
        return run

    def label(self, plugin: Plugin) -> str:
        return self.labels[id(plugin)]

    def requirements_for(self, plugin: Plugin) -> list[Requirement]:
        """The catalog's requirements for the plugin's profile; those of a provider named by
        --conformance-provider are MUST in this run."""
        return [
            replace(r, level=Level.MUST) if r.provider in self.providers else r
            for r in load_catalog().values()
            if r.applies_to(plugin.profile)
        ]

    def targets(self, plugin: Plugin) -> list[Target]:
        """What to check on a plugin: each requirement once, per-tool ones once per tool."""
        tools = [t for t in plugin.tools if isinstance(t.name, str)]
        return [
            Target(plugin, requirement, tool)
            for requirement in self.requirements_for(plugin)
            for tool in (tools if requirement.per_tool else [None])
        ]

    def workers(self, plugin: Plugin) -> Services:
        """The plugin's live services, created on first use and closed by close(): its worker
        (FengYu) or its endpoints (ERP)."""
        if id(plugin) not in self._workers:
            self._workers[id(plugin)] = (
                EndpointServices(
                    self.endpoints.base_url,
                    self.endpoints.tenant,
                    self.endpoints.actor,
                    self.settings,
                )
                if isinstance(plugin, ErpPlugin)
                else WorkerServices(plugin, self.worker_override, self.settings, self.worker_env)
            )
        return self._workers[id(plugin)]

    def context(self, target: Target) -> CheckContext:
        """What the target's checks get: static checks nothing live, upgrade checks the
        comparison with the previous version, the rest the plugin's live services."""
        plugin, requirement = target.plugin, target.requirement
        context = CheckContext(plugin, requirement, self.peers(plugin), tool=target.tool)
        if requirement.suite == "manifest":
            return context
        if requirement.suite == "upgrade":
            return replace(context, upgrade=self.upgrade(plugin))
        services = self.workers(plugin)
        if isinstance(services, EndpointServices):
            return replace(context, endpoints=services)
        return replace(context, workers=services)

    def upgrade(self, plugin: Plugin) -> Upgrade | None:
        """The comparison with --previous-manifest (None without it); read once per plugin."""
        if self.previous is None:
            return None
        if id(plugin) not in self._upgrades:
            previous = read_previous(self.previous, plugin.root)
            try:
                current = current_manifest(plugin.root)
            except JsonFileError:
                return None  # the plugin's own files are broken: the static suite says how
            self._upgrades[id(plugin)] = compare(previous, current, plugin.label)
        return self._upgrades[id(plugin)]

    def close(self) -> None:
        """Stop every worker the run started and remove its scratch files."""
        for services in self._workers.values():
            services.close()
        self._workers.clear()

    def collectable(self) -> set[tuple[str, str]]:
        return {(self.label(p), r.id) for p in self.plugins for r in self.requirements_for(p)}

    def skip_reason(self, plugin: Plugin, requirement: Requirement) -> str | None:
        """Why a requirement cannot be checked at all: the plugin's files did not load, or a
        code-first folder has not been built."""
        if plugin.load_error is not None and requirement.id != plugin.load_requirement:
            return f"the plugin's files did not load ({plugin.load_requirement})"
        if isinstance(plugin, FengYuPlugin):
            return plugin.unbuilt_reason(requirement.id)
        return None

    def peers(self, plugin: Plugin) -> list[Plugin]:
        """The other plugins of the run that loaded: what cross-plugin checks compare with."""
        return [p for p in self.plugins if p is not plugin and p.load_error is None]

    def static_failures(self, plugin: Plugin) -> tuple[str, ...]:
        """The static MUST requirements the plugin fails, judged once per plugin: a host
        would refuse or misrepresent such a plugin, so the host suite waits on them. A
        provider's refusal is not among them: the reference host calls no provider."""
        if id(plugin) not in self._static_failures:
            peers = self.peers(plugin)
            static = [
                r
                for r in self.requirements_for(plugin)
                if r.suite == "manifest" and r.level is Level.MUST and not r.provider
            ]
            self._static_failures[id(plugin)] = tuple(
                r.id for r in static if _fails(CheckContext(plugin, r, peers))
            )
        return self._static_failures[id(plugin)]

    def blocked(self, plugin: Plugin, requirement: Requirement) -> Verdict | None:
        """The skip verdict of an item another requirement's failure keeps from running."""
        if reason := self.skip_reason(plugin, requirement):
            return Verdict.skipped(reason, named_requirements(reason))
        if requirement.suite == "host" and (failing := self.static_failures(plugin)):
            return Verdict.skipped(f"because the manifest fails {', '.join(failing)}", failing)
        return None

    @cached_property
    def stale_entries(self) -> list[ExpectedFailure]:
        """Baseline entries that name nothing this run checks."""
        return self.baseline.unmatched(self.collectable())

    @cached_property
    def summaries(self) -> list[dict[str, Any]]:
        """What the reports say about each plugin beyond pass/fail: how each provider takes its
        tools, how the host will fill its file parameters and, for a legacy manifest, its v2
        equivalent."""
        return [self._summary(p) for p in self.plugins]

    def _summary(self, plugin: Plugin) -> dict[str, Any]:
        summary: dict[str, Any] = {
            "label": self.label(plugin),
            "profile": plugin.profile,
            "root": str(plugin.root),
            "file_parameters": [],
        }
        if plugin.load_error is not None:
            return summary
        summary["providers"] = provider_matrix(plugin, self.peers(plugin))
        if (upgrade := self.upgrade(plugin)) is not None:
            summary["upgrade"] = {
                "from": upgrade.previous_version,
                "to": upgrade.version,
                "breaking": [line for c in upgrade.changes.breaking for line in c.describe()],
                "revised": upgrade.changes.revised,
                "added": list(upgrade.changes.added),
            }
        if not isinstance(plugin, FengYuPlugin):
            return summary
        summary["file_parameters"] = [f.to_json() for f in file_parameters(plugin)]
        summary["path_like_parameters"] = [p.to_json() for p in path_like_parameters(plugin)]
        if plugin.profile == FENGYU_V1:
            try:
                summary["v2_equivalent"] = migrate_v1(plugin.data).manifest
            except MigrationError as exc:
                summary["v2_equivalent_error"] = str(exc)
        return summary

    def judge(self, target: Target) -> Verdict:
        """Run the target's checks and decide the outcome."""
        plugin, requirement = target.plugin, target.requirement
        if blocked := self.blocked(plugin, requirement):
            return blocked
        context = self.context(target)
        try:
            with failing_seeds() as seeds:
                findings = run_checks(context)
        except NotApplicable as exc:
            return Verdict.skipped(exc.reason, exc.blocked_by)
        seed = seeds[0] if seeds else None
        failing = bool(findings) and (requirement.level is Level.MUST or self.strict)
        expected = self.baseline.expects(self.label(plugin), requirement.id, target.tool_name)
        if expected is not None:
            if findings:
                return Verdict(Status.EXPECTED, findings, expected.reason, seed=seed)
            return Verdict(Status.STALE, [], expected.reason)
        if failing:
            return Verdict(Status.FAILED, findings, seed=seed)
        return Verdict(Status.WARNED if findings else Status.PASSED, findings, seed=seed)


def _fails(context: CheckContext) -> bool:
    """Whether a static check reports anything; one that cannot run blocks nothing."""
    try:
        return bool(run_checks(context))
    except NotApplicable:
        return False


def _unique_labels(plugins: list[Plugin]) -> dict[int, str]:
    """Plugin labels for test ids; two folders with one plugin id get their folder appended."""
    counts: dict[str, int] = {}
    for plugin in plugins:
        counts[plugin.label] = counts.get(plugin.label, 0) + 1
    return {id(p): p.label if counts[p.label] == 1 else f"{p.label}@{p.root}" for p in plugins}
