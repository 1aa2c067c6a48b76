"""The raw MCP fixture server (tests/fixtures/mcp/server.py) on raw pipes: correct by default
in both eras, and each defect tried here shows. The kit's own MCP checks judge the fixture
folders; these tests only make sure the fixtures misbehave the way their names say."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mcp"
SERVER = FIXTURES / "server.py"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
INITIALIZE = {
    "protocolVersion": LEGACY,
    "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"},
}


class Pipe:
    """One fixture server process, spoken to a JSON line at a time."""

    def __init__(self, *args: str, cwd: Path = FIXTURES) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), *args],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def line(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().decode()

    def read(self) -> dict[str, Any]:
        text = self.line()
        assert text, "the server closed stdout"
        message: dict[str, Any] = json.loads(text)
        return message

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Sends a request and returns its response (notifications before it are skipped)."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        while "method" in (message := self.read()):
            pass
        assert message["id"] == self.next_id
        return message

    def modern(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.request(method, {**(params or {}), "_meta": META})

    def open_legacy(self) -> dict[str, Any]:
        answer = self.request("initialize", INITIALIZE)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def close(self, wait: float = 30) -> int | None:
        """Closes stdin and returns the exit code, or None if it is still up after wait s."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(wait)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def spawn() -> Iterator[Any]:
    started: list[Pipe] = []

    def start(*args: str, cwd: Path = FIXTURES) -> Pipe:
        started.append(Pipe(*args, cwd=cwd))
        return started[-1]

    yield start
    for pipe in started:
        pipe.stop()


def tools(answer: dict[str, Any]) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = answer["result"]["tools"]
    return listed


def test_default_legacy_era(spawn: Any) -> None:
    server = spawn()
    opened = server.open_legacy()["result"]
    assert opened["protocolVersion"] == LEGACY
    assert opened["serverInfo"] == {"name": "fixture-mcp", "version": "1.0.0"}
    assert set(opened["capabilities"]) == {"tools", "logging"}
    assert server.request("ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert server.request("logging/setLevel", {"level": "warning"})["result"] == {}
    assert server.request("logging/setLevel", {"level": "loud"})["error"]["code"] == -32602
    assert server.request("server/discover", {"_meta": META})["error"]["code"] == -32601
    listed = tools(server.request("tools/list"))
    assert [tool["name"] for tool in listed] == ["echo", "add"]
    assert all(tool["description"] and tool["inputSchema"]["type"] == "object" for tool in listed)
    echoed = server.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert echoed["result"] == {
        "content": [{"type": "text", "text": '{"text": "hi"}'}],
        "structuredContent": {"text": "hi"},
        "isError": False,
    }
    added = server.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert added["result"]["content"][0]["text"] == "5"
    for bad in ({"a": 1}, {"a": "1", "b": 2}, {"a": True, "b": 2}, {"a": 1.5, "b": 2}):
        result = server.request("tools/call", {"name": "add", "arguments": bad})["result"]
        assert result["isError"] is True
    assert server.request("tools/call", {"name": "nope"})["error"]["code"] == -32602
    assert server.close() == 0


def test_default_modern_era(spawn: Any) -> None:
    server = spawn()
    discovered = server.modern("server/discover")["result"]
    assert discovered["supportedVersions"] == [MODERN]
    assert discovered["resultType"] == "complete"
    assert discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "fixture-mcp"
    assert set(discovered["capabilities"]) == {"tools"}
    listed = server.modern("tools/list")["result"]
    assert listed["resultType"] == "complete"
    assert [tool["name"] for tool in listed["tools"]] == ["echo", "add"]
    called = server.modern("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    assert called["result"]["structuredContent"] == {"text": "x"}
    assert called["result"]["resultType"] == "complete"
    assert server.request("tools/list")["error"]["code"] == -32602
    wrong = {**META, "io.modelcontextprotocol/protocolVersion": "1999-01-01"}
    refused = server.request("tools/list", {"_meta": wrong})["error"]
    assert refused == {
        "code": -32022,
        "message": "Unsupported protocol version",
        "data": {"supported": [MODERN], "requested": "1999-01-01"},
    }
    assert server.modern("ping")["error"]["code"] == -32601
    assert server.request("initialize", INITIALIZE)["error"]
    assert server.close() == 0


def test_progress_increases_and_cancelled_call_gets_no_response(spawn: Any) -> None:
    server = spawn()
    server.open_legacy()
    params = {"name": "echo", "arguments": {"text": "p"}, "_meta": {"progressToken": "t"}}
    server.send({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": params})
    steps = [json.loads(server.line()) for _ in range(3)]
    assert [step["params"]["progress"] for step in steps[:2]] == [1, 2]
    assert {step["params"]["progressToken"] for step in steps[:2]} == {"t"}
    assert steps[2]["id"] == 10
    call = {"name": "echo", "arguments": {"text": "c"}}
    cancel = {"requestId": 11, "reason": "test"}
    server.send({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": call})
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
    # Racing: a call already answered when the cancellation arrives is answered; either way
    # the next request is served and is the next line (or the one after 11's answer).
    server.send({"jsonrpc": "2.0", "id": 12, "method": "ping"})
    answers = [json.loads(server.line())]
    if answers[0]["id"] == 11:
        answers.append(json.loads(server.line()))
    assert answers[-1] == {"jsonrpc": "2.0", "id": 12, "result": {}}


def test_paginated_listing_and_bad_cursor(spawn: Any) -> None:
    server = spawn("--paginate")
    server.open_legacy()
    first = server.request("tools/list")["result"]
    second = server.request("tools/list", {"cursor": first["nextCursor"]})["result"]
    assert [t["name"] for t in first["tools"] + second["tools"]] == ["echo", "add"]
    assert "nextCursor" not in second
    assert server.request("tools/list", {"cursor": "nonsense"})["error"]["code"] == -32602


def test_eras_can_be_shut(spawn: Any) -> None:
    legacy = spawn("--legacy-only")
    assert legacy.modern("server/discover")["error"]["code"] == -32601
    assert legacy.open_legacy()["result"]["protocolVersion"] == LEGACY
    modern = spawn("--modern-only")
    refused = modern.request("initialize", INITIALIZE)["error"]
    assert refused["code"] == -32022
    assert refused["data"]["supported"] == [MODERN]
    assert modern.modern("server/discover")["result"]["supportedVersions"] == [MODERN]


def test_every_defect_has_a_fixture_folder() -> None:
    configs = {
        folder.name: json.loads((folder / "mcp.json").read_text())["mcpServers"]
        for folder in FIXTURES.iterdir()
        if folder.is_dir() and (folder / "mcp.json").exists()
    }
    named: dict[str, str] = {}
    for folder, servers in configs.items():
        ((_, server),) = servers.items()
        args = server["args"]
        assert args[0] == "../server.py"
        if "--defect" in args:
            named[args[args.index("--defect") + 1]] = folder
    listed = subprocess.run(
        [sys.executable, str(SERVER), "--help"], capture_output=True, text=True, check=True
    ).stdout
    for defect, folder in named.items():
        assert defect in listed
        assert (FIXTURES / folder / "README.md").read_text().startswith(folder[:11].rstrip("-"))
    assert "_conforming" in configs
    defects = runpy.run_path(str(SERVER))["DEFECTS"]
    assert set(named) == set(defects)
    assert all(named[d].startswith(rid) for d, rid in defects.items())


@pytest.mark.parametrize(
    ("defect", "extra"),
    [("banner", ()), ("ignore-eof", ()), ("crash-on-unknown-version", ("--legacy-only",))],
)
def test_lifecycle_defects(spawn: Any, defect: str, extra: tuple[str, ...]) -> None:
    server = spawn("--defect", defect, *extra)
    if defect == "banner":
        assert server.line() == "units server ready\n"
        assert server.close() == 0
    elif defect == "ignore-eof":
        server.open_legacy()
        assert server.close(wait=1) is None
        assert server.process.poll() is None  # still up, its stdin closed
        server.process.terminate()  # SIGTERM still ends it
        assert server.process.wait(30) != 0
    else:
        offer = {**INITIALIZE, "protocolVersion": "1999-01-01"}
        server.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": offer})
        assert server.line() == ""
        assert server.process.wait(30) == 1


def test_default_answers_unknown_version_with_its_own(spawn: Any) -> None:
    server = spawn("--legacy-only")
    offer = {**INITIALIZE, "protocolVersion": "1999-01-01"}
    assert server.request("initialize", offer)["result"]["protocolVersion"] == LEGACY


def test_wire_defects(spawn: Any) -> None:
    strings = spawn("--defect", "ids-as-strings")
    strings.send({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": INITIALIZE})
    assert json.loads(strings.line())["id"] == "7"
    chatty = spawn("--defect", "answers-notifications")
    chatty.open_legacy()
    assert json.loads(chatty.line()) == {"jsonrpc": "2.0", "id": None, "result": {}}
    unchecked = spawn("--defect", "modern-no-meta-check", "--modern-only")
    assert "result" in unchecked.request("tools/list")


def test_tool_defects(spawn: Any, tmp_path: Path) -> None:
    rug = spawn("--defect", "rug-pull")
    rug.open_legacy()
    before = tools(rug.request("tools/list"))[0]["description"]
    rug.request("tools/call", {"name": "echo", "arguments": {"text": "a"}})
    after = tools(rug.request("tools/list"))[0]["description"]
    assert before != after
    assert "id_rsa" in after
    shuffled = spawn("--defect", "shuffled")
    shuffled.open_legacy()
    orders = [[t["name"] for t in tools(shuffled.request("tools/list"))] for _ in range(2)]
    assert orders == [["echo", "add"], ["add", "echo"]]
    loop = spawn("--defect", "cursor-loop", "--paginate")
    loop.open_legacy()
    first = loop.request("tools/list")["result"]
    again = loop.request("tools/list", {"cursor": first["nextCursor"]})["result"]
    assert again == first
    lax = spawn("--defect", "ignore-bad-cursor", "--paginate")
    lax.open_legacy()
    bad = lax.request("tools/list", {"cursor": "nonsense"})["result"]
    assert bad == lax.request("tools/list")["result"]
    writer = spawn("--defect", "readonly-writes", cwd=tmp_path)
    writer.open_legacy()
    writer.request("tools/call", {"name": "echo", "arguments": {"text": "w"}})
    assert (tmp_path / "echo.log").read_text() == "w\n"


def test_call_defects(spawn: Any) -> None:
    rejecting = spawn("--defect", "rejects-with-32602")
    rejecting.open_legacy()
    call = {"name": "add", "arguments": {"a": "x"}}
    assert rejecting.request("tools/call", call)["error"]["code"] == -32602
    accepting = spawn("--defect", "accepts-invalid")
    accepting.open_legacy()
    assert accepting.request("tools/call", call)["result"]["isError"] is False
    mismatch = spawn("--defect", "structured-mismatch")
    mismatch.open_legacy()
    echo = {"name": "echo", "arguments": {"text": "m"}}
    assert mismatch.request("tools/call", echo)["result"]["structuredContent"] == {"txt": "m"}
    decreasing = spawn("--defect", "progress-decreasing")
    decreasing.open_legacy()
    params = {**echo, "_meta": {"progressToken": 5}}
    decreasing.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params})
    assert [json.loads(decreasing.line())["params"]["progress"] for _ in range(2)] == [2, 1]
    crashing = spawn("--defect", "crash-on-empty-text")
    crashing.open_legacy()
    crashing.send(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": ""}},
        }
    )
    assert crashing.line() == ""
    assert crashing.process.wait(30) == 1
