"""What the kit keeps of an MCP session is bounded (conformance/mcp/transcript.py, wire.py):
a server flooding stdout leaves a transcript within TRANSCRIPT_BYTES whose summary counts
what was not kept, one huge line keeps its head and its size, a line past the 16 MiB frame
limit is refused at the reader, and stdout the kit has not taken yet waits in the pipe."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from conformance.fengyu.raw_worker import READ_AHEAD
from conformance.mcp.replay import replay
from conformance.mcp.server import McpServer
from conformance.mcp.services import McpServices
from conformance.mcp.session import Session, open_session
from conformance.mcp.transcript import CUT, Transcript
from conformance.mcp.wire import Wire
from conformance.search_settings import PropertySettings
from plugin_spec.framing import MAX_FRAME_BYTES
from reference_host.process.launch import WorkerSpec
from tests.conftest import DEADLINES, REPO

SERVER = REPO / "tests" / "fixtures" / "mcp" / "server.py"
FLOOD = 50 * 2**20  # bytes of log notifications before each tools/call answer


def test_a_transcript_keeps_its_first_and_last_frames_and_counts_the_rest() -> None:
    transcript = Transcript(limit=1000, frame_limit=400)
    for i in range(100):
        transcript.add("received", float(i), f"{i:02d}" + "x" * 48, 50)
    kept = transcript.frames()
    assert transcript.bytes <= 1000
    assert kept[0].text.startswith("00") and kept[-1].text.startswith("99")
    assert transcript.dropped.frames == 100 - len(kept)
    assert transcript.dropped.bytes == 50 * transcript.dropped.frames
    entries = transcript.entries()
    (summary,) = [e for e in entries if e["dir"] == CUT]
    assert summary == {"dir": CUT, "frames": transcript.dropped.frames, "bytes": 50 * 80}
    assert entries.index(summary) == 10  # after the first half, before the last
    assert "80 frames, 4000 bytes not kept" in transcript.describe_cut()


def test_one_huge_line_keeps_its_head_and_its_size() -> None:
    transcript = Transcript(limit=1000, frame_limit=100)
    frame = transcript.add("received", 0.0, '{"a": "' + "y" * 5000 + '"}', 5009)
    assert frame.cut and len(frame.text) == 100 and frame.message is None
    assert frame.to_json()["size"] == 5009
    assert transcript.bytes == 100
    assert "1 line(s) kept only in part" in transcript.describe_cut()
    small = transcript.add("sent", 0.1, '{"b": 1}', 8)
    assert not small.cut and small.message == {"b": 1}


def flooding_server(tmp_path: Path) -> McpServer:
    argv = ("python", str(SERVER), "--legacy-only", "--flood", str(FLOOD))
    return McpServer("flood", argv, REPO, {}, (), "test", scratch=tmp_path)


def test_a_flooding_server_leaves_a_bounded_transcript_that_says_so(tmp_path: Path) -> None:
    server = flooding_server(tmp_path)
    services = McpServices(server, PropertySettings(), tmp_path / "transcripts", DEADLINES)
    wire = services.launch()
    try:
        session = Session(wire, open_session(wire, "legacy"))
        reply = session.call_tool("echo", {"text": "after the flood"})
        assert reply.succeeded, reply.describe()
        assert reply.result["structuredContent"] == {"text": "after the flood"}
        assert not reply.meanwhile  # log notifications are not what a caller reads
        transcript = wire.transcript
        assert transcript.bytes <= 8 * 2**20
        assert wire.received_count > FLOOD // (64 * 1024)
        # the opening and the call's answer are kept; the flood between them is counted
        assert wire.frames[0].message is not None
        assert wire.frames[0].message["method"] == "initialize"
        assert wire.frames[-1].message is not None
        assert wire.frames[-1].message["id"] == reply.response["id"]  # type: ignore[index]
        dropped = transcript.dropped
        assert dropped.frames == wire.received_count - len(wire.received())
        assert dropped.bytes > FLOOD - 8 * 2**20
        note = services.transcript_note(wire, "flood")
    finally:
        services.close()
    assert f"{dropped.frames} frames, {dropped.bytes} bytes not kept" in note
    saved = Path(note.splitlines()[0].removeprefix("transcript: "))
    entries = [json.loads(line) for line in saved.read_text("utf-8").splitlines()[1:]]
    assert [e for e in entries if e["dir"] == CUT] == [
        {"dir": CUT, "frames": dropped.frames, "bytes": dropped.bytes}
    ]


def test_a_cut_transcript_replays_what_was_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "cut.jsonl"
    header = {"command": [sys.executable, str(SERVER), "--legacy-only"], "cwd": str(REPO)}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
    }
    lines = [
        header,
        {"dir": "sent", "at": 0, "line": json.dumps(initialize)},
        {"dir": "received", "at": 0.1, "line": "{}"},
        {"dir": CUT, "frames": 7, "bytes": 9000},
        {"dir": "sent", "at": 1, "line": "x" * 10, "size": 2_000_000},
    ]
    saved.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    assert replay(saved, DEADLINES) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[2].startswith('<- {"jsonrpc": "2.0", "id": 1, "result"')
    assert "(7 frames, 9000 bytes not kept here)" in shown
    assert "(a line of 2000000 bytes kept only in part: not sent)" in shown


def test_a_line_past_the_frame_limit_is_refused_at_the_reader(tmp_path: Path) -> None:
    """17 MiB without a newline: the reader stops at 16 MiB, the request ends at once."""
    endless = "import sys; sys.stdout.write('x' * (17 << 20)); sys.stdout.flush(); input()"
    spec = WorkerSpec("mcp.endless", tmp_path, (sys.executable, "-c", endless), tmp_path)
    wire = Wire(spec, DEADLINES)
    try:
        reply = wire.request("tools/list", {}, seconds=60)
        assert not reply.timed_out
        assert f"a line longer than {MAX_FRAME_BYTES} bytes" in reply.refused
        assert "the kit stopped it" in reply.describe()
        (frame,) = wire.received()
        assert frame.cut and frame.size == MAX_FRAME_BYTES + 1 and len(frame.text) < 1000
    finally:
        wire.kill()


def test_stdout_not_taken_yet_waits_in_the_pipe(tmp_path: Path) -> None:
    """A server writing while the kit reads nothing holds at most READ_AHEAD (and one line)
    of the kit's memory: the reader waits, and so does the server, on its pipe."""
    line = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": "z" * 65536})
    writer = f"import sys\nwhile True: sys.stdout.write({line!r} + '\\n')"
    spec = WorkerSpec("mcp.writer", tmp_path, (sys.executable, "-c", writer), tmp_path)
    wire = Wire(spec, DEADLINES)
    try:
        ahead = wire.worker.read_ahead
        for _ in range(600):  # until the reader has read ahead all it may
            if ahead.held + len(line) + 1 > READ_AHEAD:
                break
            time.sleep(0.05)
        assert READ_AHEAD - len(line) - 1 < ahead.held <= READ_AHEAD
        time.sleep(0.5)
        assert ahead.held <= READ_AHEAD  # still: the reader waits for the kit
        messages = wire.quiet(0.5)
        assert messages and wire.received_count > READ_AHEAD // len(line)
    finally:
        wire.kill()
