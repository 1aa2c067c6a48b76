"""The plugin installed into a scratch reference host, as the kit's host checks see it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path

from conformance.deadlines import Deadlines
from conformance.loop_thread import LoopThread
from plugin_spec.json_types import JsonMapping, ReadOnlyJson
from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.agent.models import ModelTurn, ScriptedModel, ToolCall
from reference_host.host import Host, HostConfig
from reference_host.plugins.lifecycle import PluginError, PluginInfo
from reference_host.process.bounds import DEFAULT_LIMITS, WorkerLimits
from reference_host.process.worker_errors import WorkerError
from reference_host.stream.events import Event


class HostSession:
    """A Host in the run's scratch folder with the plugin installed; approvals always allow."""

    def __init__(
        self,
        plugin_root: Path,
        workdir: Path,
        shared: Path,
        worker_env: tuple[str, ...],
        worker_commands: Mapping[str, str],
        deadlines: Deadlines,
        bounds: WorkerLimits = DEFAULT_LIMITS,
    ) -> None:
        """shared: the folder whose files the kit may attach as grants; worker_env: the
        variables passed through to the worker; worker_commands: launch commands by plugin
        id (--worker-cmd), so the host starts the worker the other suites checked;
        deadlines: how long the new worker's first answer may take; bounds: the workers'
        (--worker-limit)."""
        self.workdir = workdir
        self.deadlines = deadlines
        self.loop = LoopThread(f"kit host loop {plugin_root.name}")
        policy = ApprovalPolicy(write=Decision.ALLOW, external=Decision.ALLOW)
        config = HostConfig(
            data_dir=workdir / "host",
            approval=policy,
            allowed_roots=(shared,),
            worker_env=worker_env,
            worker_commands=dict(worker_commands or {}),
            worker_limits=bounds,
        )
        self.host = self.loop.run(_make_host(config))
        self.dispatched: list[tuple[str, ReadOnlyJson]] = []
        self.host.manager.observers.append(
            lambda _, method, params: self.dispatched.append((method, params))
        )
        self.info: PluginInfo | None = None
        self.install_error = ""
        try:
            self.info = self.loop.run(self.host.install(plugin_root))
        except PluginError as exc:
            self.install_error = "\n".join([exc.message, *exc.problems])

    def worker_answers(self) -> str:
        """ "" if the installed copy's worker starts and answers, else what went wrong."""
        assert self.info is not None
        try:
            self.loop.run(
                self.host.manager.invoke(
                    self.info.id,
                    "conformance/sentinel",
                    {},
                    caller_timeout=self.deadlines.startup,
                )
            )
        except WorkerError as exc:
            if type(exc).__name__ == "WorkerRpcError":
                return ""
            tail = "\n".join(exc.stderr.splitlines()[-10:])
            return f"{exc.message}\nworker stderr (last lines):\n{tail}" if tail else exc.message
        return ""

    def run(self, name: str, arguments: JsonMapping, conversation: str) -> list[Event]:
        """A scripted run that calls one tool and then answers."""
        turns = [
            ModelTurn(tool_calls=(ToolCall("call-kit-1", name, json.dumps(arguments)),)),
            ModelTurn(text="done"),
        ]
        return self.loop.run(_collect(self.host, ScriptedModel(turns), conversation))

    def close(self) -> None:
        self.loop.run(self.host.close(), timeout=30)
        self.loop.close()
        shutil.rmtree(self.workdir / "host", ignore_errors=True)


async def _make_host(config: HostConfig) -> Host:
    return Host(config)


async def _collect(host: Host, model: ScriptedModel, conversation: str) -> list[Event]:
    return [event async for event in host.chat("kit", model=model, conversation_id=conversation)]
