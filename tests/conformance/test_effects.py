"""Declared effects are observed (spec: fengyu-worker.md): the watch, the recording proxy, the
namespace, and the FY-EFF items on plugins that lie and on one that keeps to its data folder."""

from __future__ import annotations

import http.server
import json
import socket
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.checks import fengyu_effects
from conformance.fengyu import services
from conformance.fengyu.file_watch import Area, changes, snapshot
from conformance.fengyu.net_namespace import isolation
from conformance.fengyu.net_recorder import NetRecorder
from tests.conftest import FIXTURE_PLUGINS, copy_plugin


def test_watch_names_created_modified_and_deleted_files(tmp_path: Path) -> None:
    (tmp_path / "kept.txt").write_text("a")
    (tmp_path / "edited.txt").write_text("a")
    (tmp_path / "gone.txt").write_text("a")
    (tmp_path / "granted").mkdir()
    (tmp_path / "__pycache__").mkdir()
    area = Area(tmp_path, "the plugin folder", tooling=True)
    before = snapshot([area], skip=[tmp_path / "granted"])

    with (tmp_path / "edited.txt").open("a") as file:
        file.write("b")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "made.txt").write_text("c")
    (tmp_path / "granted" / "output.txt").write_text("d")
    (tmp_path / "__pycache__" / "m.pyc").write_bytes(b"e")

    found = {
        (c.kind, c.path.relative_to(tmp_path).as_posix())
        for c in changes(before, snapshot([area], skip=[tmp_path / "granted"]))
    }
    assert found == {
        ("modified", "edited.txt"),
        ("deleted", "gone.txt"),
        ("created", "new"),
        ("created", "new/made.txt"),
    }


def test_watch_sees_a_rewrite_of_the_same_size_and_time(tmp_path: Path) -> None:
    """The change time moves on every write, so restoring the modification time hides
    nothing."""
    target = tmp_path / "input.txt"
    target.write_text("same size")
    stat = target.stat()
    before = snapshot([Area(tmp_path, "handed")])
    target.write_text("SAME SIZE")
    import os

    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert [c.kind for c in changes(before, snapshot([Area(tmp_path, "handed")]))] == ["modified"]


@pytest.fixture
def origin() -> Iterator[int]:
    """A loopback HTTP server answering every GET with 200 "origin"."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"origin"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_recorder_records_and_forwards_plain_requests(origin: int) -> None:
    recorder = NetRecorder()
    try:
        proxy = urllib.request.ProxyHandler({"http": recorder.url})
        with urllib.request.build_opener(proxy).open(
            f"http://127.0.0.1:{origin}/x", timeout=10
        ) as r:
            assert r.read() == b"origin"
        assert [c.target for c in recorder.since(0.0)] == [f"127.0.0.1:{origin}"]
    finally:
        recorder.close()


def test_recorder_records_and_tunnels_connect(origin: int) -> None:
    recorder = NetRecorder()
    try:
        with socket.create_connection(("127.0.0.1", recorder.port), timeout=10) as client:
            client.sendall(f"CONNECT 127.0.0.1:{origin} HTTP/1.1\r\n\r\n".encode())
            assert client.recv(1024).startswith(b"HTTP/1.1 200")
            client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = b""
            while chunk := client.recv(65536):
                answer += chunk
        assert answer.endswith(b"origin")
        assert [c.target for c in recorder.since(0.0)] == [f"127.0.0.1:{origin}"]
    finally:
        recorder.close()


def test_proxy_environment_reaches_python_java_and_curl() -> None:
    recorder = NetRecorder()
    try:
        env = recorder.environment()
    finally:
        recorder.close()
    assert {env[k] for k in ("HTTP_PROXY", "https_proxy", "ALL_PROXY")} == {recorder.url}
    assert f"-Dhttps.proxyPort={recorder.port}" in env["JAVA_TOOL_OPTIONS"]


def test_namespace_has_no_network_or_says_why() -> None:
    prefix, why = isolation()
    if not prefix:
        assert why
        pytest.skip(why)
    import subprocess
    import sys

    code = "import socket; socket.create_connection(('127.0.0.1', 9), timeout=2)"
    done = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, timeout=30)
    assert done.returncode != 0
    assert b"Network is unreachable" in done.stderr or b"unreachable" in done.stderr.lower()


def _statuses(result) -> dict[str, tuple[str, str]]:
    return {r["requirement"]: (r["status"], r["reason"]) for r in result.report["results"]}


def test_read_tool_writing_only_to_tmp_passes(run_kit, tmp_path: Path) -> None:
    plugin = copy_plugin(FIXTURE_PLUGINS / "FY-EFF-001-writes-under-home", tmp_path)
    worker = plugin / "backend" / "worker.py"
    worker.write_text(
        worker.read_text("utf-8").replace('os.environ["HOME"]', 'os.environ["TMPDIR"]'), "utf-8"
    )
    result = run_kit([plugin])
    assert result.reported() == set()
    assert _statuses(result)["FY-EFF-001"][0] == "passed"


def test_without_a_namespace_only_the_proxy_judges(
    run_kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no network namespace can be made, a tool the proxy saw nothing of is skipped
    with the reason, never passed; one the proxy saw still fails."""
    unavailable = ((), "user namespaces are disabled (test)")
    monkeypatch.setattr(services, "isolation", lambda: unavailable)
    monkeypatch.setattr(fengyu_effects, "isolation", lambda: unavailable)

    raw = run_kit([FIXTURE_PLUGINS / "FY-EFF-003-raw-socket"])
    status, reason = _statuses(raw)["FY-EFF-003"]
    assert status != "passed"
    assert "user namespaces are disabled (test)" in reason

    proxied = run_kit([FIXTURE_PLUGINS / "FY-EFF-003-fetches-through-proxy"])
    assert proxied.reported() == {"FY-EFF-003"}
    assert any("127.0.0.1:9" in f["message"] for f in proxied.findings("FY-EFF-003"))


def test_findings_name_the_changed_path_and_the_request(run_kit) -> None:
    result = run_kit([FIXTURE_PLUGINS / "FY-EFF-001-appends-to-its-input"])
    (finding,) = result.findings("FY-EFF-001")
    assert "modified" in finding["message"] and "input.txt" in finding["message"]
    request = json.loads(finding["message"].split("request: ", 1)[1].splitlines()[0])
    assert request["method"] == "count_lines"
    assert "reproduce: " in finding["message"]


def test_an_area_too_big_to_watch_is_said_not_passed(tmp_path: Path, monkeypatch) -> None:
    from conformance.fengyu import file_watch
    from conformance.fengyu.effects import EffectWatch
    from conformance.fengyu.harness import CallOutcome

    monkeypatch.setattr(file_watch, "MAX_ENTRIES", 3)
    for index in range(5):
        (tmp_path / f"f{index}").write_text("x")
    recorder = NetRecorder()
    try:
        watch = EffectWatch(tmp_path, tmp_path / "home", recorder)
        outcome = CallOutcome("result", {}, "", "", {})
        assert watch.observe("t", tmp_path / "scratch", (), lambda: outcome) is outcome
    finally:
        recorder.close()
    assert "more than 3 entries" in watch.unwatched
    assert [o.changes for o in watch.observed("t")] == [()]


def _watch_call(tmp_path: Path, make_changes) -> list:
    from conformance.fengyu.effects import EffectWatch
    from conformance.fengyu.harness import CallOutcome

    (tmp_path / "plugin").mkdir(exist_ok=True)
    (tmp_path / "home").mkdir(exist_ok=True)
    recorder = NetRecorder()
    try:
        watch = EffectWatch(tmp_path / "plugin", tmp_path / "home", recorder)

        def call() -> CallOutcome:
            make_changes()
            return CallOutcome("result", {}, "", "", {})

        watch.observe("t", tmp_path / "scratch", (), call)
        return watch.observed("t")
    finally:
        recorder.close()


def test_a_flood_of_files_during_a_call_is_a_change(tmp_path: Path, monkeypatch) -> None:
    """A call cannot switch the watch off by growing HOME past the limit unseen."""
    from conformance.fengyu import file_watch

    monkeypatch.setattr(file_watch, "MAX_ENTRIES", 3)

    def flood() -> None:
        for index in range(5):
            (tmp_path / "home" / f"f{index}").write_text("x")

    (observation,) = _watch_call(tmp_path, flood)
    assert [c.describe() for c in observation.changes] == [
        f"created {tmp_path / 'home'} (HOME: over 3 entries)"
    ]


def test_folders_left_out_of_the_plugin_folder_are_walked_in_home(tmp_path: Path) -> None:
    def hide() -> None:
        (tmp_path / "home" / "__pycache__").mkdir(exist_ok=True)
        (tmp_path / "home" / "__pycache__" / "x").write_text("x")
        (tmp_path / "plugin" / "__pycache__").mkdir(exist_ok=True)
        (tmp_path / "plugin" / "__pycache__" / "m.pyc").write_text("x")

    (tmp_path / "home" / "__pycache__").mkdir(parents=True)
    (tmp_path / "plugin" / "__pycache__").mkdir(parents=True)
    (observation,) = _watch_call(tmp_path, hide)
    assert [c.path for c in observation.changes] == [tmp_path / "home" / "__pycache__" / "x"]


def test_a_write_after_the_call_answered_is_laid_at_its_door(tmp_path: Path) -> None:
    def later() -> None:
        timer = threading.Timer(0.2, (tmp_path / "plugin" / "late.txt").write_text, ("x",))
        timer.start()

    from conformance.fengyu.effects import EffectWatch
    from conformance.fengyu.harness import CallOutcome

    (tmp_path / "plugin").mkdir()
    (tmp_path / "home").mkdir()
    recorder = NetRecorder()
    try:
        watch = EffectWatch(tmp_path / "plugin", tmp_path / "home", recorder)
        outcome = CallOutcome("result", {}, "", "", {})
        watch.observe("t", tmp_path / "scratch", (), lambda: (later(), outcome)[1])
        deadline = time.monotonic() + 10
        while not (tmp_path / "plugin" / "late.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        (observation,) = watch.observed("t")
    finally:
        recorder.close()
    assert observation.changes == ()
    assert [c.describe() for c in observation.late] == [
        f"created {tmp_path / 'plugin' / 'late.txt'} (the plugin folder)"
    ]


def test_a_late_write_fails_the_read_tool(run_kit, tmp_path: Path) -> None:
    plugin = copy_plugin(FIXTURE_PLUGINS / "FY-EFF-001-writes-under-home", tmp_path)
    worker = plugin / "backend" / "worker.py"
    source = worker.read_text("utf-8")
    source = source.replace(
        "def lookup(params):\n",
        "import threading\n\n\ndef lookup(params):\n    threading.Timer(0.3, _late).start()\n"
        "    return {'success': True, 'summary': 'looked up'}\n\n\ndef _late():\n",
    )
    source = source.replace('params["word"]', '"late"')
    worker.write_text(source.replace('os.environ["HOME"]', 'os.environ["FENGYU_PLUGIN_ROOT"]'))
    result = run_kit([plugin], "-k", "FY-EFF-001 or FY-TOOL")
    assert result.reported() == {"FY-EFF-001"}
    (finding,) = result.findings("FY-EFF-001")
    assert "after a call answered" in finding["message"] and ".fixture-cache" in finding["message"]


def test_trace_lines_give_internet_targets_only() -> None:
    from conformance.fengyu.net_trace import attempts

    trace = "\n".join(
        [
            '7 connect(3, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT',
            '7 connect(3, {sa_family=AF_INET, sin_port=htons(9), sin_addr=inet_addr("127.0.0.1")'
            "}, 16) = -1 ENETUNREACH (Network is unreachable)",
            "7 connect(4, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), "
            'inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = -1 EADDRNOTAVAIL',
            '8 sendto(5, "x", 1, 0, {sa_family=AF_INET, sin_port=htons(53), '
            'sin_addr=inet_addr("10.1.2.3")}, 16) = -1 ENETUNREACH',
            '7 connect(3, {sa_family=AF_INET, sin_port=htons(9), sin_addr=inet_addr("127.0.0.1")'
            "}, 16) = -1 ENETUNREACH (Network is unreachable)",
        ]
    )
    assert attempts(trace) == ["127.0.0.1:9", "[::1]:443", "10.1.2.3:53"]


def test_the_traced_copy_sees_a_quiet_attempt_or_says_why_not() -> None:
    import subprocess
    import sys

    from conformance.fengyu.net_trace import attempts, tracer, tracing

    strace = tracing()
    if not strace:
        pytest.skip("strace cannot trace in a network namespace here")
    prefix, _ = isolation()
    code = (
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 9), timeout=2)\n"
        "except OSError:\n    pass\n"
    )
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "trace"
        argv = [*prefix, *tracer(strace, output), sys.executable, "-c", code]
        done = subprocess.run(argv, capture_output=True, timeout=30)
        assert done.returncode == 0
        assert attempts(output.read_text()) == ["127.0.0.1:9"]
