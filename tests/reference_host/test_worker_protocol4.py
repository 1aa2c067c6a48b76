"""The worker SDK speaks FengYu's worker protocol 4 (spec: fengyu-worker.md#the-python-worker-sdk):
the handshake, the locale envelope, cancellation and structured logs."""

from __future__ import annotations

import ast
import gc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import fengyu_worker
from fengyu_worker import Context, Worker

INITIALIZE = "$/fengyu/initialize"


def call(worker: Worker, message: dict[str, Any]) -> dict[str, Any] | None:
    return worker.handle(json.dumps(message).encode())


def initialize(version: Any, rid: Any = "h-1") -> dict[str, Any]:
    params = {
        "protocolVersion": version,
        "hostVersion": "4.0.0",
        "pluginId": "com.example.notes",
        "pluginVersion": "0.1.0",
        "capabilities": ["cancellation", "locale", "structuredLogs"],
    }
    return {"jsonrpc": "2.0", "id": rid, "method": INITIALIZE, "params": params}


@pytest.mark.parametrize("version", [4, 1])
def test_the_handshake_echoes_the_version_the_host_asks_for(version: int) -> None:
    reply = call(Worker(), initialize(version))
    assert reply == {
        "jsonrpc": "2.0",
        "id": "h-1",
        "result": {
            "protocolVersion": version,
            "runtime": "python",
            "sdkVersion": fengyu_worker.__version__,
            "capabilities": ["cancellation", "locale", "structuredLogs"],
        },
    }


@pytest.mark.parametrize("version", [2, 5, "4", 4.5, True, None])
def test_a_version_it_does_not_speak_is_a_protocol_mismatch(version: Any) -> None:
    reply = call(Worker(), initialize(version))
    assert reply is not None
    assert reply["error"]["code"] == -32602
    assert reply["error"]["data"] == {"code": "PROTOCOL_MISMATCH"}
    assert reply["error"]["message"] == f"Unsupported FengYu worker protocol: {version!r}"


def test_a_handshake_without_params_is_a_protocol_mismatch() -> None:
    reply = call(Worker(), {"jsonrpc": "2.0", "id": 1, "method": INITIALIZE})
    assert reply is not None and reply["error"]["data"]["code"] == "PROTOCOL_MISMATCH"


def test_the_sdk_version_is_the_projects() -> None:
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    assert f'\nversion = "{fengyu_worker.__version__}"\n' in pyproject.read_text("utf-8")


@pytest.fixture
def localised() -> Worker:
    worker = Worker()

    @worker.method("where")
    def where(params: dict[str, Any], ctx: Context) -> Any:
        return {"locale": ctx.locale, "params": params}

    return worker


@pytest.mark.parametrize(
    ("envelope", "params", "locale"),
    [
        ({"_fengyu": {"locale": "zh"}}, {}, "zh"),
        ({"_fengyu": {"locale": "zh"}}, {"locale": "de"}, "zh"),
        ({}, {"locale": "de"}, "de"),
        ({}, {}, "en"),
        ({"_fengyu": {"locale": 7}}, {}, "en"),
        ({"_fengyu": "zh"}, {}, "en"),
    ],
)
def test_the_locale_comes_from_the_envelope_then_params_then_english(
    localised: Worker, envelope: dict[str, Any], params: dict[str, Any], locale: str
) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "where", "params": params, **envelope}
    reply = call(localised, message)
    assert reply is not None
    assert reply["result"] == {"locale": locale, "params": params}


def test_set_level_with_an_id_answers_the_level() -> None:
    message = {"jsonrpc": "2.0", "id": 3, "method": "$/fengyu/logging/setLevel"}
    reply = call(Worker(), {**message, "params": {"level": "warn"}})
    assert reply == {"jsonrpc": "2.0", "id": 3, "result": {"level": "WARN"}}


# --- over pipes: handlers run off the reading thread ----------------------------------------

SCRIPT = """\
import logging
import threading
import sys

sys.path.insert(0, {sdk!r})
from fengyu_worker import Worker

worker = Worker()
never = threading.Event()
seen = threading.Event()


@worker.method("stuck")
def stuck(params, ctx):
    never.wait()


@worker.method("polite")
def polite(params, ctx):
    while not ctx.cancelled:
        never.wait(0.01)
    logging.getLogger("polite").warning("saw the cancel of %s", ctx.call_id)
    seen.set()
    ctx.check_cancelled()


@worker.method("seen")
def saw(params, ctx):
    return seen.wait()


@worker.method("quick")
def quick(params, ctx):
    ctx.log.info("quick for %s", params.get("who"))
    logging.getLogger("plugin.debug").debug("only at DEBUG")
    return {{"who": params.get("who")}}


@worker.method("boom")
def boom(params, ctx):
    raise KeyError("secret")


raise SystemExit(worker.run())
"""


class Pipe:
    """The worker as a child process, spoken to line by line."""

    def __init__(self, tmp_path: Path, **env: str) -> None:
        script = tmp_path / "worker.py"
        sdk = str(Path(fengyu_worker.__file__).resolve().parent)
        script.write_text(SCRIPT.format(sdk=sdk), "utf-8")
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-u", str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **env},
        )

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the worker closed stdout"
        message: dict[str, Any] = json.loads(line)
        return message

    def finish(self) -> tuple[list[dict[str, Any]], str, int]:
        """Close stdin; the remaining replies, stderr and the exit code."""
        out, err = self.process.communicate(timeout=30)
        replies = [json.loads(line) for line in out.splitlines()]
        return replies, err.decode(), self.process.returncode


def request(rid: Any, method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}


def cancel(rid: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": rid}}


CANCELLED = {"code": -32000, "message": "call cancelled", "data": {"code": "CANCELLED"}}


def test_a_stuck_call_does_not_block_the_next_and_is_answered_when_cancelled(
    tmp_path: Path,
) -> None:
    """The handler never returns: the answer to the cancel cannot come from it."""
    worker = Pipe(tmp_path)
    worker.send(request("c-1", "stuck"))
    worker.send(request("q-1", "quick", {"who": "a"}))
    assert worker.reply() == {"jsonrpc": "2.0", "id": "q-1", "result": {"who": "a"}}
    worker.send(cancel("c-1"))
    assert worker.reply() == {"jsonrpc": "2.0", "id": "c-1", "error": CANCELLED}
    worker.send(cancel("c-1"))  # already answered: nothing more
    worker.send(cancel("no-such-call"))
    worker.send(request("q-2", "quick"))
    replies, _, code = worker.finish()
    assert replies == [{"jsonrpc": "2.0", "id": "q-2", "result": {"who": None}}]
    assert code == 0


def test_a_handler_that_checks_sees_the_cancel_and_its_answer_is_dropped(tmp_path: Path) -> None:
    worker = Pipe(tmp_path)
    worker.send(request(7, "polite"))
    worker.send(cancel(7))
    assert worker.reply() == {"jsonrpc": "2.0", "id": 7, "error": CANCELLED}
    worker.send(request(8, "seen"))
    replies, stderr, code = worker.finish()
    assert replies == [{"jsonrpc": "2.0", "id": 8, "result": True}] and code == 0
    assert "saw the cancel of 7" in stderr


def test_the_same_id_again_replaces_the_pending_call(tmp_path: Path) -> None:
    worker = Pipe(tmp_path)
    worker.send(request("d-1", "stuck"))
    worker.send(request("d-1", "quick", {"who": "second"}))
    assert worker.reply() == {"jsonrpc": "2.0", "id": "d-1", "result": {"who": "second"}}
    replies, _, _ = worker.finish()
    assert replies == []


def structured(stderr: str) -> list[dict[str, Any]]:
    prefix = "@fengyu-log:"
    return [
        json.loads(line[len(prefix) :]) for line in stderr.splitlines() if line.startswith(prefix)
    ]


def test_logs_are_structured_lines_on_stderr(tmp_path: Path) -> None:
    worker = Pipe(tmp_path, FENGYU_LOG_LEVEL="INFO")
    worker.send(request(1, "quick", {"who": "a"}))
    worker.send(request(2, "boom"))
    replies, stderr, _ = worker.finish()
    assert {r["id"] for r in replies} == {1, 2}
    events = structured(stderr)
    quick = next(e for e in events if e["message"] == "quick for a")
    assert quick["level"] == "INFO" and quick["logger"] == "worker"
    assert quick["thread"] == "call-quick"
    assert not any(e["message"] == "only at DEBUG" for e in events)
    failed = next(e for e in events if e["message"] == "handler boom failed")
    assert failed["level"] == "ERROR"
    assert "KeyError: 'secret'" in failed["throwable"]
    assert "secret" not in json.dumps(replies)


def test_set_level_changes_the_threshold_while_running(tmp_path: Path) -> None:
    worker = Pipe(tmp_path, FENGYU_LOG_LEVEL="ERROR")
    worker.send(request(1, "quick", {"who": "before"}))
    assert worker.reply()["id"] == 1
    worker.send(
        {"jsonrpc": "2.0", "method": "$/fengyu/logging/setLevel", "params": {"level": "DEBUG"}}
    )
    worker.send(request(2, "quick", {"who": "after"}))
    replies, stderr, _ = worker.finish()
    messages = [e["message"] for e in structured(stderr)]
    assert "quick for before" not in messages
    assert "quick for after" in messages and "only at DEBUG" in messages
    assert [r["id"] for r in replies] == [2]


def test_a_warning_is_warn_for_the_host() -> None:
    assert [fengyu_worker.host_level(n) for n in (5, 10, 20, 30, 40, 50)] == [
        "TRACE",
        "DEBUG",
        "INFO",
        "WARN",
        "ERROR",
        "ERROR",
    ]


def test_every_import_of_the_module_is_the_standard_librarys() -> None:
    """Not only those a start runs: an import inside a function would fail in FengYu first
    when that function runs (import-linter cannot take a one-file module as a root package).
    The one exception is an optional codec, imported where ImportError is caught.

    The GC is off while it parses: CPython 3.11's AST conversion is not re-entrant
    (gh-106905), and a finalizer the GC runs midway may parse too (a traceback's carets)."""
    gc.disable()
    try:
        tree = ast.parse(Path(fengyu_worker.__file__).read_text("utf-8"))
    finally:
        gc.enable()
    guarded = {
        id(node)
        for attempt in ast.walk(tree)
        if isinstance(attempt, ast.Try)
        and any(
            isinstance(handler.type, ast.Name) and handler.type.id == "ImportError"
            for handler in attempt.handlers
        )
        for node in attempt.body
    }
    imported: set[str] = set()
    optional: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = {alias.name.split(".")[0] for alias in node.names}
            (optional if id(node) in guarded else imported).update(names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, "one file has no package to import relative to"
            imported.add(node.module.split(".")[0])
    assert imported - set(sys.stdlib_module_names) == set()
    assert optional == {"orjson"}


def test_the_module_needs_the_standard_library_only(tmp_path: Path) -> None:
    """What a plugin vendors runs alone: a copy, in a folder of its own, under -I."""
    copy = tmp_path / "backend"
    copy.mkdir()
    (copy / "fengyu_worker.py").write_bytes(Path(fengyu_worker.__file__).read_bytes())
    worker = copy / "worker.py"
    worker.write_text(
        textwrap.dedent(
            """\
            import sys
            from pathlib import Path
            sys.dont_write_bytecode = True
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            import fengyu_worker
            print(fengyu_worker.__file__, file=sys.stderr)
            raise SystemExit(fengyu_worker.Worker().run())
            """
        ),
        "utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-u", str(worker)],
        input=json.dumps(initialize(4)) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
        env={},
        cwd=tmp_path,
    )
    assert json.loads(done.stdout)["result"]["protocolVersion"] == 4, done.stderr
    assert str(copy / "fengyu_worker.py") in done.stderr
    assert not (copy / "__pycache__").exists()


def test_every_call_read_before_the_end_of_input_is_answered(tmp_path: Path) -> None:
    """Calls still running at EOF answer before the worker exits (one reply was lost when the
    loop stopped waiting as soon as a call was marked answered, before its line was written)."""
    worker = Pipe(tmp_path)
    for n in range(500):
        worker.send(request(n, "quick", {"who": n}))
    replies, _, code = worker.finish()
    assert sorted(r["id"] for r in replies) == list(range(500)) and code == 0
