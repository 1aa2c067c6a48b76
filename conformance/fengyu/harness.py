"""The reference host's process manager, driven synchronously for the kit's property checks.

Tool checks call the worker exactly the way the host does (same manager, same timeouts,
same restarts), from ordinary synchronous test code: the manager runs on an event loop in a
background thread for the life of the kit run. A call waited on for NOTICE_SECONDS is named
to its notify (the terminal, pytest_session.py), and again every NOTICE_EVERY
seconds, so a run that sits still says which plugin, tool and input it waits on. Every
stdout line that is not a JSON-RPC response is told with the call it came in (FY-WRK-007),
and a call that timed out is kept, so later items of that tool need not wait on it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import shlex
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from conformance.deadlines import Deadlines
from conformance.fengyu.resource_watch import REPORT_ONLY, Reporter
from conformance.findings import shown
from conformance.loop_thread import LoopThread
from plugin_spec import jsonrpc
from plugin_spec.fengyu_decls import ResourceLimits
from plugin_spec.fengyu_runtime import ARTIFACTS
from plugin_spec.line_depth import TOO_DEEP
from reference_host.process.launch import WorkerSpec
from reference_host.process.manager import PluginProcessManager
from reference_host.process.worker_errors import (
    WorkerCrashed,
    WorkerError,
    WorkerProtocolError,
    WorkerRpcError,
    WorkerTimeout,
)

T = TypeVar("T")
NOTICE_SECONDS = 5.0  # a call waited on this long is named on the terminal
NOTICE_EVERY = 10.0  # and again after each further this many seconds
GO_WORKER = ARTIFACTS["go"]
JAVA_TMPDIR = "-Djava.io.tmpdir="  # the data folder's tmp, as FengYu gives java (launch.py)
# Told (line, what is wrong with it, what the kit was doing) of each stray stdout line.
StrayReporter = Callable[[str, str, str], None]


@dataclass(frozen=True)
class CallOutcome:
    """What one call came to, with everything a failure report needs."""

    kind: str  # result | rpc-error | timeout | crash | protocol | launch
    value: Any
    message: str
    stderr: str
    request: jsonrpc.Request

    @property
    def succeeded(self) -> bool:
        """A result that does not say success false: the tool did what it was asked."""
        value = self.value
        return self.kind == "result" and not (
            isinstance(value, dict) and value.get("success") is False
        )

    @property
    def failed_badly(self) -> bool:
        """A crash, a hang or broken framing: never acceptable, whatever the input."""
        return self.kind in ("timeout", "crash", "protocol", "launch")

    @property
    def unreadable(self) -> bool:
        """An answer refused unread for its nesting (plugin_spec/line_depth.py): FY-WRK-007's
        finding; what the tool answered cannot be judged."""
        return self.kind == "protocol" and TOO_DEEP in self.message


@dataclass(frozen=True)
class CancelOutcome:
    """What a call the host cancelled came to: whether the worker answered within FengYu's
    second of the cancel (or before it was sent), its response (None when it answered before
    the cancel, died, or said nothing), and how many seconds after the cancel it came."""

    answered: bool
    response: dict[str, Any] | None = None
    after: float | None = None

    @property
    def error(self) -> dict[str, Any] | None:
        """The response's error object, None for a result or no response."""
        error = self.response.get("error") if self.response is not None else None
        return error if isinstance(error, dict) else None

    @property
    def is_result(self) -> bool:
        return self.response is not None and "error" not in self.response


def _finished(call: asyncio.Task[Any]) -> CancelOutcome:
    """A call that ended before its cancel was sent: answered, nothing to judge."""
    with contextlib.suppress(WorkerError):
        call.result()
    return CancelOutcome(True)


def _message(answer: asyncio.Future[Any] | None) -> dict[str, Any] | None:
    """The response a cancelled call got, None when it got none (the worker died)."""
    if answer is None or not answer.done() or answer.cancelled() or answer.exception():
        return None
    message = answer.result()
    return message if isinstance(message, dict) else None


class ToolHarness:
    """One plugin's worker behind a PluginProcessManager on a private event loop."""

    def __init__(
        self,
        spec: WorkerSpec,
        resources: ResourceLimits | None = None,
        report: Reporter | None = None,
        called: Callable[[], None] | None = None,
        folder: Path | None = None,
        *,
        stray: StrayReporter | None = None,
        tools: Mapping[str, str] | None = None,
        hangs: dict[str, CallOutcome] | None = None,
        notify: Callable[[str], None] | None = None,
        deadlines: Deadlines,
    ) -> None:
        """resources: the declared limits, watched and told to report (never enforced:
        resource_watch.py) together with the call under way; called: told when each call
        ends; folder: the plugin folder reproductions run in (the author's, where the kit
        runs a copy); stray: told of each stdout line that is not a JSON-RPC response;
        tools: the tool names of each method, as messages name calls; hangs: where the
        first call of each method that timed out is kept; notify: told of a call waited on
        for NOTICE_SECONDS, and again every NOTICE_EVERY (the kit's terminal); deadlines: how
        long its start may take."""
        self.notify = notify
        self.deadlines = deadlines
        self.spec = spec
        self.folder = folder or spec.root
        self.tools = dict(tools or {})
        self.hangs = hangs if hangs is not None else {}
        self._called = called
        self._closing = False
        self._loop = LoopThread(f"kit worker loop {spec.plugin_id}")
        self.manager = PluginProcessManager(limits=REPORT_ONLY)
        self.manager.register(spec, resources if report is not None else None)
        if report is not None:
            self.manager.overrun_observers.append(lambda _, found: report(found, self.doing()))
        if stray is not None:
            self.manager.stdout_observers.append(
                lambda _, line, problem: stray(line, problem, self.doing())
            )
        self._warm = False
        self._calls: tuple[jsonrpc.Request | None, jsonrpc.Request | None] = (None, None)
        # Every call made, when it began and ended: the effect watch lays what the worker
        # did at the door of the call that ran then, observed by a check or not.
        self.windows: list[tuple[float, float, CallOutcome]] = []

    def doing(self) -> str:
        """The call under way, else the last one made: what an overrun or a stray stdout
        line is told with."""
        current, last = self._calls
        request = current or last
        what = "" if request is None else f"calling {self.named(request)}"
        if self._closing:
            context = f" (the last call before: {self.named(request)})" if request else ""
            return f"at the worker's exit, after its stdin closed{context}"
        if request is None:
            return "while the worker started"
        return f"while {what}" if current else f"after {what}"

    def named(self, request: jsonrpc.Request) -> str:
        """A request as messages name it: the tool (and method) and its params."""
        method = request["method"]
        tool = self.tools.get(method)
        called = f"tool {tool!r} (method {method!r})" if tool else repr(method)
        return f"{called} with {shown(request['params'], 300)}"

    def warm(self) -> None:
        """Start the worker (and greet it, where a handshake is declared) once, before the
        first observed tool call, as a host starts it: what a runtime writes while it starts
        (caches, byte code) then happens before that call. No request of the kit's own is
        sent: a worker must not tell the kit from a host by its first method."""
        if not self._warm:
            self._warm = True
            with contextlib.suppress(WorkerError):
                start = self.manager.start(self.spec.plugin_id)
                self._loop.run(start, timeout=self.deadlines.start)

    def call(self, method: str, params: Any, timeout: float) -> CallOutcome:
        """Call method as a host would; the first call of a method that times out, or whose
        answer is refused unread, is kept in hangs."""
        request = jsonrpc.request("repro-1", method, params)
        began = time.time()
        outcome = self._call(request, timeout)
        self.windows.append((began, time.time(), outcome))
        if outcome.kind == "timeout" or outcome.unreadable:
            self.hangs.setdefault(method, outcome)
        return outcome

    def _call(self, request: jsonrpc.Request, timeout: float) -> CallOutcome:
        method, params = request["method"], request["params"]
        invoke = self.manager.invoke(self.spec.plugin_id, method, params, tool_timeout=timeout)
        self._calls = (request, self._calls[1])
        try:
            return CallOutcome("result", self._wait(invoke, request, timeout), "", "", request)
        except WorkerRpcError as exc:
            error = {"code": exc.code, "message": exc.rpc_message}
            if exc.data is not None:
                error["data"] = exc.data
            return CallOutcome("rpc-error", error, exc.message, exc.stderr, request)
        except WorkerError as exc:
            kind = {
                WorkerTimeout: "timeout",
                WorkerCrashed: "crash",
                WorkerProtocolError: "protocol",
            }.get(type(exc), "launch")
            return CallOutcome(kind, None, exc.message, exc.stderr, request)
        finally:
            self._calls = (None, request)
            if self._called is not None:
                self._called()

    def abandon(
        self, method: str, params: Any, timeout: float, delay: float = 0.0
    ) -> CancelOutcome:
        """Call method and leave delay seconds after the request is written (0: as soon as
        it is), as a user stopping a call does: what the worker answered the host's
        `$/cancelRequest` within FengYu's second, and how soon (a call that finished first,
        or a worker that died meanwhile, counts as answered: that is another requirement's
        finding), or that it was killed for its silence."""
        request = jsonrpc.request("repro-1", method, params)
        began = time.time()
        try:
            return self._wait(self._abandon(method, params, timeout, delay), request, timeout)
        finally:
            cancelled = CallOutcome("cancelled", None, "cancelled by the kit", "", request)
            self.windows.append((began, time.time(), cancelled))

    def _wait(self, work: Coroutine[Any, Any, T], request: jsonrpc.Request, timeout: float) -> T:
        """Run work on the loop and wait for it, telling the waiting notices what is waited
        on once NOTICE_SECONDS have passed, and every NOTICE_EVERY seconds after."""
        future = asyncio.run_coroutine_threadsafe(work, self._loop.loop)
        started = time.monotonic()
        notice = NOTICE_SECONDS
        while True:
            try:
                return future.result(max(0.0, started + notice - time.monotonic()))
            except TimeoutError:
                if future.done():
                    raise
            text = (
                f"waiting {notice:g} s on {self.spec.plugin_id} {self.named(request)} "
                f"(timeout {timeout:g} s)"
            )
            if self.notify is not None:
                self.notify(text)
            notice += NOTICE_EVERY

    async def _abandon(
        self, method: str, params: Any, timeout: float, delay: float
    ) -> CancelOutcome:
        plugin = self.spec.plugin_id
        call = asyncio.create_task(
            self.manager.invoke(plugin, method, params, tool_timeout=timeout)
        )
        connection = self.manager.connection(plugin)
        while connection is None or method not in connection.in_flight.values():
            if call.done():
                return _finished(call)
            await asyncio.sleep(0.001)
            connection = self.manager.connection(plugin)
        request_id = next(i for i, m in connection.in_flight.items() if m == method)
        answer = connection.pending.get(request_id)
        answered_at: list[float] = []

        def answered(future: asyncio.Future[Any]) -> None:
            if not future.cancelled():  # cancelled with the call it was the future of
                answered_at.append(time.monotonic())

        if answer is not None:
            answer.add_done_callback(answered)
        if delay > 0:
            await asyncio.wait({call}, timeout=delay)
            if call.done():
                return _finished(call)
        cancelled = time.monotonic()
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError, WorkerError):
            await call
        late = connection.abandoned.get(request_id)
        if late is not None and not answered_at:  # the answer goes where the call left it
            answer = late
            late.add_done_callback(answered)
        await connection.settled()
        silent = request_id in connection.unanswered_cancels
        message = _message(answer) if not silent else None
        after = max(0.0, answered_at[0] - cancelled) if answered_at and not silent else None
        return CancelOutcome(not silent, message, after)

    def reproduction(self, request: jsonrpc.Request, timeout: float | None = None) -> str:
        """A one-line shell command that sends request to the worker by hand, in the sandbox
        the kit ran it in (launch.py: pasted unconfined, a refused write would succeed, and
        in the author's folder). For a call that timed out (timeout: the tool's), stdin
        stays open until 5 s past the timeout: closed at once, it would end the worker
        (FengYu's SDKs give running calls 3 s, then exit 0) and the hang would look like a
        quiet success."""
        line = json.dumps(request, ensure_ascii=False, separators=(",", ":"))
        shown = replace(self.spec, root=self.folder, argv=self.shipped_argv())
        folder, _, command = shown.shell_command(confined=True).partition(" && ")
        send = f"printf '%s\\n' {shlex.quote(line)}"
        if timeout is not None:
            send = f"({send}; sleep {math.ceil(timeout) + 5})"
        if shown.argv[:1] == (f"./{GO_WORKER}",) and not os.access(
            self.folder / GO_WORKER, os.X_OK
        ):
            folder += f" && chmod +x {GO_WORKER}"  # as FengYu sets the bit when it installs
        return f"{folder} && {send} | {command}"

    def shipped_argv(self) -> tuple[str, ...]:
        """The worker's command as it runs in the author's folder, with nothing of the kit's
        run in it (its folders are gone when the line is read): a path into the kit's copy
        of the package becomes the package's own relative path, the kit's executable copy
        of a go worker becomes ./backend/worker, and java's temporary folder in the kit's
        data folder is left out (the JVM's default, /tmp, is the sandbox's own)."""
        package = self.spec.root
        argv: list[str] = []
        for index, arg in enumerate(self.spec.argv):
            if arg.startswith(JAVA_TMPDIR):
                continue
            path = Path(arg)
            if path.is_absolute() and path.is_relative_to(package):
                relative = str(path.relative_to(package))
                arg = f"./{relative}" if index == 0 else relative
            elif index == 0 and self.spec.runtime == "go" and path.name == GO_WORKER.name:
                arg = f"./{GO_WORKER}"  # the kit's executable copy of it
            argv.append(arg)
        return tuple(argv)

    def close(self) -> None:
        """Stop the worker; exit on EOF is FY-WRK-008's business, so the grace is short."""
        self._closing = True
        self._loop.run(self.manager.close(grace=1.0), timeout=30)
        self._loop.close()
