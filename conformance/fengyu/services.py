"""Everything worker-facing the kit keeps per plugin for one run, started only when needed.

Static checks never start a process; the first worker or tool check does. Whatever was
started is stopped by close() at the end of the run, so a kit run leaves no process behind.
What the tool and host workers are seen doing (overruns, stray stdout lines) is kept with the
suite and the call it came in, for the worker items at the end of the catalog to report; a
tool that hung is kept too, so its later items are skipped instead of waiting again.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from conformance.deadlines import Deadlines
from conformance.examples_file import ToolExamples
from conformance.fengyu.effects import EffectWatch
from conformance.fengyu.harness import CallOutcome, StrayReporter, ToolHarness
from conformance.fengyu.host_session import HostSession
from conformance.fengyu.manifest import AiTool, FengYuPlugin
from conformance.fengyu.probe import Exchange, Step, Transcript, handshake_result, run_probe
from conformance.fengyu.resource_watch import OverrunLog, Seen, SeenLog
from conformance.fengyu.syscall_trace import effects_unseen, strace_program, tracer
from conformance.fengyu.tool_files import ToolFiles
from conformance.fengyu.worker import declared_methods, declares_worker, worker_spec
from conformance.findings import NotApplicable, shown
from conformance.search_settings import PropertySettings
from conformance.strategies import GeneratorGap, InputSpace
from plugin_spec.fengyu_decls import resource_limits
from plugin_spec.fengyu_runtime import handshake_problems
from plugin_spec.filerefs import classify_parameters
from plugin_spec.line_depth import TOO_DEEP
from reference_host.process.bounds import DEFAULT_LIMITS, WorkerLimits
from reference_host.process.launch import MissingArtifact, WorkerSpec
from reference_host.process.timeouts import effective_timeout
from reference_host.process.worker_errors import WorkerLaunchError

STDERR_SHOWN = 3  # last stderr lines a skip reason quotes
HANG_REQUIREMENT = "FY-TOOL-001"  # whose finding a tool call that never answers is
STDOUT_REQUIREMENT = "FY-WRK-007"  # whose finding an answer refused unread is


def unreadable(tool: str, outcome: CallOutcome) -> str:
    """Why a tool whose answer was refused unread (CallOutcome.unreadable) is not judged."""
    return (
        f"tool {tool!r} was answered with {TOO_DEEP} (called with "
        f"{shown(outcome.request['params'], 200)}), which hosts refuse unread: its answers "
        f"cannot be judged ({STDOUT_REQUIREMENT})"
    )


@dataclass(frozen=True)
class StrayLine:
    """A stdout line that is not a JSON-RPC response, and what is wrong with it."""

    line: str
    problem: str


def private_copy(source: Path, target: Path) -> None:
    """The plugin folder as the kit runs it: a copy, as a host installs one, so nothing a
    worker or a runtime writes can reach the author's files. Links stay links; .git, FIFOs,
    sockets and devices stay behind (opening a FIFO to copy it would wait forever). Raises
    OSError naming what could not be copied."""
    try:
        shutil.copytree(source, target, symlinks=True, ignore=_left_behind)
    except shutil.Error as exc:
        first = exc.args[0][0] if exc.args and exc.args[0] else ("", "", str(exc))
        raise OSError(f"{first[0]}: {first[2]}") from None


def _left_behind(folder: str, names: list[str]) -> list[str]:
    def special(name: str) -> bool:
        mode = os.lstat(os.path.join(folder, name)).st_mode
        return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))

    return [name for name in names if name == ".git" or special(name)]


def _unwatched(spec: WorkerSpec | None) -> str:
    """Why the kit cannot see this worker's effects; "" when it can."""
    if spec is None or spec.sandbox is None:
        return "the worker could not be launched"
    return effects_unseen()


class WorkerServices:
    """The probe transcript, the tool harness and scratch files of one plugin's worker."""

    def __init__(
        self,
        plugin: FengYuPlugin,
        override: str | None,
        settings: PropertySettings,
        worker_env: tuple[str, ...],
        notify: Callable[[str], None] | None,
        deadlines: Deadlines,
        bounds: WorkerLimits = DEFAULT_LIMITS,
        examples: ToolExamples | None = None,
    ) -> None:
        """worker_env: the variables passed through to the worker (--worker-env); notify:
        told of a call waited on for long (the terminal, in a pytest run); deadlines: how long
        the worker is waited on; bounds: its bounds, as a host's (--worker-limit); examples:
        --examples-file, seeding each tool's inputs, its setup calls made when the tool
        checks' worker starts."""
        self.plugin = plugin
        self.examples = examples or ToolExamples()
        self.setup_failures: list[str] = []  # setup calls that failed, as a reason names them
        # told of each tool call: tool, success, how it was answered (the run's CallLog)
        self.on_call: Callable[[str, bool, str], None] = lambda tool, ok, answer: None
        self.deadlines = deadlines
        self.notify = notify
        self.override = override
        self.worker_env = worker_env
        self.bounds = bounds
        self.settings = settings
        self.declared = declares_worker(plugin, override)
        # Laid out as a host's data folder (host.py): what the worker sees of it, through the
        # sandbox, is the same shape, and the rest is hidden.
        self.workdir = Path(tempfile.mkdtemp(prefix="fengyu-"))
        name = plugin.label.replace("/", "_")
        self.package = self.workdir / "plugins" / name
        self.launch_error: str | None = None
        try:
            private_copy(plugin.root, self.package)
        except OSError as exc:
            self.launch_error = f"the plugin folder cannot be copied as a host would: {exc}"
        self.trace = self.workdir / "trace" / "worker.trace"
        self.trace.parent.mkdir()
        (self.workdir / "tools").mkdir()
        self.resources = resource_limits(plugin.data)
        self.overruns = OverrunLog()  # FY-WRK-020: what the tool harness's worker went over
        self.stray = SeenLog[StrayLine]()  # FY-WRK-007: the tool and host workers' stray lines
        self.suite = "tools suite"  # who calls the tool harness's worker now
        self.hangs: dict[str, CallOutcome] = {}  # by method: the first call that timed out
        self._exercised = False
        self.missing_artifact = False
        self.spec: WorkerSpec | None = None
        try:
            if self.launch_error is not None:
                raise WorkerLaunchError(self.launch_error)
            self.spec = worker_spec(
                plugin,
                override,
                self.workdir / "plugin-data" / name,
                worker_env,
                root=self.package,
                hidden=(self.workdir,),
                bounds=bounds,
            )
        except WorkerLaunchError as exc:
            self.launch_error = exc.message
            self.missing_artifact = isinstance(exc, MissingArtifact)
        # the trace names paths as the harness's worker sees them (sandbox.Place)
        seen_as = self._tools_spec.seen if self._tools_spec is not None else (lambda path: path)
        writable = (seen_as(self.workdir / "plugin-data" / name), seen_as(self.workdir / "tools"))
        self.effects = EffectWatch(
            self.trace, seen_as(self.package), _unwatched(self.spec), self._end_harness, writable
        )
        self.effects.late = deadlines.late  # past the linger, for what a call left asleep
        self.effects.tools = {
            str(t.method): str(t.name) for t in reversed(plugin.tools) if isinstance(t.method, str)
        }
        self._last_call = 0.0
        self._harness: ToolHarness | None = None
        self.last_harness: ToolHarness | None = None  # the latest started, for reproductions
        self._host: HostSession | None = None
        self._files: dict[str, ToolFiles] = {}
        self._spaces: dict[str, InputSpace | None] = {}
        self._full: Transcript | None = None  # the protocol probe's transcript
        self._quick: Transcript | None = None  # the start-only probe's

    @property
    def plugin_id(self) -> str:
        return self.plugin.label

    @property
    def command(self) -> str:
        """The worker's command as the author would type it, in the author's folder."""
        return replace(self.spec, root=self.plugin.root).shell_command() if self.spec else "(none)"

    @property
    def display(self) -> str:
        """The worker as findings name it: its path in the plugin, or its command."""
        if self.spec is None:
            return "backend/"
        root = self.package.resolve()
        for part in self.spec.argv:
            program = (root / part).resolve()
            if program.is_relative_to(root) and program.is_file():
                return str(program.relative_to(root))
        return " ".join(self.spec.argv)

    @cached_property
    def _probe_spec(self) -> WorkerSpec:
        """The protocol probe's workers, with a data folder of their own: what the probe's
        requests showed a worker cannot be left there for the worker tool calls meet."""
        assert self.spec is not None
        data = self.workdir / "probe" / "plugin-data" / self.spec.data_dir.name
        sandbox = self.spec.sandbox
        if sandbox is not None:
            sandbox = sandbox.with_data(data)
        argv = tuple(a.replace(str(self.spec.data_dir), str(data)) for a in self.spec.argv)
        return replace(self.spec, argv=argv, data_dir=data, sandbox=sandbox)

    def transcript(self) -> Transcript:
        """The full protocol probe, run once; a worker that did not answer the start-only
        probe's first request keeps that transcript (the full probe would stop there too)."""
        if self._full is None:
            quick = self._quick
            if quick is not None and not quick.exchanges[Step.START].answered:
                self._full = quick
            else:
                self._full = run_probe(self._probe_spec, self.methods, self.deadlines)
        return self._full

    def _start_transcript(self) -> Transcript:
        """What is known of the start: the full probe's transcript when it ran, else the
        start-only probe's (run once), which most checks of the start need alone."""
        if self._full is not None:
            return self._full
        if self._quick is None:
            self._quick = run_probe(self._probe_spec, {}, self.deadlines, start_only=True)
        return self._quick

    @property
    def start(self) -> Exchange:
        """The worker's first request and what came of it (the full probe's if it ran)."""
        return self._start_transcript().exchanges[Step.START]

    @property
    def answers_at_start(self) -> bool:
        return self.start.answered

    def start_failure(self) -> str:
        """Why dependent checks are skipped when the worker does not start, naming the cause."""
        if self.missing_artifact:
            return f"FengYu cannot start the worker (FY-WRK-012): {self.launch_error}"
        if self.launch_error is not None:
            return "the worker cannot be launched (FY-WRK-001)"
        said = [line.strip() for line in self.start.stderr.splitlines() if line.strip()]
        tail = f"; its stderr ends: {self.shown(' | '.join(said[-STDERR_SHOWN:]))}" if said else ""
        return f"the worker did not answer its first request (FY-WRK-001): {self.start.note}{tail}"

    @property
    def handshake(self) -> Exchange | None:
        """The first `$/fengyu/initialize` exchange; None when FengYu sends none."""
        return self._start_transcript().exchanges.get(Step.HANDSHAKE)

    def handshake_refusal(self) -> str | None:
        """Why FengYu would refuse the started worker at its handshake, naming the
        requirement; None when it would not (or sends no handshake)."""
        assert self.spec is not None
        exchange = self.handshake
        if exchange is None or self.spec.protocol_version is None:
            return None
        answered, result = handshake_result(exchange)
        if not answered:
            return "the worker does not answer FengYu's handshake (FY-WRK-013)"
        problems = handshake_problems(result, self.spec.protocol_version, self.spec.runtime)
        if problems:
            rule = "FY-WRK-015" if problems[0][0] == "runtime" else "FY-WRK-014"
            return f"FengYu refuses the worker's handshake ({rule}): {problems[0][1]}"
        return None

    def require_usable(self) -> None:
        """Raise NotApplicable naming the failed requirement unless FengYu could use the
        worker: it launches, answers, and passes the handshake."""
        if not self.declared:
            raise NotApplicable("the plugin declares no worker")
        if self.launch_error is not None or not self.answers_at_start:
            raise NotApplicable(self.start_failure())
        refusal = self.handshake_refusal()
        if refusal is not None:
            raise NotApplicable(refusal)

    @cached_property
    def _tools_spec(self) -> WorkerSpec | None:
        """The worker the tool checks call: the host's sandbox, with the kit's handed files
        (the tools folder) as its grant."""
        spec = self.spec
        if spec is None or spec.sandbox is None:
            return spec
        return replace(spec, sandbox=spec.sandbox.with_grants((self.workdir / "tools",), ()))

    @property
    def harness_started(self) -> bool:
        return self._harness is not None

    def harness(self) -> ToolHarness:
        """The worker tool checks call: the host's sandbox with the kit's handed files as its
        grants, traced from outside it where effects can be seen."""
        assert self.spec is not None
        if self._harness is None:
            self._exercised = True
            spec = self._tools_spec
            assert spec is not None
            if not self.effects.unwatched:
                spec = replace(spec, wrapper=tracer(strace_program(), self.trace))
            self._harness = ToolHarness(
                spec,
                self.resources,
                lambda found, doing: self.overruns.add(found, f"{self.suite}, {doing}"),
                self._called,
                self.plugin.root,
                stray=self.stray_reporter(),
                tools=self._tool_names,
                hangs=self.hangs,
                notify=self.notify,
                deadlines=self.deadlines,
            )
            self._harness.windows = self.effects.calls  # each call, for the effect watch
            self.last_harness = self._harness
            self.set_up()
        return self._harness

    def set_up(self) -> None:
        """The examples file's setup calls naming this plugin's tools, in order: made when
        the tool checks' worker starts and again before each tool's search, so that each
        search starts from the state they make, whatever the calls before it left (watched
        and counted as every call is). A relative path in a file-class parameter is taken
        in the plugin folder, as the worker sees it."""
        harness = self._harness
        if harness is None:
            return
        self.setup_failures.clear()
        tools = {str(t.name): t for t in self.plugin.tools if isinstance(t.method, str)}
        for setup in self.examples.setup_for(set(tools)):
            tool = tools[setup.tool]
            harness.warm()
            arguments = self._in_package(tool, setup.arguments)
            outcome = harness.call(str(tool.method), arguments, self.tool_timeout(tool))
            self.count(setup.tool, outcome)
            if not outcome.succeeded:
                got = outcome.message if outcome.value is None else shown(outcome.value)
                self.setup_failures.append(
                    f"the setup call {setup.tool} of {self.examples.path} {setup.pointer} "
                    f"failed: {outcome.kind}: {got}"
                )

    def _in_package(self, tool: AiTool, arguments: dict[str, Any]) -> dict[str, Any]:
        """arguments with each relative path of a file-class parameter made a path in the
        plugin folder as the tool worker sees it."""
        classes = classify_parameters(tool.input_schema.data) if tool.input_schema else {}
        seen = self._tools_spec.seen if self._tools_spec is not None else (lambda path: path)
        return {
            name: str(seen(self.package / value))
            if name in classes and isinstance(value, str) and not Path(value).is_absolute()
            else value
            for name, value in arguments.items()
        }

    def count(self, tool: str, outcome: CallOutcome) -> None:
        """One call of tool, told to the run's count of calls (exercised.py)."""
        answer = shown(outcome.value, 300) if outcome.kind in ("result", "rpc-error") else ""
        self.on_call(tool, outcome.succeeded, f"{outcome.kind}: {answer or outcome.message}")

    def stray_reporter(self) -> StrayReporter:
        """What a harness of this plugin's worker tells each stray stdout line (FY-WRK-007)."""
        return lambda line, problem, doing: self.stray.add(
            StrayLine(line, problem), f"{self.suite}, {doing}"
        )

    @cached_property
    def _tool_names(self) -> dict[str, str]:
        """The tool names of each method, as messages name a call."""
        names: dict[str, list[str]] = {}
        for tool in self.plugin.tools:
            if isinstance(tool.method, str) and isinstance(tool.name, str):
                names.setdefault(tool.method, []).append(tool.name)
        return {method: ", ".join(tools) for method, tools in names.items()}

    def require_answering(self, tool: AiTool, requirement: str) -> None:
        """Raise NotApplicable naming FY-TOOL-001 when a call of the tool's method timed out
        earlier in this run: each further item would wait out the timeout again on the same
        hang. FY-TOOL-001, whose finding the hang is, runs anyway. Every item raises it,
        naming FY-WRK-007, once an answer of the method was refused unread: what the tool
        answers cannot be judged."""
        hang = self.hangs.get(tool.method) if isinstance(tool.method, str) else None
        if hang is not None and hang.unreadable:
            raise NotApplicable(unreadable(str(tool.name), hang))
        if hang is None or requirement == HANG_REQUIREMENT:
            return
        raise NotApplicable(
            f"tool {tool.name!r} hung earlier in this run: {hang.message} (called with "
            f"{shown(hang.request['params'], 200)}); checking it again would wait out the "
            f"timeout once more ({HANG_REQUIREMENT})"
        )

    def exercise(self, by: str) -> None:
        """Call each tool once with its simplest valid input, unless an item of this process
        has started the tool harness already (the tools suite ran here), so that what a call
        does is seen also when only the worker suite runs (`-m worker`, or the items spread
        over processes); by: the requirement asking, named in what is seen meanwhile."""
        if self._exercised:
            return
        self.suite = f"worker suite ({by} calling each tool once)"
        harness = self.harness()
        harness.warm()
        for tool in self.plugin.tools:
            space = self.input_space(tool)
            if space is None or not isinstance(tool.method, str) or tool.method in self.hangs:
                continue
            try:
                params = space.minimal()
            except GeneratorGap:
                continue
            self.count(str(tool.name), harness.call(tool.method, params, self.tool_timeout(tool)))

    def stray_stdout(self) -> list[Seen[StrayLine]]:
        """The stdout lines of the tool and host workers that were not JSON-RPC responses,
        each with the suite and step it came in. A usable worker's tools are called once
        first if no item has (exercise), and its workers are then ended, so that what they
        write at their exit is in."""
        if self.declared and self.launch_error is None:
            try:
                self.require_usable()
            except NotApplicable:
                return self.stray.seen
            self.exercise("FY-WRK-007")
            self.end_workers()
        return self.stray.seen

    def end_workers(self) -> None:
        """Stop the tool and host workers, as a host stops them, reading what they write
        until they exit; a later item starts them again. The tool worker is ended as the
        effect checks end it (effects.settle: its linger after its latest call), so what
        it does meanwhile is laid at its calls' door whichever item ends it first."""
        if not self.effects.unwatched:
            self.effects.settle()
        self._stop_workers()

    def _stop_workers(self) -> None:
        if self._harness is not None:
            self._harness.close()
            self._harness = None
        if self._host is not None:
            self._host.close()
            self._host = None

    def shown(self, text: str) -> str:
        """text with the paths the worker saw (its sandbox's places: /plugin, /plugin-data)
        named as out here, and the kit's copy of the plugin as the author's folder."""
        if self._tools_spec is not None:
            text = self._tools_spec.view.outside_text(text)
        return text.replace(str(self.package), str(self.plugin.root))

    def _called(self) -> None:
        self._last_call = time.monotonic()

    def _end_harness(self) -> float | None:
        """End the tool checks' worker as a host would, its linger after its latest call
        (what it does meanwhile counts), and say when its tree was gone."""
        if self._harness is None:
            return None
        time.sleep(max(0.0, self._last_call + self.deadlines.linger - time.monotonic()))
        self._harness.close()
        self._harness = None
        return time.time()

    def host_session(self) -> HostSession:
        if self._host is None:
            commands = {self.plugin.label: self.override} if self.override else {}
            self._host = HostSession(
                self.plugin.root,
                self.workdir / "host-session",
                self.workdir,
                self.worker_env,
                commands,
                self.deadlines,
                self.bounds,
            )
            self._watch_host(self._host)
        return self._host

    def _watch_host(self, session: HostSession) -> None:
        """Keep the host's worker's stray stdout lines, with the last call it dispatched."""
        last = ["while the worker started"]

        def dispatched(_: str, method: str, params: Any) -> None:
            last[0] = f"since the host called {method!r} with {shown(params, 300)}"

        def stray(_: str, line: str, problem: str) -> None:
            self.stray.add(StrayLine(line, problem), f"host suite, {last[0]}")

        session.host.manager.observers.append(dispatched)
        session.host.manager.stdout_observers.append(stray)

    def input_space(self, tool: AiTool) -> InputSpace | None:
        """The tool's input space (None without an inputSchema object), built once per tool:
        each of its FY-TOOL items draws from it, and building it is most of their set-up."""
        if tool.pointer not in self._spaces:
            schema = tool.input_schema.data if tool.input_schema else None
            name = str(tool.name)
            self._spaces[tool.pointer] = (
                InputSpace.of(schema).seeded(
                    self.examples.of(name),
                    tool.entry.get("description"),
                    self.examples.pointer(name),
                )
                if isinstance(schema, dict)
                else None
            )
        return self._spaces[tool.pointer]

    def files_for(self, tool: str) -> ToolFiles:
        if tool not in self._files:
            folder = self.workdir / "tools" / tool.replace("/", "_")
            self._files[tool] = ToolFiles(self.plugin.root, tool, folder)
        return self._files[tool]

    def tool_timeout(self, tool: AiTool) -> float:
        """What a host allows this tool's call: the tool's timeoutSeconds, then its
        method's, then callTimeoutSeconds, then 60 s (spec: host.md#timeouts-and-resources)."""
        declared = tool.entry.get("timeoutSeconds")
        seconds = declared if isinstance(declared, int | float) else None  # others are ignored
        method = self.methods.get(tool.method) if isinstance(tool.method, str) else None
        return effective_timeout(seconds, None, method)

    @cached_property
    def methods(self) -> dict[str, float]:
        """The declared methods and their timeouts, read once: a per-tool item asking for
        them again would make a run quadratic in the number of tools."""
        return declared_methods(self.plugin)

    def close(self) -> None:
        """End the run's workers at once (no item judges their effects any more) and remove
        the scratch folder."""
        self._stop_workers()
        shutil.rmtree(self.workdir, ignore_errors=True)
