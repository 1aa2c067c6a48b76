"""A kit run inside pytest: its hooks, and one item per plugin x requirement.

Imported only when --plugin-dir is given (pytest_plugin.py): the kit registers its checks and
imports the host's process control, hypothesis and httpx, which a pytest run without
--plugin-dir has no use for. Each (plugin, requirement) pair becomes one test item, so -k, -n,
--junitxml and --lf work as pytest users expect. MUST findings fail, SHOULD findings warn.
The run itself (a KitRun) is kept in config.stash for the hooks and items to share, and
dropped at unconfigure.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conformance.baseline import BaselineError, ExpectedFailure
from conformance.calls_summary import tell_calls
from conformance.checked_settings import (
    TRUST_FLAG,
    Settings,
    checked_folders,
    file_values,
    refusal,
    trusted_line,
)
from conformance.fengyu.code_first import BUILD_ADVICE
from conformance.fengyu.manifest import FengYuPlugin
from conformance.findings import Finding, printable
from conformance.kit import UNCHECKED, KitRun, KitUsageError, Status, Target, Verdict
from conformance.options import SUITES, KitOptions, OptionError
from conformance.previous_version import PreviousError
from conformance.profiles import is_mcp
from conformance.report import RunInfo, report_paths, write_reports
from conformance.rerun import failure_text, rerun_command, rerun_key
from conformance.slow_tools import slow_tool_hints
from conformance.strict_gaps import Gap, strict_gaps
from reference_host.process.environment import WorkerEnvError

KIT_RUN = pytest.StashKey[KitRun]()
SHOWN_REASONS = 3  # the most frequent skip reasons a run that checked nothing prints
# How pytest shows a not-exercised item: its category in the summary line, letter and word.
NOT_EXERCISED_STATUS = ("not exercised", "n", "NOT EXERCISED")


class ConformanceWarning(UserWarning):
    """A SHOULD requirement the plugin does not meet."""


class ConformanceFailure(Exception):
    """Raised by an item whose verdict fails; repr_failure prints it without a traceback."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def start(config: pytest.Config) -> None:
    """Load the run's plugins and register the hooks that check them."""
    config.addinivalue_line("markers", "conformance(requirement): a conformance kit check")
    for suite, what in SUITES.items():
        config.addinivalue_line("markers", f"{suite}: {what}")
    try:
        options = KitOptions.from_config(config)
        _refuse_checked_settings(config, options)
        kit = KitRun.load(options, config.invocation_params.dir)
        for plugin in kit.plugins:
            if plugin.load_error is None:
                kit.upgrade(plugin)
    except (OptionError, BaselineError, KitUsageError, PreviousError, WorkerEnvError) as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[KIT_RUN] = kit
    session = KitSession(config)
    kit.notify = session.tell_waiting
    config.pluginmanager.register(session, "conformance-kit")


def _refuse_checked_settings(config: pytest.Config, options: KitOptions) -> None:
    """A usage error when pytest's settings come from a folder the run checks and change what
    runs (checked_settings.py), before anything of the folder is started."""
    if hasattr(config, "workerinput") or _user_trusts(config):
        return  # an xdist worker starts after its controller has checked
    if why := refusal(_settings(config), checked_folders(options, config.invocation_params.dir)):
        raise KitUsageError(why)


def _user_trusts(config: pytest.Config) -> bool:
    """--conformance-trust-settings given by the user (command line, PYTEST_ADDOPTS): the
    file's own addopts cannot give it."""
    environment = shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    return TRUST_FLAG in (*config.invocation_params.args, *environment)


def _settings(config: pytest.Config) -> Settings | None:
    """The file pytest took its settings from, with what it sets (pytest keeps that in a
    private attribute: the public getini() cannot tell the file's values from `-o`'s)."""
    if config.inipath is None:
        return None
    return Settings(config.inipath, file_values(getattr(config, "_inicfg", {})))


# Statuses whose record carries the command that reproduces the item.
REPRODUCED = frozenset({Status.FAILED, Status.WARNED, Status.NOT_EXERCISED})


class KitSession:
    """The hooks that run only with --plugin-dir, holding the run and its records."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.records: list[dict[str, Any]] = []
        self.is_worker = hasattr(config, "workerinput")
        self.nothing_checked = False
        self.gaps: list[Gap] = []  # items skipped for a reason strict mode does not accept
        self.started = time.time()  # the run's start, for the reports

    def tell_waiting(self, text: str) -> None:
        """A call the run has waited on for seconds, named on the terminal while it waits
        (the harness tells it from the test's own thread). An xdist worker's terminal goes
        nowhere, so it writes to its stderr, which reaches the terminal, naming itself."""
        capture = self.config.pluginmanager.getplugin("capturemanager")
        released = capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        with released:
            if self.is_worker or reporter is None:
                worker = getattr(self.config, "workerinput", {}).get("workerid", "kit")
                sys.stderr.write(f"\n[{worker}] {text}\n")
                sys.stderr.flush()
            else:
                reporter.write_line(text, yellow=True)

    @property
    def kit(self) -> KitRun:
        return self.config.stash[KIT_RUN]

    def pytest_unconfigure(self) -> None:
        del self.config.stash[KIT_RUN]

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """With `-n`, and no --dist other than xdist's default, items go to xdist workers
        grouped by the state they share (xdist_scopes.py)."""
        if config.getvalue("dist") != "load":
            return None
        from conformance.xdist_scopes import KitScheduling  # xdist is optional

        return KitScheduling(config, log)

    def pytest_ignore_collect(self, collection_path: Path) -> bool:
        """The kit's items replace whatever the paths would have collected."""
        return True

    def pytest_report_header(self) -> list[str]:
        lines = []
        if warning := self._settings_warning():
            lines.append(warning)
        for plugin in self.kit.plugins:
            profile = plugin.profile
            if is_mcp(plugin):
                profile += f" {plugin.era or 'no session'}: {shlex.join(plugin.argv)} in"
            lines.append(f"conformance: {self.kit.label(plugin)} [{profile}] {plugin.root}")
            if isinstance(plugin, FengYuPlugin) and plugin.code_first is not None:
                lines.append(f"  {BUILD_ADVICE}")
        return lines

    def _settings_warning(self) -> str:
        """A run told to trust settings from a folder it checks says so, for whoever reads
        its log."""
        if not self.kit.options.trust_settings:
            return ""
        folders = checked_folders(self.kit.options, self.config.invocation_params.dir)
        return trusted_line(_settings(self.config), folders)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, items: list[pytest.Item]
    ) -> None:
        """Replace the (empty) collection with one item per plugin x requirement, and report
        them as collected so that pytest's own summary counts them."""
        items[:] = [
            ConformanceItem.from_parent(session, target=target)
            for plugin in self.kit.plugins
            for target in self.kit.targets(plugin)
        ]

        report = pytest.CollectReport("", "passed", None, list(items))
        self.config.hook.pytest_collectreport(report=report)

    @pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
    def pytest_collection_modifyitems_stale(
        self, session: pytest.Session, items: list[pytest.Item]
    ) -> None:
        """After -m and -k have deselected: a stale baseline entry fails whatever was
        selected, as an item of its own, so the summary line counts it."""
        items += [
            StaleEntryItem.from_parent(session, entry=entry) for entry in self.kit.stale_entries()
        ]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item) -> Any:
        report = yield
        ran = report.when == "call" or (report.when == "setup" and report.skipped)
        if isinstance(item, ConformanceItem) and ran:
            record = item.record()
            report.conformance_record = json.dumps({**record, "seconds": report.duration})
            report.conformance_status = record["status"]
            if report.skipped and isinstance(report.longrepr, tuple):
                # A skip is the plugin's, not a line of the kit: the summary names the plugin.
                _, _, reason = report.longrepr
                report.longrepr = (str(item.plugin.root), None, reason)
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        """A not-exercised item is counted under a word of its own, not as a skip."""
        status = getattr(report, "conformance_status", None)
        if status == Status.NOT_EXERCISED.value and report.skipped:
            return NOT_EXERCISED_STATUS
        return None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, "conformance_record", None)
        if record is not None:
            self.records.append(json.loads(record))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Every worker is ended before any report is written (this runs before junitxml's
        hook): nothing a plugin started is left to touch them."""
        self.kit.close()
        if self.is_worker:
            return
        checked = {Status(r["status"]) for r in self.records} - UNCHECKED - {Status.NOT_EXERCISED}
        self.gaps = strict_gaps(self.records, self.kit.options.allow_unobserved)
        if self.gaps and self.kit.strict and session.exitstatus == pytest.ExitCode.OK:
            # A strict run vouches for the whole catalog: what could not run fails it.
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif self.records and not checked and session.exitstatus == pytest.ExitCode.OK:
            # Every item skipped or not applicable: a green run would claim what nobody checked.
            self.nothing_checked = True
            session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
        options = self.kit.options
        if options.report or options.sarif:
            here = self.config.invocation_params.dir
            write_reports(
                RunInfo(self.started, time.time(), str(here)),
                self.kit.summaries(),
                self.records,
                base=Path(here, options.report) if options.report else None,
                sarif=Path(here, options.sarif) if options.sarif else None,
                shard=self._shard(),
            )

    def _shard(self) -> dict[str, Any] | None:
        """The slice this run checked (--shard), with the targets it was given, for merge."""
        shard = self.kit.shard
        if shard is None:
            return None
        assigned = sorted(self.kit.label(p) for p in self.kit.plugins)
        return {"index": shard.index, "count": shard.count, "assigned": assigned}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker:
            return
        write = terminalreporter.write_line
        shown = [] if self.config.option.collectonly else self.kit.summaries()
        for plugin in shown:
            path_like = plugin.get("path_like_parameters", [])
            if plugin["file_parameters"] or path_like:
                terminalreporter.section(f"file-class parameters of {plugin['label']}", sep="-")
                for f in plugin["file_parameters"]:
                    write(
                        f"{f['tool']}.{f['parameter']}: {f['class']}, route {f['route']}, "
                        f"by its {f['by']}"
                    )
                for p in path_like:
                    write(
                        f"{p['tool']}.{p['parameter']}: NOT file-class, though {p['because']} "
                        f"(FY-FILE-004: add {p['add']})"
                    )
        if self.gaps:
            self._tell_gaps(terminalreporter)
        if self.records:
            tell_calls(terminalreporter, shown, self.records, self.kit.strict)
        if hints := slow_tool_hints(self.records, self.kit.options.examples):
            terminalreporter.section("slow tools", sep="-", yellow=True)
            for hint in hints:
                write(hint)
        if self.nothing_checked:
            terminalreporter.section("nothing checked", sep="-", yellow=True)
            write(
                f"all {len(self.records)} conformance items were skipped, not applicable or not "
                "exercised: no requirement was checked (exit status 5)"
            )
            reasons = Counter(str(r.get("reason") or "") for r in self.records)
            for reason, count in reasons.most_common(SHOWN_REASONS):
                write(f"  {count} x {reason}" if reason else f"  {count} x (no reason given)")
        if self.config.option.conformance_report:
            paths = report_paths(self._report_base())
            write(f"conformance report: {' '.join(str(path) for path in paths)}")
        if self.kit.options.sarif:
            write(f"SARIF: {Path(self.config.invocation_params.dir, self.kit.options.sarif)}")

    def _tell_gaps(self, terminalreporter: Any) -> None:
        """How many items could not run for a reason strict mode does not accept, and what
        would let them run; in strict mode, that the run failed for them."""
        strict = self.kit.strict
        total = sum(gap.count for gap in self.gaps)
        title = "checks that could not run"
        terminalreporter.section(title, sep="-", red=strict, yellow=not strict)
        verdict = (
            "--conformance-strict fails the run for them (exit status 1)"
            if strict
            else "--conformance-strict would fail the run for them"
        )
        terminalreporter.write_line(f"{total} conformance items could not run: {verdict}")
        for gap in self.gaps:
            terminalreporter.write_line(f"  {gap.count} x {gap.reason}")
            terminalreporter.write_line(f"    fix: {gap.fix}")

    def _report_base(self) -> Path:
        return Path(self.config.invocation_params.dir, self.config.option.conformance_report)


class KitItem(pytest.Item):
    """An item of the kit: a ConformanceFailure prints as its text, without a traceback."""

    @property
    def kit(self) -> KitRun:
        """The run, from the config's stash, where it lives as long as the session."""
        return self.config.stash[KIT_RUN]

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ConformanceFailure):
            return excinfo.value.text
        return super().repr_failure(excinfo, style)


class ConformanceItem(KitItem):
    """One requirement checked on one plugin (or tool), with the node id
    `conformance.<plugin>.<suite>::<ID> <title>[<tool>]`: JUnit reports the part before "::"
    as the classname, so CI dashboards group a run's cases by plugin and suite."""

    def __init__(self, *, target: Target, **kw: Any) -> None:
        plugin, requirement = target.plugin, target.requirement
        name = f"{requirement.id} {requirement.title}"
        if target.tool_name is not None:
            name += f"[{printable(target.tool_name, one_line=True)}]"
        kit = kw["parent"].config.stash[KIT_RUN]
        label = printable(kit.label(plugin), one_line=True)
        nodeid = f"conformance.{label}.{requirement.suite}::{name}"
        super().__init__(name=name, nodeid=nodeid, **kw)
        self.target = target
        self.plugin, self.requirement = plugin, requirement
        self.add_marker(pytest.mark.conformance(requirement.id))
        for suite in (requirement.suite, *requirement.also_in):
            self.add_marker(getattr(pytest.mark, suite))
        self.extra_keyword_matches.add(rerun_key(kit, target))
        if reason := kit.skip_reason(plugin, requirement):
            self.add_marker(pytest.mark.skip(reason=reason))
        self.user_properties += [
            ("requirement", requirement.id),
            ("level", requirement.level.value),
            ("plugin", kit.label(plugin)),
        ]
        if target.tool_name is not None:
            self.user_properties.append(("tool", target.tool_name))
        self.verdict: Verdict | None = None
        self.calls: list[dict[str, Any]] = []  # the tool calls made while it ran (exercised.py)

    def runtest(self) -> None:
        before = self.kit.calls.snapshot()
        try:
            verdict = self.verdict = self.kit.judge(self.target)
        finally:
            self.calls = self.kit.calls.since(before)
        if verdict.status is Status.NOT_EXERCISED:
            if self.kit.strict:
                raise ConformanceFailure(
                    self._render(
                        [],
                        f"not exercised, which --conformance-strict fails: {self._not_exercised()}",
                    )
                )
            pytest.skip(f"not exercised: {self._not_exercised()}")
        if verdict.status in UNCHECKED:
            pytest.skip(verdict.reason)
        if verdict.status is Status.EXPECTED:
            pytest.xfail(f"listed in the baseline: {verdict.reason or 'no reason given'}")
        if verdict.status is Status.STALE:
            raise ConformanceFailure(
                self._render(
                    [],
                    f"stale baseline entry: {self.requirement.id} now passes on "
                    f"{self.kit.label(self.plugin)}; remove it from "
                    f"{self.kit.baseline.path}",
                )
            )
        if verdict.status is Status.FAILED:
            raise ConformanceFailure(self._render(verdict.findings))
        if verdict.status is Status.WARNED:
            first = verdict.findings[0]
            warnings.warn_explicit(
                ConformanceWarning(self._render(verdict.findings)),
                ConformanceWarning,
                str(self.plugin.root / first.file),
                first.line or 1,
            )

    def _not_exercised(self) -> str:
        assert self.verdict is not None
        last = self.verdict.last_error
        return self.verdict.not_exercised + (f"; the last answer: {last}" if last else "")

    def _render(self, findings: list[Finding], headline: str = "") -> str:
        seed = self.verdict.seed if self.verdict else None
        base = self.config.invocation_params.dir
        return failure_text(self.kit, self.target, findings, base, seed, headline)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.plugin.root, 0, self.name

    def record(self) -> dict[str, Any]:
        r = self.requirement
        verdict = self.verdict or self.kit.blocked(self.plugin, r)
        return {
            "plugin": self.kit.label(self.plugin),
            "plugin_dir": str(self.plugin.root),
            "requirement": r.id,
            "suite": r.suite,
            "tool": self.target.tool_name,
            "level": r.level.value,
            "title": r.title,
            "setup": r.setup,
            "status": verdict.status.value if verdict else Status.SKIPPED.value,
            "reason": verdict.reason if verdict else "",
            "blocked_by": list(verdict.blocked_by) if verdict else [],
            "findings": verdict.finding_records(r) if verdict else [],
            **(
                {"not_exercised": verdict.not_exercised, "last_error": verdict.last_error}
                if verdict and verdict.not_exercised
                else {}
            ),
            "calls": self.calls,
            **({"rerun": self._rerun()} if verdict and verdict.status in REPRODUCED else {}),
        }

    def _rerun(self) -> str:
        """The command that runs this item again (with its search's seed)."""
        seed = self.verdict.seed if self.verdict else None
        return rerun_command(self.kit, self.target, self.config.invocation_params.dir, seed)


class StaleEntryItem(KitItem):
    """A baseline entry naming no plugin x requirement of the run: it fails as an item of its
    own, so the summary line counts it (node id `conformance.baseline::<plugin> <id>`)."""

    def __init__(self, *, entry: ExpectedFailure, **kw: Any) -> None:
        name = f"{entry.plugin} {entry.requirement}"
        super().__init__(name=name, nodeid=f"conformance.baseline::{name}", **kw)
        self.entry = entry
        self.add_marker(pytest.mark.conformance(entry.requirement))

    def runtest(self) -> None:
        raise ConformanceFailure(
            f"stale baseline entry: {self.entry.plugin} {self.entry.requirement}: the kit "
            f"checks no such plugin x requirement; remove it from {self.kit.baseline.path}"
        )

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return Path(self.kit.baseline.path or "."), None, self.name
