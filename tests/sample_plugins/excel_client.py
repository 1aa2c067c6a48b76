"""A JSON-RPC client for the Excel Splitter's real worker process, and workbook helpers."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from openpyxl import Workbook, load_workbook

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "sample_plugins" / "fan.summer.excel"
SCRIPT = PLUGIN / "backend" / "worker"
EXAMPLE = PLUGIN / "conformance" / "examples" / "excel_analyze" / "sales.xlsx"
MANIFEST = json.loads((PLUGIN / "manifest.json").read_text(encoding="utf-8"))
METHODS: dict[str, dict[str, Any]] = MANIFEST["rpc"]["methods"]
REPLY_SECONDS = 30.0


def output_errors(method: str, result: Any) -> list[str]:
    """Why result does not validate against method's outputSchema (empty when it does)."""
    validator = Draft202012Validator(METHODS[method]["outputSchema"])
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(result)]


class WorkerProcess:
    """The plugin's backend/worker run as FengYu runs it: a subprocess speaking NDJSON-RPC."""

    def __init__(self, stderr_path: Path) -> None:
        env = dict(os.environ, FENGYU_PLUGIN_ID="fan.summer.excel", FENGYU_PLUGIN_ROOT=str(PLUGIN))
        self._stderr = stderr_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, str(SCRIPT)],
            cwd=PLUGIN,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self.stderr_path = stderr_path
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(b"")

    def request(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send one request and return the whole response object."""
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        return self.send_raw(json.dumps(message).encode(), self._next_id)

    def send_raw(self, frame: bytes, expect_id: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(frame + b"\n")
        self.process.stdin.flush()
        try:
            line = self._lines.get(timeout=REPLY_SECONDS)
        except queue.Empty:
            raise AssertionError(f"no reply within {REPLY_SECONDS}s; {self.stderr()}") from None
        assert line, f"worker exited (code {self.process.poll()}); {self.stderr()}"
        reply = json.loads(line)
        assert reply.get("id") == expect_id, reply
        return reply

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The result of a call that must succeed at the protocol level and fit outputSchema."""
        reply = self.request(method, {} if params is None else params)
        assert "result" in reply, f"{method} answered an error: {reply}"
        result = reply["result"]
        assert output_errors(method, result) == [], (method, params, result)
        return result

    def error(self, method: str, params: Any) -> dict[str, Any]:
        reply = self.request(method, params)
        assert "error" in reply, f"{method} answered a result: {reply}"
        return reply["error"]

    def wait_job(self, job_id: str, timeout: float = 30.0) -> tuple[dict[str, Any], list[str]]:
        """Poll excel_execute_status until done; the last answer and every log line seen."""
        deadline = time.monotonic() + timeout
        cursor, lines = 0, []
        while True:
            status = self.call("excel_execute_status", {"jobId": job_id, "cursor": cursor})
            assert status["success"], status
            assert status["cursor"] == cursor + len(status["logs"])
            lines += status["logs"]
            cursor = status["cursor"]
            if status["done"]:
                return status, lines
            assert time.monotonic() < deadline, f"job {job_id} still running: {status}"
            time.sleep(0.02)

    def stderr(self) -> str:
        self._stderr.flush()
        return "stderr: " + self.stderr_path.read_text(errors="replace")[-2000:]

    def close(self) -> int:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            code = self.process.wait(timeout=60)  # a bound on waiting, not a speed claim
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self._stderr.close()
        return code


def sheet_rows(path: Path, sheet: str | None = None) -> list[tuple[Any, ...]]:
    """The rows of one sheet (the only one when sheet is None), trailing blanks trimmed."""
    book = load_workbook(path, data_only=True)
    try:
        ws = book[sheet] if sheet is not None else book.worksheets[0]
        return [_trim(row) for row in ws.iter_rows(values_only=True)]
    finally:
        book.close()


def sheet_names(path: Path) -> list[str]:
    book = load_workbook(path, read_only=True)
    try:
        return list(book.sheetnames)
    finally:
        book.close()


def _trim(row: Sequence[Any]) -> tuple[Any, ...]:
    values = list(row)
    while values and values[-1] is None:
        values.pop()
    return tuple(values)


def make_workbook(path: Path, sheets: dict[str, Iterable[Sequence[Any]]]) -> Path:
    book = Workbook(write_only=True)
    for title, rows in sheets.items():
        ws = book.create_sheet(title)
        for row in rows:
            ws.append(list(row))
    book.save(path)
    return path
