"""What the kit does once per tool on an MCP server (issue 37, speed on real servers): the
minimal input is searched for without hypothesis's explain phase and once per tool, and an
argument set already sent in the calls session is answered from the first answer instead of
being sent again. Counted, never timed (speed is in benchmarks/)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import Phase

from conformance.mcp.server import McpServer, load_mcp_server
from conformance.mcp.services import McpServices
from conformance.mcp.session import Session
from conformance.mcp.tried import TriedCalls
from conformance.mcp.wire import Reply
from conformance.search_settings import PropertySettings
from conformance.strategies import InputSpace
from tests.conftest import DEADLINES, REPO

SERVER = REPO / "tests" / "fixtures" / "mcp" / "server.py"
CONFORMING = REPO / "tests" / "fixtures" / "mcp" / "_conforming" / "mcp.json"

# Optional properties that may be null (as pydantic writes them, excel-mcp-server's
# format_range) and a required pattern, which the schema walk does not build: minimal() asks
# hypothesis.
OPTIONAL = {
    "type": "object",
    "properties": {
        "filepath": {"type": "string"},
        "cell": {"type": "string", "pattern": "^[A-Z][0-9]$"},
        **{
            f"option{i}": {"anyOf": [{"type": "boolean"}, {"type": "null"}], "default": None}
            for i in range(8)
        },
    },
    "required": ["filepath", "cell"],
}


def test_minimal_searches_without_the_explain_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    phases: list[tuple[Phase, ...]] = []
    real_find = hypothesis.find

    def find(strategy: Any, condition: Any, *, settings: Any = None, **kw: Any) -> Any:
        phases.append(tuple(settings.phases))
        return real_find(strategy, condition, settings=settings, **kw)

    monkeypatch.setattr(hypothesis, "find", find)
    assert InputSpace.of(OPTIONAL).minimal() == {"filepath": "", "cell": "A0"}
    (used,) = phases
    assert Phase.explain not in used
    assert Phase.generate in used and Phase.shrink in used


def test_minimal_is_worked_out_once_and_handed_out_as_copies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    searches = Counter[str]()
    real = InputSpace._find_minimal

    def counted(self: InputSpace) -> Any:
        searches[json.dumps(self.schema)] += 1
        return real(self)

    monkeypatch.setattr(InputSpace, "_find_minimal", counted)
    space = InputSpace.of(OPTIONAL)
    first = space.minimal()
    first["filepath"] = "changed by a caller"
    assert space.minimal() == {"filepath": "", "cell": "A0"}
    assert list(searches.values()) == [1]


@pytest.fixture
def services(tmp_path: Path) -> Any:
    argv = ("python", str(SERVER), "--legacy-only")
    server = load_mcp_server(
        McpServer("fixture", argv, REPO, {}, (), "test", scratch=tmp_path), DEADLINES
    )
    made = McpServices(server, PropertySettings(), tmp_path / "transcripts", DEADLINES)
    try:
        yield made
    finally:
        made.close()


def sent_calls(session: Session) -> list[Any]:
    """The tools/call requests the session's server was sent: (name, arguments)."""
    return [
        (f.message["params"]["name"], f.message["params"]["arguments"])
        for f in session.wire.frames
        if f.direction == "sent" and f.message and f.message.get("method") == "tools/call"
    ]


def test_an_argument_set_already_tried_is_not_sent_again(services: McpServices) -> None:
    first = services.call("echo", {"text": "a"})
    again = services.call("echo", {"text": "a"})
    other = services.call("echo", {"text": "b"})
    assert first.succeeded and again.result == first.result and other.succeeded
    assert sent_calls(services.session) == [("echo", {"text": "a"}), ("echo", {"text": "b"})]
    # 1 and 1.0 are different arguments (a server may tell them apart)
    services.call("add", {"a": 1, "b": 2})
    services.call("add", {"a": 1.0, "b": 2})
    assert len(sent_calls(services.session)) == 4


def test_a_server_started_again_is_asked_again(services: McpServices) -> None:
    services.call("echo", {"text": "a"})
    services.session.wire.kill()
    services.call("echo", {"text": "a"})
    assert sent_calls(services.session) == [("echo", {"text": "a"})]  # on the new session


def test_each_tool_is_searched_once_for_every_check(
    services: McpServices, monkeypatch: pytest.MonkeyPatch
) -> None:
    searches = Counter[str]()
    real = InputSpace._find_minimal

    def counted(self: InputSpace) -> Any:
        searches[json.dumps(self.schema, sort_keys=True)] += 1
        return real(self)

    monkeypatch.setattr(InputSpace, "_find_minimal", counted)
    services.progress_seen()
    for tool in services.server.tools:
        services.input_space(tool).minimal()
        services.input_space(tool).minimal()
    assert len(searches) == 2 and set(searches.values()) == {1}
    # progress_seen's calls with those inputs, made again, are not sent again
    before = len(sent_calls(services.session))
    for tool in services.server.tools:
        services.call(tool.name or "", services.input_space(tool).minimal())
    assert len(sent_calls(services.session)) == before


def test_what_came_meanwhile_is_not_kept_and_the_answers_kept_are_bounded() -> None:
    wire: Any = object()
    tried = TriedCalls(limit=300, entry_limit=200)
    progress = {"method": "notifications/progress", "params": {"progress": 1}}
    answer = Reply({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}, (progress,))
    tried.put(wire, "t", {"n": 1}, answer)
    kept = tried.get(wire, "t", {"n": 1})
    assert kept is not None and kept.response == answer.response and kept.meanwhile == ()
    big = Reply({"jsonrpc": "2.0", "id": 2, "result": {"text": "x" * 500}})
    tried.put(wire, "t", {"n": 2}, big)
    assert tried.get(wire, "t", {"n": 2}) is None  # past entry_limit: sent again next time
    tried.put(wire, "t", {"n": 3}, Reply(None, timed_out=True))
    assert tried.get(wire, "t", {"n": 3}) is None  # unanswered: tried again
    assert tried.get(object(), "t", {"n": 1}) is None  # another session
    assert tried.bytes <= 300


def test_a_kit_run_sends_each_argument_set_once_per_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole default run on the conforming fixture server: no tools/call of the calls
    session repeats one already answered, and each tool's minimal input is searched once."""
    sent: list[tuple[int, str]] = []
    searches = Counter[str]()
    real_call = Session.call_tool
    real_find = InputSpace._find_minimal

    def call_tool(self: Session, name: str, arguments: Any, **kw: Any) -> Reply:
        reply = real_call(self, name, arguments, **kw)
        if reply.response is not None:
            sent.append((id(self.wire), json.dumps([name, arguments], sort_keys=True)))
        return reply

    def counted(self: InputSpace) -> Any:
        searches[json.dumps(self.schema, sort_keys=True)] += 1
        return real_find(self)

    monkeypatch.setattr(Session, "call_tool", call_tool)
    monkeypatch.setattr(InputSpace, "_find_minimal", counted)
    report = pytester.path / "kit-report"
    result = pytester.runpytest(
        "--mcp-config", str(CONFORMING), "--conformance-report", str(report), "-p", "no:randomly"
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    assert sent, "no call was made"
    repeated = [call for call, n in Counter(sent).items() if n > 1]
    assert not repeated, repeated
    assert searches and set(searches.values()) == {1}, searches
