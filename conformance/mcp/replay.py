"""Send a saved transcript's client lines to its server again: the reproduction of a failing
MCP item (`plugin-conformance mcp-replay FILE`).

The server is started as the kit started it (its command, in its folder, in the sandbox) and
given the same lines in the same order; before each line the replay waits, briefly, for as
many server lines as the transcript shows came before it, so that answers keep their place.
Every line is printed as it goes, `->` sent and `<-` received, then how the server ended.
Where the kit did not keep the whole session (transcript.py), the replay says what is
missing and sends what was kept.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conformance.deadlines import Deadlines
from conformance.mcp.server import McpServer
from conformance.mcp.transcript import CUT
from conformance.mcp.wire import Wire
from plugin_spec.json_types import JsonObject, JsonValue, loads


class ReplayError(Exception):
    """A transcript that cannot be replayed: its file, where and what is wrong."""


@dataclass(frozen=True)
class Transcript:
    command: tuple[str, ...]
    cwd: Path
    env: tuple[str, ...]
    frames: list[JsonObject]

    @classmethod
    def read(cls, path: Path) -> Transcript:
        try:
            lines = path.read_text("utf-8").splitlines()
        except OSError as exc:
            raise ReplayError(f"{path}: cannot be read: {exc.strerror}") from None
        try:
            header, *rest = ((n, loads(line)) for n, line in enumerate(lines, 1) if line.strip())
        except (ValueError, json.JSONDecodeError) as exc:
            raise ReplayError(f"{path}: not a transcript (JSON lines): {exc}") from None
        first, head = header
        head = head if isinstance(head, dict) else {}
        command = _strings(head.get("command"))
        if not command:
            raise ReplayError(f"{path}: line {first} /command: expected the server's command")
        cwd, env = head.get("cwd", "."), _strings(head.get("env", []))
        if not isinstance(cwd, str):
            raise ReplayError(f"{path}: line {first} /cwd: expected a folder, found {cwd!r}")
        if env is None:
            raise ReplayError(f"{path}: line {first} /env: expected names, found {head['env']!r}")
        frames = []
        for n, frame in rest:
            if not isinstance(frame, dict):
                raise ReplayError(f"{path}: line {n}: expected a JSON object, found {frame!r}")
            frames.append(frame)
        return cls(command, Path(cwd), env, frames)


def _strings(value: JsonValue) -> tuple[str, ...] | None:
    """value's items when it is an array of strings, else None."""
    if not isinstance(value, list):
        return None
    items = tuple(item for item in value if isinstance(item, str))
    return items if len(items) == len(value) else None


def replay(path: Path, deadlines: Deadlines, write: Callable[[str], None] = print) -> int:
    """Replay the transcript at path; 0 when every line was sent, 1 when the server stopped
    reading before that. An expected server line is waited for up to deadlines.replay."""
    transcript = Transcript.read(path)
    env = {name: os.environ[name] for name in transcript.env if name in os.environ}
    scratch = Path(tempfile.mkdtemp(prefix="mcp-replay-"))
    server = McpServer(
        "replay", transcript.command, transcript.cwd, env, (), str(path), scratch=scratch
    )
    try:
        return _replayed(transcript, Wire(server.spec(), deadlines), write)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _replayed(transcript: Transcript, wire: Wire, write: Callable[[str], None]) -> int:
    write(f"started: {' '.join(transcript.command)} (in {transcript.cwd})")
    wire.on_received = lambda frame: write(f"<- {frame.text}")
    expected = 0
    status = 0
    for frame in transcript.frames:
        if frame.get("dir") == "received":
            expected += 1
            continue
        _await_received(wire, expected)
        if frame.get("dir") == CUT:
            write(f"({frame.get('frames')} frames, {frame.get('bytes')} bytes not kept here)")
            continue
        if "size" in frame:
            write(f"(a line of {frame['size']} bytes kept only in part: not sent)")
            continue
        write(f"-> {frame.get('line', '')}")
        if not wire.write_raw(str(frame.get("line", ""))):
            write("the server no longer reads its stdin")
            status = 1
            break
    _await_received(wire, expected)
    write(f"ended: {wire.close().describe()}")
    return status


def _await_received(wire: Wire, expected: int) -> None:
    """Read (and so print) server lines until as many as expected have come, or the wait
    runs out."""
    deadline = time.monotonic() + wire.deadlines.replay
    while wire.received_count < expected and time.monotonic() < deadline and wire.alive():
        wire.quiet(0.05)
