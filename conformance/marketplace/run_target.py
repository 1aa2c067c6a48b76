"""One target, one kit run, bounded: what a marketplace night does for each line.

Each target runs as a pytest process of its own in a folder of its own, in its own process
group, with a wall limit, a memory limit (the resident memory of the whole process tree,
sampled, since a node server reserves far more address space than it uses) and a cap on the
output kept (its head and tail). Whatever the target does (hang, crash, flood, fail to
install) ends that target with a status saying what stopped it, never the others:

- `checked`: the kit ran its items and wrote its report (the items say pass or fail);
- `install-failed`: the package manager could not fetch or install the server;
- `did-not-start`: the target's setup requirement failed (its manifest did not load, the
  worker or server did not start, the archive could not be unpacked);
- `needs-configuration`: the server declares something required the target does not give;
- `unsupported`: a package kind the kit does not run (a container image, a remote server);
- `timed-out`, `memory-exceeded`: the run was stopped at its bound;
- `kit-error`: the kit ended without a report (a usage error or a crash: a bug to report)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import psutil

from conformance.marketplace.server_json import ServerJsonError, launch_entry
from conformance.marketplace.targets import Target
from plugin_spec.json_types import JsonObject
from reference_host.mcp.start_problems import INSTALL_FAILED

STATUSES = (
    "checked",
    "install-failed",
    "did-not-start",
    "needs-configuration",
    "unsupported",
    "timed-out",
    "memory-exceeded",
    "kit-error",
)
SAMPLE_SECONDS = 0.5  # how often the memory of the process tree is read


@dataclass(frozen=True)
class Limits:
    """Per target: wall seconds, resident bytes of the process tree, output bytes kept."""

    wall: float = 600.0
    memory: int = 4 * 2**30
    keep: int = 2**20


@dataclass
class Outcome:
    """How one target's run ended, and where its report and output are."""

    id: str
    kind: str
    status: str
    reason: str = ""
    seconds: float = 0.0
    report: Path | None = None
    output: Path | None = None
    peak_memory: int = 0
    output_bytes: int = 0

    def to_json(self) -> JsonObject:
        return {
            "id": self.id,
            "kind": self.kind,
            "status": self.status,
            "reason": self.reason,
            "seconds": round(self.seconds, 3),
            "peak_memory": self.peak_memory,
            "output_bytes": self.output_bytes,
        }


class Unrunnable(Exception):
    """The target cannot be run as given: a status and the reason."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def run_target(target: Target, folder: Path, limits: Limits, kit_args: list[str]) -> Outcome:
    """Run the kit on target in folder (made empty first), within limits."""
    folder = folder.resolve()
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    began = time.monotonic()
    try:
        selection = _selection(target, folder)
    except Unrunnable as exc:
        return Outcome(target.id, target.kind, exc.status, exc.reason)
    report = folder / "report"
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *selection]
    argv += ["--conformance-report", str(report), *kit_args]
    ended = _bounded(argv, folder, limits)
    outcome = Outcome(
        target.id,
        target.kind,
        ended.stopped or "checked",
        ended.why,
        time.monotonic() - began,
        output=folder / "output.txt",
        peak_memory=ended.peak,
        output_bytes=ended.output_bytes,
    )
    json_report = report.with_suffix(".json")
    if outcome.status != "checked":
        return outcome
    if not json_report.is_file():
        outcome.status = "kit-error"
        outcome.reason = f"the kit exited with status {ended.returncode} and wrote no report"
        return outcome
    outcome.report = json_report
    outcome.status, outcome.reason = _judged(json_report)
    return outcome


def _selection(target: Target, folder: Path) -> list[str]:
    """The kit's arguments naming the target, after unpacking or writing what it needs."""
    if target.kind == "plugin":
        assert target.plugin is not None
        return ["--plugin-dir", str(_plugin_folder(target.plugin, folder / "plugin"))]
    if target.kind == "server":
        try:
            entry = launch_entry(target.server, target.package, target.env)
        except ServerJsonError as exc:
            unsupported = "is not run here" in str(exc) or "no package" in str(exc)
            status = "unsupported" if unsupported else "needs-configuration"
            raise Unrunnable(status, str(exc)) from None
    else:
        entry = target.entry
    config = folder / "mcp.json"
    name = target.id.rsplit("/", 1)[-1] or "server"
    config.write_text(json.dumps({"mcpServers": {name: entry}}), "utf-8")
    return ["--mcp-config", str(config)]


def _plugin_folder(source: Path, into: Path) -> Path:
    """The plugin folder itself, or an archive unpacked into `into` (names that would land
    outside it are refused by the archive modules' own filters)."""
    if source.is_dir():
        return source
    if not source.is_file():
        raise Unrunnable("did-not-start", f"{source} is neither a folder nor an archive")
    try:
        if zipfile.is_zipfile(source):
            with zipfile.ZipFile(source) as archive:
                for member in archive.namelist():
                    if member.startswith("/") or ".." in Path(member).parts:
                        raise Unrunnable("did-not-start", f"{source}: {member!r} leaves the folder")
                archive.extractall(into)
        elif tarfile.is_tarfile(source):
            with tarfile.open(source) as archive:
                archive.extractall(into, filter="data")
        else:
            raise Unrunnable("did-not-start", f"{source} is not a zip or tar archive")
    except (OSError, tarfile.TarError, zipfile.BadZipFile) as exc:
        raise Unrunnable("did-not-start", f"{source} could not be unpacked: {exc}") from None
    entries = [p for p in into.iterdir()] if into.is_dir() else []
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else into


@dataclass
class _Ended:
    returncode: int | None
    stopped: str  # "" or timed-out / memory-exceeded
    why: str
    peak: int
    output_bytes: int
    text: str


def _bounded(argv: list[str], folder: Path, limits: Limits) -> _Ended:
    """Run argv in its own process group, stopping the group at a bound; its output kept
    to limits.keep bytes (head and tail) in folder/output.txt."""
    process = subprocess.Popen(
        argv,
        cwd=folder,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert process.stdout is not None
    kept = _Kept(limits.keep)
    reader = threading.Thread(target=kept.read, args=(process.stdout,), daemon=True)
    reader.start()
    deadline = time.monotonic() + limits.wall
    stopped, why, peak = "", "", 0
    while process.poll() is None:
        peak = max(peak, _tree_memory(process.pid))
        if peak > limits.memory:
            stopped = "memory-exceeded"
            why = f"the run's processes held {peak} bytes, over the bound of {limits.memory}"
        elif time.monotonic() > deadline:
            stopped, why = "timed-out", f"the run took longer than {limits.wall:g} s"
        if stopped:
            _stop_group(process)
            break
        try:
            process.wait(SAMPLE_SECONDS)
        except subprocess.TimeoutExpired:
            continue
    process.wait()
    reader.join(timeout=10)
    text = kept.text()
    (folder / "output.txt").write_text(text, "utf-8")
    return _Ended(process.returncode, stopped, why, peak, kept.total, text)


def _tree_memory(pid: int) -> int:
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.Error:
            continue
    return total


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """TERM the run's process group, then KILL what is left after a moment."""
    for sent in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sent)
        except ProcessLookupError:
            return
        try:
            process.wait(5)
            return
        except subprocess.TimeoutExpired:
            continue


class _Kept:
    """The head and the tail of a stream, within a byte budget, and its whole length."""

    def __init__(self, budget: int) -> None:
        self.half = max(budget // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def read(self, stream: IO[bytes]) -> None:
        while chunk := stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536):
            self.total += len(chunk)
            room = self.half - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            self.tail += chunk
            if len(self.tail) > self.half:
                del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        cut = self.total - len(self.head) - len(self.tail)
        middle = f"\n[... {cut} bytes not kept ...]\n" if cut > 0 else ""
        return (
            bytes(self.head).decode("utf-8", "replace")
            + middle
            + bytes(self.tail).decode("utf-8", "replace")
        )


def _judged(report: Path) -> tuple[str, str]:
    """checked, or what the report's setup failures say stopped the target."""
    try:
        document = json.loads(report.read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        return "kit-error", f"{report}: unreadable report: {exc}"
    for record in document.get("results", []):
        if record.get("setup") and record.get("status") == "failed":
            text = " ".join(str(f.get("message", "")) for f in record.get("findings", []))
            status = "install-failed" if INSTALL_FAILED in text else "did-not-start"
            return status, f"{record['requirement']} {record['title']}: {text[:500]}"
    return "checked", ""
