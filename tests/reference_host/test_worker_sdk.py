"""The Python worker SDK, correct per JSON-RPC 2.0 (spec: fengyu-worker.md)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fengyu_worker import RpcError, Worker
from plugin_spec.framing import read_frames

SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


@pytest.fixture
def worker() -> Worker:
    worker = Worker({"double": SCHEMA})

    @worker.method("double")
    def double(params, ctx):
        return {"x": params["x"] * 2}

    @worker.method("fail")
    def fail(params, ctx):
        raise RpcError(4001, "no such row", {"row": 3})

    @worker.method("boom")
    def boom(params, ctx):
        raise ValueError("bad value")

    @worker.method("echo")
    def echo(params, ctx):
        return params

    @worker.method("unserialisable")
    def unserialisable(params, ctx):
        return {"x": object()}

    @worker.method("not_a_number")
    def not_a_number(params, ctx):
        return {"x": float("nan")}

    return worker


def call(worker: Worker, message: object) -> dict | None:
    raw = message if isinstance(message, bytes) else json.dumps(message).encode()
    return worker.handle(raw)


def req(method: str, params: object = None, rid: object = "1") -> dict:
    message = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return message


def test_result(worker: Worker) -> None:
    assert call(worker, req("double", {"x": 2})) == {
        "jsonrpc": "2.0",
        "id": "1",
        "result": {"x": 4},
    }


@pytest.mark.parametrize("rid", ["a-1", 7, 0, None, 1.5])
def test_ids_are_echoed(worker: Worker, rid: object) -> None:
    reply = call(worker, req("double", {"x": 1}, rid))
    assert reply is not None and reply["id"] == rid and type(reply["id"]) is type(rid)


@pytest.mark.parametrize(
    ("message", "code", "rid"),
    [
        (b"{nope", -32700, None),
        (b"\xff\xfe", -32700, None),
        ([1, 2], -32600, None),
        ({"jsonrpc": "2.0", "id": "9"}, -32600, "9"),
        ({"jsonrpc": "1.0", "id": "9", "method": "double"}, -32600, "9"),
        ({"jsonrpc": "2.0", "id": True, "method": "double"}, -32600, None),
        ({"jsonrpc": "2.0", "id": "9", "method": "double", "params": 3}, -32600, "9"),
        (req("nope"), -32601, "1"),
        (req("rpc.discover"), -32601, "1"),
        (req("double", {"x": "a"}), -32602, "1"),
        (req("double", [1]), -32602, "1"),
        (req("double"), -32602, "1"),
        (req("fail"), 4001, "1"),
        (req("boom"), -32603, "1"),
        (req("unserialisable"), -32603, "1"),
        (req("not_a_number"), -32603, "1"),
    ],
)
def test_errors(worker: Worker, message: object, code: int, rid: object) -> None:
    reply = call(worker, message)
    assert reply is not None
    assert (reply["error"]["code"], reply["id"]) == (code, rid)


def test_structured_error_data(worker: Worker) -> None:
    reply = call(worker, req("fail"))
    assert reply is not None and reply["error"]["data"] == {"row": 3}
    invalid = call(worker, req("double", {"x": "a"}))
    assert invalid is not None and invalid["error"]["data"][0]["pointer"] == "/x"


def test_an_uncaught_exception_is_an_internal_error_naming_its_type(worker: Worker) -> None:
    """FengYu's Python SDK: -32603, data.code INTERNAL_ERROR, and no exception text (which
    may hold a path or a secret) on the wire."""
    reply = call(worker, req("boom"))
    assert reply is not None
    assert reply["error"] == {
        "code": -32603,
        "message": "handler failed: ValueError",
        "data": {"code": "INTERNAL_ERROR"},
    }


def test_an_unknown_method_names_its_data_code(worker: Worker) -> None:
    reply = call(worker, req("nope"))
    assert reply is not None
    assert (reply["error"]["code"], reply["error"]["data"]) == (
        -32601,
        {"code": "METHOD_NOT_FOUND"},
    )


def test_a_string_code_is_fengyus_data_code() -> None:
    worker = Worker()

    @worker.method("find")
    def find(params, ctx):
        raise RpcError("NOT_FOUND", "no such row", {"row": 3})

    reply = call(worker, req("find"))
    assert reply is not None
    assert reply["error"] == {
        "code": -32000,
        "message": "no such row",
        "data": {"row": 3, "code": "NOT_FOUND"},
    }


@pytest.mark.parametrize("method", ["double", "nope", "boom", "$/fengyu/logging/setLevel"])
def test_notifications_get_no_reply(worker: Worker, method: str) -> None:
    assert call(worker, {"jsonrpc": "2.0", "method": method, "params": {"level": "DEBUG"}}) is None


@pytest.mark.parametrize(
    "name", ["$/fengyu/logging/setLevel", "$/fengyu/initialize", "$/cancelRequest", "rpc.x", ""]
)
def test_reserved_names_cannot_be_registered(name: str) -> None:
    with pytest.raises(ValueError, match="reserved"):
        Worker().method(name)


def test_a_method_has_one_handler(worker: Worker) -> None:
    with pytest.raises(ValueError, match="already has a handler"):
        worker.method("double")


def test_frames_tolerate_crlf_and_skip_oversize() -> None:
    stream = io.BytesIO(b'{"a":1}\r\n' + b"x" * 50 + b"\n" + b"last")
    frames = list(read_frames(stream, limit=20))
    assert [(f.data, f.oversize) for f in frames] == [
        (b'{"a":1}', False),
        (b"", True),
        (b"last", False),
    ]


def test_run_loop_over_stdio(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(
        "from fengyu_worker import Worker\n"
        "w = Worker()\n"
        "@w.method('echo')\n"
        "def echo(params, ctx):\n"
        "    print('to stderr, not stdout')\n"
        "    return params\n"
        "raise SystemExit(w.run())\n"
    )
    frames = [
        json.dumps(req("echo", {"a": 1})),
        "not json",
        json.dumps({"jsonrpc": "2.0", "method": "echo", "params": {}}),
    ]
    done = subprocess.run(
        [sys.executable, str(script)],
        input="\n".join(frames) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    replies = {
        reply["id"]: reply for reply in map(json.loads, done.stdout.splitlines())
    }  # handlers run off the reading thread: answers may come in any order
    assert replies["1"]["result"] == {"a": 1}
    assert replies[None]["error"]["code"] == -32700
    assert len(replies) == 2
    assert "to stderr, not stdout" in done.stderr
    assert done.returncode == 0


def test_deep_nesting_is_a_parse_error_not_a_crash(worker: Worker) -> None:
    reply = call(worker, b"[" * 100_000)
    assert reply is not None and reply["error"]["code"] == -32700


def test_lone_surrogates_are_escaped_on_the_wire(worker: Worker) -> None:
    out = io.BytesIO()
    worker.run(
        stdin=io.BytesIO(b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"s":"\\ud800"}}\n'),
        stdout=out,
    )
    assert json.loads(out.getvalue()) == {"jsonrpc": "2.0", "id": 1, "result": {"s": "\ud800"}}


def test_from_manifest_reads_the_methods_schemas(tmp_path: Path) -> None:
    (tmp_path / "backend").mkdir()
    manifest = {"rpc": {"methods": {"double": {"inputSchema": SCHEMA}, "odd": "not an object"}}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    worker = Worker.from_manifest(tmp_path / "backend" / "worker.py")

    @worker.method("double")
    def double(params, ctx):
        return params

    reply = call(worker, req("double", {"x": "a"}))
    assert reply is not None and reply["error"]["code"] == -32602


def test_from_manifest_names_methods_that_are_not_an_object(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"rpc": {"methods": ["double"]}}))
    with pytest.raises(ValueError, match=r"manifest.json: /rpc/methods is not an object"):
        Worker.from_manifest(tmp_path / "worker.py")


def test_a_version_1_manifest_leaves_params_unchecked(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"schemaVersion": 1, "aiTools": []}))
    worker = Worker.from_manifest(tmp_path / "worker.py")

    @worker.method("echo")
    def echo(params, ctx):
        return params

    reply = call(worker, req("echo", {"x": "a"}))
    assert reply is not None and reply["result"] == {"x": "a"}
