"""One running worker process and the JSON-RPC conversation with it (spec: fengyu-worker.md).

Requests carry string ids (a per-connection counter: replies can only come back on this
connection's own pipes); one reader task matches responses to pending calls by id.
Lines that are not JSON are logged and skipped, unknown ids dropped; a line that is not a
JSON-RPC response (stdout_problem) is also told to the connection's stray observer, which the
kit uses to hold every stdout byte to the protocol. A frame over 16 MiB breaks the framing,
so it fails every pending call and the worker is killed; so does a line nested deeper than
512 levels (plugin_spec/line_depth.py), whose id cannot be read: skipped, it left its call
waiting out its whole timeout.

A watcher task owns the worker's end, however it comes (stdin EOF, crash, kill): the moment
the process exits its group is killed and then its lineage (every process carrying its
token, re-parented daemons included: lineage.py), so no child outlives it; the pipes get a
moment to deliver the last output, whatever still holds them is then killed, the transport
is closed and the pending calls fail. Nothing waits on a pipe that a stray process keeps
open. With a LineageRecord, the token is recorded from before the start until its lineage
has been ended, so a host killed meanwhile leaves a note for the next one.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from plugin_spec import jsonrpc
from plugin_spec.fengyu_runtime import (
    CANCEL_GRACE_SECONDS,
    CANCEL_METHOD,
    HANDSHAKE_METHOD,
    HANDSHAKE_SECONDS,
    envelope,
    handshake_params,
    handshake_problems,
    parse_log_line,
)
from plugin_spec.framing import MAX_FRAME_BYTES, decode_message, encode_json, line_head
from plugin_spec.json_types import JsonObject, JsonValue, ReadOnlyJson
from plugin_spec.line_depth import TOO_DEEP, too_deep
from reference_host.process.call_deadlines import CallDeadlines
from reference_host.process.launch import WorkerSpec
from reference_host.process.limits import Overrun, ResourceWatch, data_overrun, watch_tree
from reference_host.process.lineage import end_lineage, new_token
from reference_host.process.reaper import reap_orphans
from reference_host.process.record import LineageRecord
from reference_host.process.secrets import SECRETS
from reference_host.process.spawn import Spawned, spawn
from reference_host.process.tail import StderrTail
from reference_host.process.tree import kill_group, kill_pipe_holders, kill_tree
from reference_host.process.worker_errors import (
    WorkerCrashed,
    WorkerError,
    WorkerHandshakeError,
    WorkerLaunchError,
    WorkerProtocolError,
    WorkerResourceLimit,
    WorkerTimeout,
    rpc_error,
)

__all__ = ["NO_RESULT", "StrayObserver", "WorkerConnection", "stdout_problem"]

SKIPPED_STDOUT_LINES = 200
ABANDONED_KEPT = 64
STDERR_CHUNK = 64 * 1024
PIPE_GRACE = 0.5  # after the exit: how long the pipes may take to reach EOF
EXIT_GRACE = 0.5  # after stdout EOF: how long the worker may take to exit
KILL_WAIT = 5.0  # SIGKILL is reaped at once unless the kernel holds the process
log = logging.getLogger("reference_host.worker")
LOG_LEVELS = {
    "TRACE": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
}
# Told (line, what is wrong with it) of each stdout line that is not a JSON-RPC response.
StrayObserver = Callable[[str, str], None]
# A response with an id and neither result nor error: what FengYu's Go SDK writes for a handler
# returning nil (omitempty) and its Java SDK for one returning null (Gson drops nulls). FengYu
# reads it as a null result, and so does this host; JSON-RPC asks for the member all the same.
NO_RESULT = "a response without result or error (read as a null result)"


def stdout_problem(message: JsonObject | None) -> str | None:
    """What keeps a decoded stdout line from being a JSON-RPC 2.0 response, the only thing a
    worker may write there (spec: fengyu-worker.md#framing-on-stdin-and-stdout); None when
    it is one."""
    if message is None:
        return "a stdout line that is not a JSON object"
    if message.get("jsonrpc") != jsonrpc.VERSION:
        return f'a stdout object without jsonrpc "{jsonrpc.VERSION}"'
    if "id" not in message:
        return "a stdout object without id"
    if "result" in message and "error" in message:
        return "a response needs exactly one of result and error"
    if "result" not in message and "error" not in message:
        return NO_RESULT
    return None


class WorkerConnection:
    """A started worker; `alive` turns False for good once it exits or is killed."""

    def __init__(
        self,
        spec: WorkerSpec,
        spawned: Spawned,
        lineage: str,
        record: LineageRecord | None = None,
        resources: ResourceWatch | None = None,
        stray: StrayObserver | None = None,
    ) -> None:
        """stray: told of each stdout line that is not a JSON-RPC response."""
        self.spec = spec
        self._stray = stray
        self.lineage = lineage
        self._record = record
        self.process = spawned.process
        self.pending: dict[str, asyncio.Future[JsonObject]] = {}
        # Requests written and not yet answered, by id: the method each called.
        self.in_flight: dict[str, str] = {}
        # Abandoned requests the worker did not answer within a second of `$/cancelRequest`.
        self.unanswered_cancels: list[str] = []
        # The futures the answers of the last abandoned requests go to, by id: what the kit
        # reads of how a worker took a cancel (a caller's own future is cancelled with it).
        self.abandoned: dict[str, asyncio.Future[JsonObject]] = {}
        self._ids = itertools.count(1)
        self._envelope = envelope(spec.locale)
        # the loop, kept: asyncio.get_running_loop() asks the OS for the pid on every call
        self._loop = asyncio.get_running_loop()
        self._deadlines = CallDeadlines(self._loop, self._expired)
        self.stderr_tail = StderrTail(self._log_stderr)
        self.skipped_stdout: deque[str] = deque(maxlen=SKIPPED_STDOUT_LINES)
        self._spawned = spawned
        self._closing = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._failure: WorkerError | None = None
        name = spec.plugin_id
        spawned.stdout.attach(self._dispatch)
        self._readers = (
            asyncio.create_task(self._read_stdout(), name=f"{name} stdout"),
            asyncio.create_task(self._read_stderr(), name=f"{name} stderr"),
        )
        self._watcher = asyncio.create_task(self._watch(), name=f"{name} exit")
        self._monitor = (
            asyncio.create_task(self._watch_resources(resources), name=f"{name} resources")
            if resources is not None and resources.watches
            else None
        )
        self._resources = resources

    @classmethod
    async def start(
        cls,
        spec: WorkerSpec,
        record: LineageRecord | None = None,
        resources: ResourceWatch | None = None,
        stray: StrayObserver | None = None,
    ) -> WorkerConnection:
        spec.prepare_folders()
        lineage = new_token()
        if record is not None:
            record.add(lineage, spec.plugin_id)
        try:
            spawned = await spawn(spec, limit=MAX_FRAME_BYTES + 1, lineage=lineage)
        except OSError as exc:
            if record is not None:
                record.remove(lineage)
            raise WorkerLaunchError(f"cannot start {spec.argv[0]}: {exc.strerror}") from None
        connection = cls(spec, spawned, lineage, record, resources, stray)
        try:
            await connection._greet()
        except BaseException:
            # a start its caller left (or a refused greeting) leaves no worker behind: nobody
            # else holds this connection to close it
            await asyncio.shield(connection.kill(WorkerLaunchError("the start was abandoned")))
            raise
        return connection

    async def _greet(self) -> None:
        """FengYu's handshake (spec: fengyu-worker.md#the-handshake), when the manifest
        declares a protocol version: a worker that does not answer it within 10 s, or
        answers with another version or runtime, is refused (start kills it)."""
        version = self.spec.protocol_version
        if version is None:
            return
        params = handshake_params(version, self.spec.plugin_id, self.spec.plugin_version)
        try:
            result = await self.call(HANDSHAKE_METHOD, params, HANDSHAKE_SECONDS)
        except WorkerError as exc:
            raise WorkerHandshakeError(
                f"worker handshake failed: {exc.message}", self.stderr
            ) from None
        problems = handshake_problems(result, version, self.spec.runtime)
        if problems:
            reasons = "; ".join(problem for _, problem in problems)
            raise WorkerHandshakeError(f"worker handshake failed: {reasons}", self.stderr)

    @property
    def alive(self) -> bool:
        # exited resolves when asyncio learns the exit status, as Process.returncode is set
        return self._failure is None and not self._closing and not self._spawned.exited.done()

    @property
    def stderr(self) -> str:
        return self.stderr_tail.text

    async def call(self, method: str, params: ReadOnlyJson, timeout: float) -> JsonValue:
        """Send one request and wait for its response; JSON-RPC errors raise WorkerRpcError
        (WorkerCancelled and WorkerPermissionDenied for FengYu's data codes). A call its
        caller abandons is cancelled in the worker with `$/cancelRequest` (_abandon)."""
        request_id = str(next(self._ids))
        future: asyncio.Future[JsonObject] = self._loop.create_future()
        self.pending[request_id] = future
        request = {**jsonrpc.request(request_id, method, params), **self._envelope}
        abandoned = False
        # The write is timed too: a worker that stops reading lets the pipe fill.
        self._deadlines.add(request_id, method, timeout)
        try:
            # in flight from the write on: a caller leaving while the frame drains has still
            # sent it, so the worker must hear of the cancel
            self.in_flight[request_id] = method
            try:
                await self._send(request)
            except WorkerError:
                _retrieved(future)  # _fail_pending may have failed it; nobody awaits it now
                if isinstance(self._failure, WorkerTimeout):
                    raise self._failure from None  # the write ran past a deadline (_expired)
                raise
            message = await future
        except WorkerTimeout as exc:
            await self.kill(exc)  # the caller hears of it once the worker is gone
            raise
        except asyncio.CancelledError:
            abandoned = (
                request_id in self.in_flight
                and not (future.done() and not future.cancelled())
                and self.alive
                and method != HANDSHAKE_METHOD  # a start left halfway is killed (start)
            )
            if abandoned:
                # the caller's cancel took its future: the answer, if one comes, goes to a
                # fresh one that _abandon waits on (no shield: it costs every call a loop turn)
                answer: asyncio.Future[JsonObject] = self._loop.create_future()
                self.pending[request_id] = self.abandoned[request_id] = answer
                while len(self.abandoned) > ABANDONED_KEPT:
                    del self.abandoned[next(iter(self.abandoned))]
                self._background(self._abandon(method, request_id, answer))
            raise
        finally:
            self._deadlines.remove(request_id)
            if not abandoned:
                self.pending.pop(request_id, None)
                self.in_flight.pop(request_id, None)
        # As FengYu reads a response: a non-null error is the answer, else the result, a
        # left-out result being a null one (spec: fengyu-worker.md#errors-and-error-codes).
        failure = message.get("error")
        if failure is not None:
            raise rpc_error(failure, self.stderr)
        return message.get("result")

    def _expired(self, method: str, seconds: float) -> None:
        """A call's deadline passed: the worker is killed, failing every pending call."""
        message = f"{method} did not answer within {seconds:g} s; the worker was killed"
        self._abort(WorkerTimeout(message, self.stderr))

    async def _abandon(
        self, method: str, request_id: str, future: asyncio.Future[JsonObject]
    ) -> None:
        """Tell the worker its caller left, as FengYu does: `$/cancelRequest`, then a second
        for the answer (CANCELLED, or a result that was on its way); a worker that gives
        none is killed, to be restarted by the next call."""
        try:
            await self._send(jsonrpc.notification(CANCEL_METHOD, {"id": request_id}))
            answered = await _within(future, timeout=CANCEL_GRACE_SECONDS)
        except WorkerError:
            answered = True  # the worker is gone already: nothing left to stop
        finally:
            self.pending.pop(request_id, None)
            self.in_flight.pop(request_id, None)
        _retrieved(future)
        if not answered:
            self.unanswered_cancels.append(request_id)
            await self.kill(
                WorkerCrashed(
                    f"{method} was abandoned and not answered within {CANCEL_GRACE_SECONDS:g} s "
                    f"of {CANCEL_METHOD}; the worker was killed",
                    self.stderr,
                )
            )

    async def settled(self) -> None:
        """Wait for the work still running after its callers left (cancelled calls)."""
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run work after its caller is gone, holding the task until it ends."""
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def notify(self, method: str, params: ReadOnlyJson, timeout: float) -> None:
        """Send a notification; like a call, a worker that does not take it in time is
        killed (WorkerTimeout)."""
        try:
            async with asyncio.timeout(timeout):
                await self._send(jsonrpc.notification(method, params))
        except TimeoutError:
            error = WorkerTimeout(
                f"{method} could not be sent within {timeout:g} s; the worker was killed",
                self.stderr,
            )
            await self.kill(error)
            raise error from None

    async def close(self, grace: float = 5.0) -> None:
        """Close stdin so the worker exits on EOF; kill it if it has not within grace."""
        self._closing = True
        stdin = self.process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        if not await _within(self._spawned.exited, timeout=grace):
            self._abort(WorkerCrashed("worker ignored stdin EOF and was killed", self.stderr))
        await self._ended()

    async def kill(self, reason: WorkerError) -> None:
        """Kill the worker and every descendant and fail the pending calls with reason;
        returns once it is reaped and its pipes are closed, or after KILL_WAIT at most."""
        self._abort(reason)
        await self._ended()

    def _abort(self, reason: WorkerError) -> None:
        """Fail the pending calls and SIGKILL the worker's tree; the watcher does the rest."""
        self._failure = self._failure or reason
        self._fail_pending(self._failure)
        if self.process.returncode is None:  # once reaped, its pid is not ours to signal
            kill_tree(self.process.pid)

    async def _ended(self) -> None:
        if not await _within(self._watcher, timeout=KILL_WAIT):
            log.warning(
                "%s: worker %d not reaped %g s after SIGKILL",
                self.spec.plugin_id,
                self.process.pid,
                KILL_WAIT,
            )

    async def _watch(self) -> None:
        """Runs for the worker's whole life and ends it for good once the process exits."""
        await self._spawned.exited
        if self._monitor is not None:
            self._monitor.cancel()
            await self._last_sample()
        kill_group(self.process.pid)
        await self._end_lineage()
        await asyncio.to_thread(reap_orphans)
        await self._drain_pipes()
        self._spawned.transport.close()
        self._deadlines.close()
        if self._closing:
            reason = WorkerCrashed("worker was shut down", self.stderr)
        else:
            reason = WorkerCrashed(
                f"worker exited with code {self.process.returncode}", self.stderr
            )
        self._fail_pending(self._failure or reason)

    async def _watch_resources(self, watch: ResourceWatch) -> None:
        """Sample the tree against its declared resources (limits.py); an overrun is logged
        and reported, and, when enforced, fails the pending calls and kills the tree."""

        def overran(overrun: Overrun) -> bool:
            log.error("%s: %s", self.spec.plugin_id, overrun.message)
            if watch.report is not None:
                watch.report(overrun)
            if not watch.policy.enforce:
                return True
            self._abort(WorkerResourceLimit(overrun, self.stderr))
            return False

        await watch_tree(
            self.process.pid,
            self.lineage,
            watch.limits,
            watch.policy.interval,
            overran,
            self.spec.machinery(),
            self.spec.limits if watch.policy.bounds else None,
            self.spec.data_dir,
        )

    async def _last_sample(self) -> None:
        """The data folder once more as the worker exits: a program the kernel's file size
        cap ended (SIGXFSZ, bounds.py) left it over its bound before a sample saw it, and that
        is a RESOURCE_LIMIT too, not a crash."""
        watch = self._resources
        if watch is None or not watch.policy.bounds or self._failure or self._closing:
            return
        bounds = self.spec.limits
        found = await asyncio.to_thread(data_overrun, self.spec.data_dir, bounds)
        if found is None:
            return
        log.error("%s: %s", self.spec.plugin_id, found.message)
        if watch.report is not None:
            watch.report(found)
        if watch.policy.enforce:
            self._failure = WorkerResourceLimit(found, self.stderr)

    async def _end_lineage(self) -> None:
        """Kill what the worker left running wherever it went, then forget the token."""
        end = self._record.end if self._record is not None else end_lineage
        killed = await asyncio.to_thread(end, self.lineage)
        if killed:
            log.info("%s: killed %s, left running by the worker", self.spec.plugin_id, killed)

    async def _drain_pipes(self) -> None:
        """Let the readers reach EOF, so a crash report has the last stderr lines; after
        PIPE_GRACE, kill what still holds the worker's pipe ends, then stop reading anyway."""
        if await _within(*self._readers, timeout=PIPE_GRACE):
            return
        spawned = self._spawned
        killed = await asyncio.to_thread(
            kill_pipe_holders, (spawned.stdin_inode, *spawned.output_inodes), {spawned.stdin_inode}
        )
        if killed:
            log.warning(
                "%s: killed %s, still holding the worker's pipes", self.spec.plugin_id, killed
            )
            if await _within(*self._readers, timeout=PIPE_GRACE):
                return
        for task in self._readers:
            task.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)

    async def _send(self, message: Mapping[str, object]) -> None:
        if not self.alive:
            raise self._failure or WorkerCrashed("worker is not running", self.stderr)
        frame = encode_json(message, allow_nan=True) + b"\n"
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(frame)
            await self.process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise WorkerCrashed("worker closed its stdin", self.stderr) from None

    async def _read_stdout(self) -> None:
        """Wait for the end of stdout (its lines are dispatched as they come: stdout_lines.py):
        a frame over 16 MiB kills the worker; at EOF the worker is exiting, or it closed
        stdout and can never answer again."""
        lines = self._spawned.stdout
        await lines.closed
        if lines.overrun:
            self._abort(
                WorkerProtocolError("worker sent a frame over 16 MiB; it was killed", self.stderr)
            )
            return
        if self.alive:
            await _within(self._spawned.exited, timeout=EXIT_GRACE)
            if self.alive:
                self._abort(WorkerCrashed("worker closed its stdout and was killed", self.stderr))

    def _dispatch(self, line: bytes) -> None:
        if too_deep(line):
            if self._stray is not None:
                self._stray(line[:1000].decode("utf-8", "replace"), TOO_DEEP)
            self._abort(WorkerProtocolError(f"worker sent {TOO_DEEP}; it was killed", self.stderr))
            return
        message = decode_message(line)
        problem = stdout_problem(message)
        if problem is not None and self._stray is not None:
            self._stray(line_head(line), problem)
        if message is None:
            if line.strip():
                text = line_head(line)
                self.skipped_stdout.append(text)
                log.warning("%s: skipped non-JSON stdout line: %.200s", self.spec.plugin_id, text)
            return
        request_id = message.get("id")
        future = self.pending.get(request_id) if isinstance(request_id, str) else None
        if future is not None and not future.done():
            future.set_result(message)
        else:
            log.debug("%s: dropped response with unknown id", self.spec.plugin_id)

    async def _read_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        try:
            while chunk := await stderr.read(STDERR_CHUNK):
                self.stderr_tail.feed(chunk)
        finally:
            self.stderr_tail.close()

    def _log_stderr(self, line: str) -> None:
        logger, level, text = stderr_record(self.spec.plugin_id, line)
        logging.getLogger(logger).log(level, "%s", text)

    def _fail_pending(self, error: WorkerError) -> None:
        for future in self.pending.values():
            if not future.done():
                future.set_exception(error)


def stderr_record(plugin_id: str, line: str) -> tuple[str, int, str]:
    """What a worker's stderr line becomes in the host's log: logger, level and text. An
    `@fengyu-log:` record keeps its level, under `reference_host.plugin.<id>` with the
    worker's logger named in the text (a worker cannot make the host create loggers); any
    other line is logged at INFO as `<id>: <line>`. The sensitive values of the plugin's
    recent calls are masked in the raw line and again in the decoded record, where a JSON
    escape no longer hides them (secrets.py); a record's line breaks are escaped, so it
    cannot forge log lines."""
    line = SECRETS.mask(plugin_id, line)
    record = parse_log_line(line)
    if record is None:
        return log.name, logging.INFO, f"{plugin_id}: {line}"
    text = SECRETS.mask(plugin_id, f"[{record.logger}] {record.message}")
    level = LOG_LEVELS.get(record.level, logging.INFO)
    return f"reference_host.plugin.{plugin_id}", level, _one_line(text)


def _one_line(text: str) -> str:
    """text with its line breaks written as \\n: one record, one log line."""
    return text.replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n")


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Read a settled future's exception: one nobody awaits is otherwise logged when the
    future is collected ("Future exception was never retrieved"), a spurious error."""
    if future.done() and not future.cancelled():
        future.exception()


async def _within(*waited: asyncio.Future[Any], timeout: float) -> bool:
    """Wait up to timeout for all of waited without cancelling them; whether all are done."""
    _, pending = await asyncio.wait(waited, timeout=timeout)
    return not pending
