"""One kit run: the plugin folders under test, what will be checked on each, and the verdicts.

Kept apart from the pytest hooks so that the rules (what a finding means for the outcome)
read in one place and can be tested without pytest's machinery.

Loading a run and listing its items needs only the catalog and the plugins' files: a
profile's checks (with hypothesis, httpx and the host they bring) are imported when the first
verdict on one of its plugins is asked for, the live services when the first item needs them,
so that collecting, and each xdist worker's start, costs no more than that. The MCP machinery
(conformance.mcp, and the MCP SDK the host's launch of a server brings) is imported only by a
run given an MCP server.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.baseline import Baseline, ExpectedFailure, load_baseline
from conformance.call_log import CallLog
from conformance.catalog import Level, Requirement, load_catalog
from conformance.deadlines import Deadlines
from conformance.erp.plugin import ErpPlugin, ErpTool
from conformance.examples_file import ExamplesError, ToolExamples, load_examples
from conformance.exercised import claims_of
from conformance.fengyu.manifest import FENGYU_V1, AiTool, FengYuPlugin
from conformance.fengyu.migrate import MigrationError, migrate_v1
from conformance.findings import (
    Finding,
    NotApplicable,
    NotExercised,
    named_requirements,
    printable,
)
from conformance.options import KitOptions
from conformance.previous_version import Upgrade, compare, current_manifest, read_previous
from conformance.profiles import Plugin, Tool, is_mcp, load_plugin
from conformance.run_store import RunStore
from conformance.search_settings import PropertySettings, failing_seeds
from conformance.shards import Shard, ShardError, chosen_shard
from plugin_spec.json_files import JsonFileError
from plugin_spec.plugin_folders import expand
from reference_host.process.environment import check_names
from reference_host.process.lineage import become_subreaper

if TYPE_CHECKING:
    from conformance.erp.endpoints import EndpointServices
    from conformance.fengyu.services import WorkerServices
    from conformance.mcp.server import McpServer
    from conformance.mcp.services import McpServices

# Where failing MCP items save their transcripts when the run writes no report.
TRANSCRIPTS = Path(tempfile.gettempdir(), "mcp-transcripts")


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
    # Every call the check made was refused or answered with an error: nothing examined.
    NOT_EXERCISED = "not-exercised"


# Statuses of an item that checked nothing: a run made only of them proves nothing.
UNCHECKED = frozenset({Status.SKIPPED, Status.NOT_APPLICABLE})


@dataclass(frozen=True)
class Verdict:
    status: Status
    findings: list[Finding]
    reason: str = ""
    blocked_by: tuple[str, ...] = ()
    seed: int | None = None  # the seed the kit chose for the search that failed
    not_exercised: str = ""  # why the item's tool was not exercised (NotExercised)
    last_error: str = ""  # how the latest of its refused calls was answered

    def __post_init__(self) -> None:
        # A reason quotes what a plugin or server said; it reaches the terminal and the reports.
        for name in ("reason", "not_exercised", "last_error"):
            object.__setattr__(self, name, printable(getattr(self, name)))

    def finding_records(self, requirement: Requirement) -> list[dict[str, Any]]:
        """The findings as the reports hold them, each with its fix (the requirement's hint
        where the finding names none)."""
        return [{**f.to_json(), "fix": f.fix or requirement.hint} for f in self.findings]

    @classmethod
    def skipped(cls, reason: str, blocked_by: tuple[str, ...]) -> Verdict:
        """Skipped because of blocked_by's failure, or not applicable when nothing blocks."""
        status = Status.SKIPPED if blocked_by else Status.NOT_APPLICABLE
        return cls(status, [], reason, blocked_by)


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
    """The plugins of one run, what it was told (options), and what it has computed so far
    (store): everything the items of one pytest session share, and nothing beyond it."""

    plugins: list[Plugin]
    baseline: Baseline
    options: KitOptions = field(default_factory=KitOptions)
    store: RunStore = field(default_factory=RunStore)
    labels: dict[Plugin, str] = field(default_factory=dict)
    notify: Callable[[str], None] = print  # told of a call the run has waited on for long
    tool_examples: ToolExamples = field(default_factory=ToolExamples)  # --examples-file
    calls: CallLog = field(default_factory=CallLog)  # every tool call of this process
    shard: Shard | None = None  # --shard: the run checks only this slice of its targets
    # Every target the run names, its shard's and the others' (servers of other shards are
    # never started): what cross-plugin checks compare with, and what labels are unique in.
    everyone: list[Plugin] = field(default_factory=list)

    @classmethod
    def load(cls, options: KitOptions, base: Path) -> KitRun:
        """The run of options.plugin_dirs (relative to base, where pytest ran): each folder,
        or each plugin in a folder of plugins, loaded once."""
        given = []
        for raw in options.plugin_dirs:
            root = (base / raw).resolve()
            if not root.is_dir():
                raise KitUsageError(f"--plugin-dir {raw}: {root} is not a folder")
            given.append(root)
        roots = list(dict.fromkeys(expand(given)))
        baseline = load_baseline(Path(options.baseline) if options.baseline else None)
        try:
            examples = load_examples(
                base / options.examples_file if options.examples_file else None
            )
        except ExamplesError as exc:
            raise KitUsageError(f"--examples-file: {exc}") from None
        options = replace(options, worker_env=check_names(options.worker_env))
        servers = _servers(options, base)
        try:
            shard = chosen_shard(options.shard, options.shards)
        except ShardError as exc:
            raise KitUsageError(str(exc)) from None
        everyone: list[Plugin] = [load_plugin(root) for root in roots]
        plugins = list(everyone)
        if shard is not None:  # by id, before any server starts (shards.py)
            plugins = [p for p in everyone if shard.holds(p.label)]
            servers = [s for s in servers if shard.holds(s.label)]
        run = cls(plugins, baseline, options, tool_examples=examples, shard=shard)
        loaded: list[Plugin] = []
        if servers:
            from conformance.mcp.server import load_mcp_server

            run.prepare_mcp(servers)
            loaded += [load_mcp_server(server, run.deadlines) for server in servers]
        run.plugins += loaded
        run.everyone = [*everyone, *loaded]
        run.labels = _unique_labels(run.everyone)
        return run

    @property
    def strict(self) -> bool:
        return self.options.strict

    @property
    def settings(self) -> PropertySettings:
        """How the property searches of this run draw their examples."""
        o = self.options
        return PropertySettings(examples=o.examples, seed=o.seed, derandomize=o.derandomize)

    @property
    def deadlines(self) -> Deadlines:
        """How long this run waits on what it starts: the defaults, scaled as it was told."""
        return Deadlines().scaled(self.options.deadline_scale)

    def label(self, plugin: Plugin) -> str:
        return self.labels[plugin]

    def requirements_for(self, plugin: Plugin) -> list[Requirement]:
        """The catalog's requirements for the plugin's profile; those of a provider named by
        --conformance-provider are MUST in this run."""
        return [
            replace(r, level=Level.MUST) if r.provider in self.options.providers else r
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

    def endpoints(self, plugin: ErpPlugin) -> EndpointServices:
        """The ERP plugin's endpoints as the run calls them, created on first use."""
        return self.store.once(self._start_endpoints, plugin)

    def workers(self, plugin: FengYuPlugin) -> WorkerServices:
        """The FengYu plugin's worker services, created on first use; close() stops them.
        The kit becomes the subreaper of what they start first: orphans of the workers come
        back to the kit, which ends them with their worker (spec:
        host.md#worker-processes-and-cleanup)."""
        return self.store.once(self._start_workers, plugin)

    def mcp(self, server: McpServer) -> McpServices:
        """The MCP server's sessions as the run's checks use them, created on first use."""
        return self.store.once(self._start_mcp, server)

    def _start_mcp(self, server: McpServer) -> McpServices:
        from conformance.mcp.services import McpServices

        become_subreaper()
        services = McpServices(
            server, self.settings, self.transcripts, self.deadlines, self.tool_examples
        )
        label = self.label(server)
        services.on_call = lambda tool, ok, answer: self.calls.add(label, tool, ok, answer)
        self.store.on_close(services.close)
        return services

    @property
    def transcripts(self) -> Path:
        """Where failing MCP items save their transcripts: beside the report, if any."""
        report = self.options.report
        return Path(f"{report}.transcripts") if report else TRANSCRIPTS

    def prepare_mcp(self, servers: list[McpServer]) -> None:
        """Give the run's MCP servers what a host would: --worker-env, and each a scratch
        folder in one run folder; their sandboxes hide that run folder and the transcripts,
        so no server reads another's data, the kit's traces or what earlier runs saved."""
        root = Path(tempfile.mkdtemp())
        self.store.on_close(lambda: shutil.rmtree(root, ignore_errors=True))
        transcripts = self.transcripts.resolve()
        transcripts.mkdir(parents=True, exist_ok=True)
        for server in servers:
            server.pass_env = self.options.worker_env  # as the host's --worker-env reaches them
            server.bounds = self.options.bounds
            server.roots = (*server.roots, *(Path(r).resolve() for r in self.options.mcp_roots))
            server.scratch = Path(tempfile.mkdtemp(dir=root))
            server.hidden = (root, transcripts)

    def _start_endpoints(self, plugin: ErpPlugin) -> EndpointServices:
        from conformance.erp.endpoints import EndpointServices

        o = self.options
        services = EndpointServices(o.base_url, o.tenant, o.actor, self.settings, self.deadlines)
        self.store.on_close(services.close)
        return services

    def _start_workers(self, plugin: FengYuPlugin) -> WorkerServices:
        from conformance.fengyu.services import WorkerServices

        become_subreaper()
        o = self.options
        services = WorkerServices(
            plugin,
            o.worker_cmd,
            self.settings,
            o.worker_env,
            self.notify,
            self.deadlines,
            o.bounds,
            self.tool_examples,
        )
        label = self.label(plugin)
        services.on_call = lambda tool, ok, answer: self.calls.add(label, tool, ok, answer)
        self.store.on_close(services.close)
        return services

    def findings(self, target: Target) -> list[Finding]:
        """The findings of the target's checks, each profile's in its own context: static
        checks get nothing live, upgrade checks the comparison with the previous version, the
        rest the plugin's live services. A profile's registry, and its checks, are imported
        with the first target of the profile (conformance/checks/__init__.py)."""
        plugin, requirement = target.plugin, target.requirement
        live = requirement.suite not in ("manifest", "upgrade")
        upgrade = self.upgrade(plugin) if requirement.suite == "upgrade" else None
        peers = self.peers(plugin)
        if isinstance(plugin, FengYuPlugin):
            from conformance.checks import fengyu_checks
            from conformance.checks.fengyu import FengYuContext

            tool = target.tool if isinstance(target.tool, AiTool) else None
            workers = self.workers(plugin) if live else None
            context = FengYuContext(plugin, requirement, peers, tool, upgrade, self.store, workers)
            return fengyu_checks().run(context)
        if isinstance(plugin, ErpPlugin):
            from conformance.checks import erp_checks
            from conformance.checks.erp import ErpContext

            erp_tool = target.tool if isinstance(target.tool, ErpTool) else None
            endpoints = self.endpoints(plugin) if live else None
            erp = ErpContext(plugin, requirement, peers, erp_tool, upgrade, self.store, endpoints)
            return erp_checks().run(erp)
        from conformance.checks import mcp_checks
        from conformance.checks.mcp import McpContext
        from conformance.mcp.server import McpTool

        mcp_tool = target.tool if isinstance(target.tool, McpTool) else None
        sessions = self.mcp(plugin) if live else None
        mcp = McpContext(plugin, requirement, peers, mcp_tool, upgrade, self.store, sessions)
        return mcp_checks().run(mcp)

    def upgrade(self, plugin: Plugin) -> Upgrade | None:
        """The comparison with --previous-manifest (None without it); read once per plugin."""
        if self.options.previous is None:
            return None
        return self.store.once(self._compare, plugin, self.options.previous)

    @staticmethod
    def _compare(plugin: Plugin, previous: str) -> Upgrade | None:
        before = read_previous(previous, plugin.root)
        try:
            current = current_manifest(plugin.root)
        except JsonFileError:
            return None  # the plugin's own files are broken: the static suite says how
        return compare(before, current, plugin.label)

    def close(self) -> None:
        """Stop every worker the run started and remove its scratch files."""
        self.store.close()

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
        """The other plugins of the run that loaded (other shards' too, but their servers):
        what cross-plugin checks compare with."""
        pool = self.everyone or self.plugins
        return [p for p in pool if p is not plugin and p.load_error is None]

    def static_failures(self, plugin: Plugin) -> tuple[str, ...]:
        """The static MUST requirements the plugin fails, judged once per plugin: a host
        would refuse or misrepresent such a plugin, so the host suite waits on them. A
        provider's refusal is not among them: the reference host calls no provider."""
        return self.store.once(self._static_failures, plugin)

    def _static_failures(self, plugin: Plugin) -> tuple[str, ...]:
        static = [
            r
            for r in self.requirements_for(plugin)
            if r.suite == "manifest" and r.level is Level.MUST and not r.provider
        ]
        return tuple(r.id for r in static if self._fails(Target(plugin, r)))

    def _fails(self, target: Target) -> bool:
        """Whether a static check reports anything; one that cannot run blocks nothing."""
        try:
            return bool(self.findings(target))
        except NotApplicable:
            return False

    def blocked(self, plugin: Plugin, requirement: Requirement) -> Verdict | None:
        """The skip verdict of an item another requirement's failure keeps from running."""
        if reason := self.skip_reason(plugin, requirement):
            return Verdict.skipped(reason, named_requirements(reason))
        if requirement.suite == "host" and (failing := self.static_failures(plugin)):
            return Verdict.skipped(f"because the manifest fails {', '.join(failing)}", failing)
        return None

    def stale_entries(self) -> list[ExpectedFailure]:
        """Baseline entries that name nothing this run checks (an entry of a target another
        shard checks is that shard's to judge)."""
        unmatched = self.baseline.unmatched(self.collectable())
        if self.shard is None:
            return unmatched
        return [e for e in unmatched if self.shard.holds(e.plugin)]

    def summaries(self) -> list[dict[str, Any]]:
        """What the reports say about each plugin beyond pass/fail: how each provider takes its
        tools, how the host will fill its file parameters and, for a legacy manifest, its v2
        equivalent."""
        return [self.store.once(self._summary, p) for p in self.plugins]

    def _summary(self, plugin: Plugin) -> dict[str, Any]:
        # Imported at the end of the run (the host's built-ins come with the providers' view).
        from conformance.fengyu.file_parameters import file_parameters, path_like_parameters
        from conformance.provider_view import provider_matrix

        summary: dict[str, Any] = {
            "label": self.label(plugin),
            "profile": plugin.profile,
            "root": str(plugin.root),
            "file_parameters": [],
        }
        if plugin.load_error is not None:
            return summary
        summary["claims"] = claims_of(plugin)
        summary["providers"] = provider_matrix(plugin, self.peers(plugin), self.store)
        if is_mcp(plugin):
            summary["era"] = plugin.era
            summary["command"] = list(plugin.argv)
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
        try:
            with failing_seeds() as seeds:
                findings = self.findings(target)
        except NotApplicable as exc:
            return Verdict.skipped(exc.reason, exc.blocked_by)
        except NotExercised as exc:
            return self._not_exercised(target, exc)
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

    def _not_exercised(self, target: Target, exc: NotExercised) -> Verdict:
        """Not a pass: not exercised, unless the baseline accepts it (an expected failure,
        still saying why)."""
        rid = target.requirement.id
        expected = self.baseline.expects(self.label(target.plugin), rid, target.tool_name)
        if expected is not None:
            return Verdict(
                Status.EXPECTED,
                [],
                expected.reason,
                not_exercised=exc.reason,
                last_error=exc.last_error,
            )
        return Verdict(
            Status.NOT_EXERCISED,
            [],
            exc.reason,
            not_exercised=exc.reason,
            last_error=exc.last_error,
        )


def _servers(options: KitOptions, base: Path) -> list[McpServer]:
    """The MCP servers the options name (none without an MCP option, and then conformance.mcp
    is not imported)."""
    if not (options.mcp_commands or options.mcp_configs or options.mcp_servers):
        return []
    from conformance.mcp.selection import SelectionError, selected_servers

    try:
        return selected_servers(
            options.mcp_commands, options.mcp_configs, options.mcp_servers, base
        )
    except SelectionError as exc:
        raise KitUsageError(str(exc)) from None


def _unique_labels(plugins: list[Plugin]) -> dict[Plugin, str]:
    """Plugin labels for test ids; two folders with one plugin id get their folder appended."""
    counts: dict[str, int] = {}
    for plugin in plugins:
        counts[plugin.label] = counts.get(plugin.label, 0) + 1
    return {p: p.label if counts[p.label] == 1 else f"{p.label}@{p.root}" for p in plugins}
