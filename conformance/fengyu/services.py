"""Everything worker-facing the kit keeps per plugin for one run, started only when needed.

Static checks never start a process; the first worker or tool check does. Whatever was
started is stopped by close() at the end of the run, so a kit run leaves no process behind.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from functools import cached_property
from pathlib import Path

from conformance.fengyu.effects import EffectWatch
from conformance.fengyu.harness import ToolHarness
from conformance.fengyu.host_session import HostSession
from conformance.fengyu.manifest import AiTool, FengYuPlugin
from conformance.fengyu.net_namespace import isolation
from conformance.fengyu.net_recorder import NetRecorder
from conformance.fengyu.net_trace import tracer, tracing
from conformance.fengyu.network_pair import NetworkPair
from conformance.fengyu.probe import Exchange, Step, Transcript, handshake_result, run_probe
from conformance.fengyu.resource_watch import OverrunLog
from conformance.fengyu.tool_files import ToolFiles
from conformance.fengyu.worker import declared_methods, declares_worker, worker_spec
from conformance.findings import NotApplicable
from conformance.properties import PropertySettings
from conformance.strategies import InputSpace
from plugin_spec.fengyu_decls import resource_limits
from plugin_spec.fengyu_runtime import handshake_problems
from reference_host.process import WorkerLaunchError, WorkerSpec, effective_timeout
from reference_host.process.launch import MissingArtifact


def xdg_folders(home: Path) -> dict[str, str]:
    """The XDG base folders inside HOME, where the kit watches them."""
    return {
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
    }


class WorkerServices:
    """The probe transcript, the tool harness and scratch files of one plugin's worker."""

    def __init__(
        self,
        plugin: FengYuPlugin,
        override: str | None,
        settings: PropertySettings,
        worker_env: tuple[str, ...] = (),
    ) -> None:
        """worker_env: the variables passed through to the worker (--worker-env)."""
        self.plugin = plugin
        self.override = override
        self.worker_env = worker_env
        self.settings = settings
        self.declared = declares_worker(plugin, override)
        self.workdir = Path(tempfile.mkdtemp(prefix="conformance-"))
        self.home = self.workdir / "home"
        self.recorder = NetRecorder()
        self.effects = EffectWatch(plugin.root, self.home, self.recorder)
        self.launch_error: str | None = None
        self.resources = resource_limits(plugin.data)
        self.overruns = OverrunLog()  # FY-WRK-020: what the tool harness's worker went over
        self.missing_artifact = False
        self.spec: WorkerSpec | None = None
        try:
            self.spec = worker_spec(
                plugin,
                override,
                self.workdir / "data",
                worker_env,
                home=self.home,
                extra_env={**xdg_folders(self.home), **self.recorder.environment()},
            )
        except WorkerLaunchError as exc:
            self.launch_error = exc.message
            self.missing_artifact = isinstance(exc, MissingArtifact)
        self._harness: ToolHarness | None = None
        self._pair: NetworkPair | None = None
        self._host: HostSession | None = None
        self._files: dict[str, ToolFiles] = {}
        self._spaces: dict[str, InputSpace | None] = {}

    @property
    def plugin_id(self) -> str:
        return self.plugin.label

    @property
    def command(self) -> str:
        return self.spec.shell_command() if self.spec else "(none)"

    @property
    def display(self) -> str:
        """The worker as findings name it: its path in the plugin, or its command."""
        if self.spec is None:
            return "backend/"
        root = self.plugin.root.resolve()
        for part in self.spec.argv:
            program = (root / part).resolve()
            if program.is_relative_to(root) and program.is_file():
                return str(program.relative_to(root))
        return " ".join(self.spec.argv)

    @cached_property
    def _transcript(self) -> Transcript:
        assert self.spec is not None
        quick: Transcript | None = self.__dict__.get("_start_only")
        if quick is not None and not quick.exchanges[Step.START].answered:
            return quick  # the full probe would stop at the same unanswered first request
        return run_probe(self.spec, self.methods)

    @cached_property
    def _start_only(self) -> Transcript:
        assert self.spec is not None
        return run_probe(self.spec, {}, start_only=True)

    def transcript(self) -> Transcript:
        return self._transcript

    @property
    def start(self) -> Exchange:
        """The worker's first request and what came of it (the full probe's if it ran)."""
        if "_transcript" in self.__dict__:
            return self._transcript.exchanges[Step.START]
        return self._start_only.exchanges[Step.START]

    @property
    def answers_at_start(self) -> bool:
        return self.start.answered

    def start_failure(self) -> str:
        """Why dependent checks are skipped when the worker does not start, naming the cause."""
        if self.missing_artifact:
            return f"FengYu cannot start the worker (FY-WRK-012): {self.launch_error}"
        if self.launch_error is not None:
            return "the worker cannot be launched (FY-WRK-001)"
        return f"the worker did not answer its first request (FY-WRK-001): {self.start.note}"

    @property
    def handshake(self) -> Exchange | None:
        """The first `$/fengyu/initialize` exchange; None when FengYu sends none."""
        if "_transcript" in self.__dict__:
            return self._transcript.exchanges.get(Step.HANDSHAKE)
        return self._start_only.exchanges.get(Step.HANDSHAKE)

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

    @property
    def harness_started(self) -> bool:
        """Whether an item of this run has started the tool harness (FY-WRK-020 asks)."""
        return self._harness is not None

    def harness(self) -> ToolHarness:
        assert self.spec is not None
        if self._harness is None:
            report = self.overruns.reporter()
            self._harness = ToolHarness(self.spec, self.resources, report)
        return self._harness

    def network_pair(self) -> NetworkPair | None:
        """Two fresh copies of the worker, with and without network (network_pair.py), the
        second traced where strace can; None where no copy without network can be made."""
        assert self.spec is not None
        prefix, _ = isolation()
        if not prefix:
            return None
        if self._pair is None:
            strace = tracing()
            trace = self.workdir / "no-network.trace" if strace else None
            traced = tracer(strace, trace) if trace is not None else ()
            self._pair = NetworkPair(
                ToolHarness(self._copy("control", self.spec.argv)),
                ToolHarness(self._copy("no-network", (*prefix, *traced, *self.spec.argv))),
                trace,
            )
        return self._pair

    def _copy(self, name: str, argv: tuple[str, ...]) -> WorkerSpec:
        """The worker's spec with a data folder and HOME of its own (unwatched: what a copy
        writes there while it starts is not the tools' doing)."""
        assert self.spec is not None
        home = self.workdir / f"home-{name}"
        return replace(
            self.spec,
            argv=argv,
            data_dir=self.workdir / f"data-{name}",
            home_dir=home,
            extra_env={**self.spec.extra_env, **xdg_folders(home)},
        )

    def host_session(self) -> HostSession:
        if self._host is None:
            commands = {self.plugin.label: self.override} if self.override else {}
            self._host = HostSession(
                self.plugin.root,
                self.workdir / "host-session",
                self.workdir,
                self.worker_env,
                commands,
            )
        return self._host

    def input_space(self, tool: AiTool) -> InputSpace | None:
        """The tool's input space (None without an inputSchema object), built once per tool:
        each of its FY-TOOL items draws from it, and building it is most of their set-up."""
        if tool.pointer not in self._spaces:
            schema = tool.input_schema.data if tool.input_schema else None
            self._spaces[tool.pointer] = InputSpace.of(schema) if isinstance(schema, dict) else None
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
        return effective_timeout(declared, None, self.methods.get(tool.method))

    @cached_property
    def methods(self) -> dict[str, float]:
        """The declared methods and their timeouts, read once: a per-tool item asking for
        them again would make a run quadratic in the number of tools."""
        return declared_methods(self.plugin)

    def close(self) -> None:
        if self._host is not None:
            self._host.close()
            self._host = None
        for services in (self._harness, self._pair):
            if services is not None:
                services.close()
        self._harness, self._pair = None, None
        self.recorder.close()
        shutil.rmtree(self.workdir, ignore_errors=True)
