"""One running worker process and the JSON-RPC conversation with it (SPEC F5, F6).

Requests carry UUID string ids; one reader task matches responses to pending calls by id.
Lines that are not JSON are logged and skipped, unknown ids dropped. A frame over 16 MiB
breaks the framing, so it fails every pending call and the worker is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import uuid
from collections import deque
from typing import Any

import psutil

from reference_host.process.errors import (
    WorkerCrashed,
    WorkerError,
    WorkerLaunchError,
    WorkerProtocolError,
    WorkerRpcError,
    WorkerTimeout,
)
from reference_host.process.launch import WorkerSpec
from reference_host.worker.framing import MAX_FRAME_BYTES, decode_line

STDERR_TAIL_LINES = 200
log = logging.getLogger("reference_host.worker")


class WorkerConnection:
    """A started worker; `alive` turns False for good once it exits or is killed."""

    def __init__(self, spec: WorkerSpec, process: asyncio.subprocess.Process) -> None:
        self.spec = spec
        self.process = process
        self.pending: dict[str, asyncio.Future[Any]] = {}
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self.skipped_stdout: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._closing = False
        self._failure: WorkerError | None = None
        self._killer: asyncio.Task[None] | None = None
        self._tasks = [
            asyncio.create_task(self._read_stdout(), name=f"{spec.plugin_id} stdout"),
            asyncio.create_task(self._read_stderr(), name=f"{spec.plugin_id} stderr"),
        ]

    @classmethod
    async def start(cls, spec: WorkerSpec) -> WorkerConnection:
        spec.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            process = await asyncio.create_subprocess_exec(
                *spec.argv,
                cwd=spec.root,
                env=spec.environment(),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                limit=MAX_FRAME_BYTES + 1,
            )
        except OSError as exc:
            raise WorkerLaunchError(f"cannot start {spec.argv[0]}: {exc.strerror}") from None
        return cls(spec, process)

    @property
    def alive(self) -> bool:
        return self._failure is None and not self._closing and self.process.returncode is None

    @property
    def stderr(self) -> str:
        return "\n".join(self.stderr_tail)

    async def call(self, method: str, params: Any, timeout: float) -> Any:
        """Send one request and wait for its response; JSON-RPC errors raise WorkerRpcError."""
        request_id = str(uuid.uuid4())
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        try:
            await self._send(
                {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            )
            async with asyncio.timeout(timeout):
                message = await future
        except TimeoutError:
            self.pending.pop(request_id, None)  # cancelled: nobody left to read its failure
            error = WorkerTimeout(
                f"{method} did not answer within {timeout:g} s; the worker was killed", self.stderr
            )
            await self.kill(error)
            raise error from None
        finally:
            self.pending.pop(request_id, None)
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            raise WorkerRpcError(
                error.get("code", 0), str(error.get("message", "")), error.get("data"), self.stderr
            )
        return message.get("result")

    async def notify(self, method: str, params: Any) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def close(self, grace: float = 5.0) -> None:
        """Close stdin so the worker exits on EOF; kill it if it has not within grace."""
        self._closing = True
        if self.process.stdin and not self.process.stdin.is_closing():
            self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), grace)
        except TimeoutError:
            await self.kill(WorkerCrashed("worker ignored stdin EOF and was killed"))
        await self._finish(WorkerCrashed("worker was shut down", self.stderr))

    async def kill(self, reason: WorkerError) -> None:
        """Kill the worker and every descendant, and fail the pending calls with reason."""
        self._failure = self._failure or reason
        kill_tree(self.process.pid)
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        await self.process.wait()
        await self._finish(reason)

    async def _finish(self, reason: WorkerError) -> None:
        self._fail_pending(reason)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.process.stdin and not self.process.stdin.is_closing():
            self.process.stdin.close()

    async def _send(self, message: dict[str, Any]) -> None:
        if not self.alive:
            raise self._failure or WorkerCrashed("worker is not running", self.stderr)
        frame = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(frame)
            await self.process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise WorkerCrashed("worker closed its stdin", self.stderr) from None

    async def _read_stdout(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while True:
            try:
                line = await stdout.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if exc.partial.strip():
                    self._dispatch(exc.partial)
                break
            except asyncio.LimitOverrunError:
                error = WorkerProtocolError(
                    "worker sent a frame over 16 MiB; it was killed", self.stderr
                )
                self._killer = asyncio.create_task(self.kill(error))
                return
            self._dispatch(line)
        code = await self.process.wait()
        crash = WorkerCrashed(f"worker exited with code {code}", self.stderr)
        self._fail_pending(self._failure or crash)

    def _dispatch(self, line: bytes) -> None:
        text, message = decode_line(line)
        if message is None:
            if text.strip():
                self.skipped_stdout.append(text[:1000])
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
        while True:
            try:
                line = await stderr.readline()
            except (asyncio.LimitOverrunError, ValueError):
                self.stderr_tail.append("[stderr line over 16 MiB dropped]")
                continue
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip()
            self.stderr_tail.append(text)
            log.info("%s: %s", self.spec.plugin_id, text)

    def _fail_pending(self, error: WorkerError) -> None:
        for future in self.pending.values():
            if not future.done():
                future.set_exception(error)


def kill_tree(pid: int) -> None:
    """SIGKILL the worker's process group and any descendant that left it."""
    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        descendants = []
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    for child in descendants:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
