"""A worker process driven byte by byte, for protocol checks that must send malformed frames.

The host's process manager only sends well-formed requests; protocol checks need to write
anything and see every stdout line, so they talk to the process directly. It is started and
ended the way the host's are: the same environment and lineage token, and once it has
exited, however, its process group and every process carrying its token are killed.
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import threading
import time
from dataclasses import dataclass, field

from plugin_spec.fengyu_runtime import parse_log_line
from plugin_spec.framing import MAX_FRAME_BYTES, decode_line
from plugin_spec.json_types import JsonObject
from plugin_spec.line_depth import TOO_DEEP, depth_over
from reference_host.process.connection import stdout_problem
from reference_host.process.launch import WorkerSpec
from reference_host.process.lineage import end_lineage, new_token
from reference_host.process.reaper import MANAGED, reap_orphans
from reference_host.process.tail import StderrTail
from reference_host.process.tree import kill_group, kill_tree

KILL_WAIT = 5.0  # a blocked write ends this soon after the worker is killed


OVERLONG_PREFIX = 300  # characters of an over-long line kept for the report
MALFORMED_KEPT = 5  # malformed log lines kept for the report
STDERR_CHUNK = 64 * 1024
# stdout read ahead of the kit, in bytes: past this the reader waits for the kit to take
# lines (one line of any size is always taken in), so a process flooding stdout waits on its
# pipe, as under an SDK client, instead of growing the kit's memory
READ_AHEAD = MAX_FRAME_BYTES + 1


@dataclass(frozen=True)
class Line:
    """One stdout line: its text and, when it is a JSON object, the object. An over-long
    line (no newline within MAX_FRAME_BYTES) keeps only its start: it is a finding, and
    the rest of it is never read. So does a line nested too deep (too_deep), which is never
    decoded: hosts refuse it (plugin_spec/line_depth.py). size is the line's length in bytes
    as read, depth how deeply a line refused for its nesting nests."""

    text: str
    message: JsonObject | None
    overlong: bool = False
    too_deep: bool = False
    size: int = 0
    depth: int = 0

    @classmethod
    def parse(cls, raw: bytes) -> Line:
        size = len(raw)
        if size > MAX_FRAME_BYTES and not raw.endswith(b"\n"):
            head = raw[:OVERLONG_PREFIX].decode("utf-8", "replace")
            return cls(head, None, overlong=True, size=size)
        if (deep := depth_over(raw)) is not None:
            head = raw[:OVERLONG_PREFIX].decode("utf-8", "replace")
            return cls(head, None, too_deep=True, size=size, depth=deep)
        return cls(*decode_line(raw), size=size)

    @property
    def problem(self) -> str | None:
        """What keeps the line from being a JSON-RPC 2.0 response; None when it is one."""
        return TOO_DEEP if self.too_deep else stdout_problem(self.message)


@dataclass
class LogLines:
    """The structured log lines (`@fengyu-log:`) a worker wrote to stderr: how many, and the
    first few FengYu could not read, each with what is wrong with it."""

    seen: int = 0
    malformed: list[tuple[str, str]] = field(default_factory=list)

    def read(self, text: str) -> None:
        record = parse_log_line(text)
        if record is None:
            return
        self.seen += 1
        if record.problem and len(self.malformed) < MALFORMED_KEPT:
            self.malformed.append((text[:OVERLONG_PREFIX], record.problem))


class ReadAhead:
    """The bytes of stdout read but not yet taken by the kit, at most READ_AHEAD (plus one
    line): the reader waits in hold() until the kit takes lines, or the worker is killed."""

    def __init__(self, limit: int = READ_AHEAD) -> None:
        self.limit = limit
        self.held = 0
        self.closed = False
        self._changed = threading.Condition()

    def hold(self, size: int) -> None:
        with self._changed:
            while self.held and self.held + size > self.limit and not self.closed:
                self._changed.wait()
            self.held += size

    def release(self, size: int) -> None:
        with self._changed:
            self.held -= size
            self._changed.notify_all()

    def close(self) -> None:
        with self._changed:
            self.closed = True
            self._changed.notify_all()


class RawWorker:
    """A started worker process with threads draining its stdout and stderr."""

    def __init__(self, spec: WorkerSpec, logs: LogLines | None = None) -> None:
        """logs: where the `@fengyu-log:` lines of its stderr are counted and judged."""
        spec.prepare_folders()
        self.spec = spec
        self.lineage = new_token()
        with spec.started_command() as (argv, fds):
            self.process = subprocess.Popen(
                argv,
                cwd=spec.root,
                env=spec.environment(self.lineage),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=fds,
            )
        MANAGED.add(self.process.pid)  # Popen reaps it; the orphan reaper must not
        self.lines: queue.Queue[Line | None] = queue.Queue()
        self.read_ahead = ReadAhead()
        self.logs = logs if logs is not None else LogLines()
        # lines cut and kept within the host's bounds: a worker cannot grow the kit's memory
        self.stderr_tail = StderrTail(self.logs.read)
        self._killed = False
        self._eof = False  # the reader's end-of-stdout mark has been taken
        self._stderr_done = threading.Event()
        self._ended = False
        self._end_lock = threading.Lock()
        threading.Thread(target=self._drain_stdout, daemon=True).start()
        threading.Thread(target=self._watch, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    @property
    def stderr(self) -> str:
        return self.stderr_tail.text

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, frames: list[bytes], deadline: float) -> bool | None:
        """Write frames to stdin by the deadline (monotonic): True when written, False if
        the worker no longer reads stdin (closed, exited), None if the write was still
        blocked at the deadline, a worker that stopped reading with the pipe full; it is
        then killed, which ends the write."""
        assert self.process.stdin is not None
        stdin = self.process.stdin
        written = threading.Event()
        failed = threading.Event()

        def write() -> None:
            try:
                for data in frames:
                    stdin.write(data)
                    stdin.flush()
            except (OSError, ValueError):
                failed.set()
            written.set()

        threading.Thread(target=write, name="stdin writer", daemon=True).start()
        if written.wait(max(0.0, deadline - time.monotonic())):
            return not failed.is_set()
        self.kill()
        written.wait(KILL_WAIT)
        return None

    def next_line(self, deadline: float) -> Line | None:
        """The next stdout line, or None at EOF (at_eof then says so) or when the deadline
        (monotonic) passes."""
        if self._eof:
            return None
        try:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None
        self._eof = line is None
        if line is not None:
            self.read_ahead.release(line.size)
        return line

    @property
    def at_eof(self) -> bool:
        """Whether stdout has ended: everything the worker wrote there has been read."""
        return self._eof

    def rest(self, seconds: float) -> list[Line]:
        """The stdout lines not read yet, up to EOF or for seconds at most: what a worker
        wrote after the last exchange, at its exit included."""
        deadline = time.monotonic() + seconds
        lines: list[Line] = []
        while (line := self.next_line(deadline)) is not None:
            lines.append(line)
        return lines

    def exit_code(self, wait: float) -> int | None:
        """The exit code, waiting up to wait seconds for it (stdout can end a moment before
        the process, a sandbox's above all); None if it is still running. Once it has exited,
        its stderr is read to the end (for as long again at most)."""
        try:
            code = self.process.wait(wait)
        except subprocess.TimeoutExpired:
            return None
        self._stderr_done.wait(wait)
        return code

    def close_stdin(self, wait: float) -> int | None:
        """Close stdin and wait for the exit code (None if it did not exit in time); once it
        has exited, what it started is ended too."""
        with contextlib.suppress(OSError, ValueError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        try:
            code = self.process.wait(wait)
        except subprocess.TimeoutExpired:
            return None
        self._end()
        return code

    def kill(self) -> None:
        """Kill the worker and its process tree, once; later calls do nothing."""
        if self._killed:
            return
        self._killed = True
        self.read_ahead.close()
        if self.process.poll() is None:  # once reaped, its pid is not ours to signal
            kill_tree(self.process.pid)
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        self.process.wait()
        self._end()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:  # all three are pipes, so never None here
                with contextlib.suppress(OSError, ValueError):
                    stream.close()

    def _watch(self) -> None:
        """The moment the worker exits, whatever it left running is ended (as the host's
        connection does), also when nobody closes or kills it afterwards."""
        self.process.wait()
        self._end()

    def _end(self) -> None:
        """Once the worker is reaped: kill its group and its lineage, once; a second caller
        returns when the first is done."""
        with self._end_lock:
            if not self._ended:
                self._ended = True
                self.read_ahead.close()  # what is left is at most its pipe's buffer
                MANAGED.discard(self.process.pid)
                kill_group(self.process.pid)
                end_lineage(self.lineage)
                reap_orphans()

    def _drain_stdout(self) -> None:
        assert self.process.stdout is not None
        with contextlib.suppress(OSError, ValueError):
            while raw := self.process.stdout.readline(MAX_FRAME_BYTES + 1):
                self.read_ahead.hold(len(raw))
                line = Line.parse(raw)
                self.lines.put(line)
                if line.overlong:
                    break  # framing is lost: reading on would only buffer an endless line
        self.lines.put(None)

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        try:
            with contextlib.suppress(OSError, ValueError):
                while chunk := os.read(self.process.stderr.fileno(), STDERR_CHUNK):
                    self.stderr_tail.feed(chunk)
            self.stderr_tail.close()
        finally:
            self._stderr_done.set()
