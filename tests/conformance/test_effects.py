"""Declared effects are observed (spec: fengyu-worker.md): the file watch, the system-call
trace of the sandboxed worker, and the FY-EFF items on plugins that lie and on one that keeps
to its data folder."""

from __future__ import annotations

import json
import mmap
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.fengyu import file_watch, syscall_trace
from conformance.fengyu.effects import EffectWatch
from conformance.fengyu.file_watch import Area, changes, snapshot
from conformance.fengyu.harness import CallOutcome
from conformance.fengyu.syscall_trace import read_trace, strace_program, tracer
from reference_host.process import launch
from reference_host.process.identity import give
from reference_host.process.sandbox import SandboxPolicy, Support, command, support
from reference_host.process.seccomp import program_fd
from tests.conftest import FIXTURE_PLUGINS, REPO, copy_plugin


def test_watch_names_created_modified_and_deleted_files(tmp_path: Path) -> None:
    (tmp_path / "kept.txt").write_text("a")
    (tmp_path / "edited.txt").write_text("a")
    (tmp_path / "gone.txt").write_text("a")
    (tmp_path / "granted").mkdir()
    area = Area(tmp_path, "the tool's handed files")
    before = snapshot([area], skip=[tmp_path / "granted"])

    with (tmp_path / "edited.txt").open("a") as file:
        file.write("b")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "made.txt").write_text("c")
    (tmp_path / "granted" / "output.txt").write_text("d")

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
    """Restoring the modification time hides nothing: the bytes are compared."""
    target = tmp_path / "input.txt"
    target.write_text("same size")
    stat = target.stat()
    before = snapshot([Area(tmp_path, "handed")])
    target.write_text("SAME SIZE")
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert [c.kind for c in changes(before, snapshot([Area(tmp_path, "handed")]))] == ["modified"]


def test_watch_sees_a_write_that_moves_no_time(tmp_path: Path) -> None:
    """A write through a shared mapping whose page is already dirty moves neither time: the
    record of type, size, times and inode alone said unchanged."""
    target = tmp_path / "input.txt"
    target.write_bytes(b"conformance kit input\n")
    with target.open("r+b") as file, mmap.mmap(file.fileno(), 0) as mapped:
        mapped[0:1] = b"c"  # the first write to the page moves the times, before the snapshot
        before = snapshot([Area(tmp_path, "handed")])
        mapped[0:11] = b"CONFORMANCE"
        found = changes(before, snapshot([Area(tmp_path, "handed")]))
    assert [c.describe() for c in found] == [f"modified {target} (handed): its bytes changed"]


def test_a_change_between_calls_is_laid_at_the_door_of_the_call_before(tmp_path: Path) -> None:
    """What changes in the handed files after a call's snapshot (a thread it left behind)
    counts, until the next call or until the worker is gone; folders the kit adds next to
    the handed files between calls (a fresh output folder) do not."""
    scratch = tmp_path / "scratch"
    (scratch / "inputs").mkdir(parents=True)
    handed = scratch / "inputs" / "input.txt"
    handed.write_text("conformance kit input")
    watch = _watch(tmp_path, gone=time.time() + 100)
    answered = CallOutcome("result", {}, "", "", {})
    watch.observe("t", scratch, (), lambda: answered)
    handed.write_text("CONFORMANCE KIT INPUT")  # after the first call answered
    (scratch / "out-1").mkdir()  # the kit's, for the second call
    watch.observe("t", scratch, (), lambda: answered)
    (scratch / "inputs" / "late.txt").write_text("x")  # after the second, before settling
    first, second = watch.observed("t")
    assert [c.describe() for c in first.late_changes] == [
        f"modified {handed} (the tool's handed files): its bytes changed"
    ]
    assert [c.describe() for c in second.late_changes] == [
        f"created {scratch / 'inputs' / 'late.txt'} (the tool's handed files)"
    ]
    assert first.changes == second.changes == ()


def _statuses(result) -> dict[str, tuple[str, str]]:
    return {r["requirement"]: (r["status"], r["reason"]) for r in result.report["results"]}


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in sorted(folder.rglob("*"))
    }


def test_read_tool_writing_only_to_tmp_passes(run_kit, tmp_path: Path) -> None:
    plugin = copy_plugin(FIXTURE_PLUGINS / "FY-EFF-001-writes-under-home", tmp_path)
    worker = plugin / "backend" / "worker.py"
    worker.write_text(
        worker.read_text("utf-8").replace('os.environ["HOME"]', 'os.environ["TMPDIR"]'), "utf-8"
    )
    result = run_kit([plugin])
    assert result.reported() == set()
    assert _statuses(result)["FY-EFF-001"][0] == "passed"


def test_a_kit_run_touches_no_file_of_the_authors_folder(run_kit, tmp_path: Path) -> None:
    """The kit runs a copy, in the sandbox: a tool writing into its own package (its UI,
    byte code, a build folder) changes nothing of the author's, and is reported."""
    plugin = copy_plugin(FIXTURE_PLUGINS / "FY-EFF-001-writes-under-home", tmp_path)
    (plugin / "ui").mkdir()
    (plugin / "ui" / "index.html").write_text("<p>mine</p>")
    worker = plugin / "backend" / "worker.py"
    worker.write_text(
        worker.read_text("utf-8").replace(
            'Path(os.environ["HOME"]) / ".fixture-cache"',
            'Path(os.environ["FENGYU_PLUGIN_ROOT"]) / "build"',
        ),
        "utf-8",
    )
    before = _listing(plugin)
    result = run_kit([plugin])
    assert _listing(plugin) == before
    assert (plugin / "ui" / "index.html").read_text() == "<p>mine</p>"
    (finding,) = result.findings("FY-EFF-001")
    assert f"tried to write {plugin / 'build'}" in finding["message"]
    assert "FengYu refuses these writes" in finding["message"]


def test_without_a_sandbox_effects_are_skipped_with_the_reason(
    run_kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no sandbox can be made, nothing a worker does can be seen completely: the
    effect items say why and are never passed."""
    missing = Support("", "bubblewrap is not installed (test)")
    monkeypatch.setattr(syscall_trace, "support", lambda: missing)
    monkeypatch.setattr(launch, "support", lambda: missing)
    result = run_kit([FIXTURE_PLUGINS / "FY-EFF-003-raw-socket"])
    for rid in ("FY-EFF-001", "FY-EFF-002", "FY-EFF-003"):
        assert _statuses(result)[rid][0] != "passed", rid
    assert "bubblewrap is not installed (test)" in _statuses(result)["FY-EFF-003"][1]


def test_findings_name_the_changed_path_and_the_request(run_kit) -> None:
    result = run_kit([FIXTURE_PLUGINS / "FY-EFF-001-appends-to-its-input"])
    (finding,) = result.findings("FY-EFF-001")
    assert "modified" in finding["message"] and "input.txt" in finding["message"]
    request = json.loads(finding["message"].split("request: ", 1)[1].splitlines()[0])
    assert request["method"] == "count_lines"
    assert "reproduce: " in finding["message"]


def _watch(tmp_path: Path, trace: str = "", gone: float | None = None) -> EffectWatch:
    (tmp_path / "trace").write_text(trace)
    return EffectWatch(tmp_path / "trace", tmp_path, "", lambda: gone)


def test_a_flood_of_handed_files_during_a_call_is_a_change(tmp_path: Path, monkeypatch) -> None:
    """A call cannot switch the watch off by growing its handed files past the limit."""
    monkeypatch.setattr(file_watch, "MAX_ENTRIES", 3)
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    def flood() -> CallOutcome:
        for index in range(5):
            (scratch / f"f{index}").write_text("x")
        return CallOutcome("result", {}, "", "", {})

    watch = _watch(tmp_path)
    watch.observe("t", scratch, (), flood)
    (observation,) = watch.observed("t")
    assert [c.describe() for c in observation.changes] == [
        f"created {scratch} (the tool's handed files: over 3 entries)"
    ]


def _line(stamp: float, text: str, pid: int = 7) -> str:
    return f"{pid:<5} {stamp:.6f} {text}"  # strace pads the pid


def test_each_traced_attempt_is_laid_at_the_door_of_its_call(tmp_path: Path) -> None:
    """During a call, after it answered by a thread it started (late), before any call (the
    runtime starting: no tool's), and once the worker is gone (not this worker's). A thread
    call a started acting during a call of b, or the main thread acting after b answered, is
    laid at no one's door: unattributed, with the tools that may have made it (FY-EFF-004)."""
    now = time.time()
    watch = _watch(tmp_path, gone=now + 100)
    outcome = CallOutcome("result", {}, "", "", {})
    for tool in ("a", "b"):
        watch.observe(tool, tmp_path / "scratch", (), lambda: (time.sleep(0.05), outcome)[1])
        time.sleep(0.05)
    (a,), (b,) = watch.log["a"], watch.log["b"]
    write = 'openat(AT_FDCWD, "{}", O_WRONLY|O_CREAT, 0666) = -1 EROFS (Read-only file system)'
    thread = "clone3({flags=CLONE_VM|CLONE_THREAD} => {parent_tid=[3 /* 8 in strace's PID NS */]}"
    lines = [
        _line(a.start - 1, write.format("/start")),
        _line(a.start + 0.01, f"{thread}, 88) = 3 /* 8 in strace's PID NS */"),
        _line(a.start + 0.02, write.format("/during-a")),
        _line((a.end + b.start) / 2, write.format("/after-a"), pid=8),
        _line((b.start + b.end) / 2, write.format("/during-b"), pid=8),
        _line(b.end + 50, write.format("/after-b")),
        _line(now + 200, write.format("/gone")),
    ]
    (tmp_path / "trace").write_text("\n".join(lines))
    (a,), (b,) = watch.observed("a"), watch.observed("b")
    assert [x.target for x in a.attempts] == ["/during-a"]
    assert [x.target for x in a.late] == ["/after-a"]
    assert b.attempts == b.late == ()
    assert [(u.attempt.target, u.suspects) for u in watch.unattributed] == [
        ("/during-b", ("a", "b")),
        ("/after-b", ("b",)),
    ]


def test_sends_on_sockets_count_but_not_on_a_socketpair(tmp_path: Path) -> None:
    """A socket connected at the start sends later with a plain write; a unix socket is
    reached; a runtime's own socketpair and a netlink query are not effects."""
    lines = [
        "socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0, [3<socket:[11]>, 4<socket:[12]>]) = 0",
        'sendto(3<socket:[11]>, "x", 1, 0, NULL, 0) = 1',
        'write(4<socket:[12]>, "x", 1) = 1',
        "socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, NETLINK_ROUTE) = 5<socket:[13]>",
        "sendto(5<socket:[13]>, [{nlmsg_len=20, nlmsg_type=RTM_GETADDR}], 20, 0, "
        "{sa_family=AF_NETLINK, nl_pid=0, nl_groups=00000000}, 12) = 20",
        "socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC, IPPROTO_IP) = 6<socket:[14]>",
        "connect(6<socket:[14]>, {sa_family=AF_INET, sin_port=htons(9), "
        'sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
        'write(6<socket:[14]>, "data", 4) = 4',
        'sendto(6<socket:[14]>, "data", 4, 0, NULL, 0) = -1 ECONNREFUSED (Connection refused)',
        "socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0) = 7<socket:[15]>",
        'connect(7<socket:[15]>, {sa_family=AF_UNIX, sun_path="/run/agent.sock"}, 17) = 0',
        'write(7<socket:[15]>, "hello", 5) = 5',
        'write(1<pipe:[16]>, "{}\\n", 3) = 3',
        'write(9<socket:[99]>, "inherited", 9) = 9',
    ]
    (tmp_path / "trace").write_text("\n".join(_line(1.0 + i, t) for i, t in enumerate(lines)))
    found = [a.describe() for a in read_trace(tmp_path / "trace", Path("/pkg"))]
    assert found == [
        "connected to 127.0.0.1:9",
        "sent to 127.0.0.1:9",
        "tried to send to 127.0.0.1:9",
        "connected to the unix socket /run/agent.sock",
        "sent to the unix socket /run/agent.sock",
    ]


def test_only_a_thread_a_call_left_asleep_holds_the_worker(tmp_path: Path) -> None:
    """A thread a call started that sleeps (to write later) or a daemonised child keeps the
    trace unfinished; a pool thread waiting for work, the main thread asleep, or the
    sandbox's init (bwrap's first process of the worker's PID namespace, a session of its
    own, started after the first call was sent) does not."""
    from conformance.fengyu.attribution import Window, still_acting
    from conformance.fengyu.syscall_trace import read_full

    windows = [Window(("a", 0), "a", 10.0, 11.0)]
    born = "clone(child_stack=NULL, flags=CLONE_VM) = {} /* {} in strace's PID NS */"
    sleep = "clock_nanosleep(CLOCK_MONOTONIC, 0, {{tv_sec=2, tv_nsec=0}},  <unfinished ...>"
    cases = {
        "pool": [_line(10.5, born.format(2, 8)), _line(10.6, "futex(0x1, FUTEX_WAIT) = 0")],
        "main asleep": [_line(12.0, sleep.format(), pid=7)],
        "asleep": [_line(10.5, born.format(2, 8)), _line(10.6, sleep.format(), pid=8)],
        "woke": [
            _line(10.5, born.format(2, 8)),
            _line(10.6, sleep.format(), pid=8),
            _line(12.6, "<... clock_nanosleep resumed>NULL) = 0", pid=8),
        ],
        "daemon": [_line(10.5, born.format(2, 8)), _line(10.6, "setsid() = 2", pid=8)],
        "daemon gone": [
            _line(10.5, born.format(2, 8)),
            _line(10.6, "setsid() = 2", pid=8),
            _line(11.6, "+++ exited with 0 +++", pid=8),
        ],
        "sandbox init": [
            _line(10.5, "clone(child_stack=NULL, flags=CLONE_NEWNS|CLONE_NEWPID|SIGCHLD) = 8"),
            _line(10.6, "setsid() = 1", pid=8),
        ],
    }
    acting = {}
    for name, lines in cases.items():
        (tmp_path / "trace").write_text("\n".join(lines))
        acting[name] = still_acting(read_full(tmp_path / "trace", Path("/pkg")), windows)
    assert acting == {
        "pool": False,
        "main asleep": False,
        "asleep": True,
        "woke": False,
        "daemon": True,
        "daemon gone": False,
        "sandbox init": False,
    }


def test_the_trace_gives_refused_writes_and_internet_attempts(tmp_path: Path) -> None:
    lines = [
        'openat(AT_FDCWD, "/etc/hosts", O_RDONLY|O_CLOEXEC) = 3',
        'openat(AT_FDCWD, "build/x", O_WRONLY|O_CREAT|O_TRUNC, 0666 <unfinished ...>',
        "<... openat resumed>) = -1 EROFS (Read-only file system)",
        'mkdir("/usr/lib/x/__pycache__", 0777) = -1 EROFS (Read-only file system)',
        'openat(AT_FDCWD, "/tmp/hsperfdata_root/7", O_RDWR|O_CREAT, 0600) = -1 EROFS (R)',
        'rename("/work/a", "/work/b") = -1 EROFS (Read-only file system)',
        'openat(AT_FDCWD, "/data/ok", O_WRONLY|O_CREAT, 0666) = 4',
        'openat(AT_FDCWD</pkg/ui>, "index.html", O_RDWR) = -1 EROFS (Read-only file system)',
        "fchmod(5</pkg/backend/worker.py>, 0755) = -1 EROFS (Read-only file system)",
        'rename("/data/x", "/etc/x") = -1 EXDEV (Invalid cross-device link)',
        'symlink("/etc/passwd", "/data/cache.pyc") = 0',
        'openat(AT_FDCWD, "/data/cache.pyc", O_WRONLY|O_TRUNC) = -1 EROFS (Read-only file system)',
        "sendmmsg(6, [{msg_hdr={msg_name={sa_family=AF_INET, sin_port=htons(53), "
        'sin_addr=inet_addr("10.1.2.4")}, msg_namelen=16}}], 1, 0) = 1',
        'connect(3, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT',
        'connect(3, {sa_family=AF_INET, sin_port=htons(9), sin_addr=inet_addr("127.0.0.1")}'
        ", 16) = -1 ENETUNREACH (Network is unreachable)",
        "connect(4, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), "
        'inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = -1 EINPROGRESS (x)',
        'sendto(5, "x", 1, 0, {sa_family=AF_INET, sin_port=htons(53), '
        'sin_addr=inet_addr("10.1.2.3")}, 16) = 1',
    ]
    (tmp_path / "trace").write_text("\n".join(_line(1.0 + i, t) for i, t in enumerate(lines)))
    trace = read_trace(tmp_path / "trace", Path("/pkg"), (Path("/data"),))
    found = [(a.describe(), a.refused) for a in trace]
    assert found == [
        ("tried to write /pkg/build/x", True),
        ("tried to write /work/b", True),
        ("wrote /data/ok", False),  # the data folder: allowed to a FengYu tool, not to MCP's
        ("tried to write /pkg/ui/index.html", True),
        ("tried to write /pkg/backend/worker.py", True),
        ("tried to write /etc/x", True),
        ("wrote /data/cache.pyc", False),
        ("tried to write /data/cache.pyc", True),  # a link named like byte code, to anywhere
        ("sent to 10.1.2.4:53", False),
        ("tried to connect to 127.0.0.1:9", True),
        ("connected to [::1]:443", False),
        ("sent to 10.1.2.3:53", False),
    ]


def _sandboxed(tmp_path: Path, code: str, network: bool = False) -> tuple[str, list[str]]:
    """Run code in the worker sandbox, traced; its output and what the trace saw."""
    if not support().available or not strace_program():
        pytest.skip(syscall_trace.effects_unseen())
    package, data = tmp_path / "package", tmp_path / "data"
    package.mkdir(exist_ok=True)
    data.mkdir(exist_ok=True)
    give(data)  # as WorkerSpec.prepare_folders does: the sandbox may run as nobody
    policy = SandboxPolicy(package, data, hidden=(tmp_path,), network=network)
    fd = program_fd()
    argv = [
        *tracer(strace_program(), tmp_path.parent / f"{tmp_path.name}.trace"),
        *command(support().program, policy, [sys.executable, "-c", code], package, fd),
    ]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=60, check=False, pass_fds=(fd,)
        )
    finally:
        os.close(fd)
    trace = read_trace(tmp_path.parent / f"{tmp_path.name}.trace", package)
    return done.stdout + done.stderr, [a.describe() for a in trace]


def test_the_sandbox_is_the_one_fengyu_describes(tmp_path: Path) -> None:
    """Package read-only, data writable, the rest read-only and the kit's folders hidden,
    no network, its own PID namespace, and a tracer the worker cannot see."""
    (tmp_path / "secret.txt").write_text("the kit's own")
    code = "\n".join(
        [
            "import os, socket",
            "def attempt(f):",
            "    try:",
            "        f(); return 'ok'",
            "    except OSError as e:",
            "        return e.strerror",
            f"print('package', attempt(lambda: open({str(tmp_path / 'package' / 'x')!r}, 'w')))",
            f"print('data', attempt(lambda: open({str(tmp_path / 'data' / 'x')!r}, 'w')))",
            "print('var', attempt(lambda: open('/var/tmp/kit-test-x', 'w')))",
            f"print('hidden', os.path.exists({str(tmp_path / 'secret.txt')!r}))",
            "print('net', attempt(lambda: socket.create_connection(('10.9.9.9', 80), 1)))",
            "print('pid', os.getpid() < 10)",
            "print('traced', open('/proc/self/status').read().split('TracerPid:')[1].split()[0])",
            "import ctypes",
            "libc = ctypes.CDLL(None, use_errno=True)",
            "child = os.fork()",
            "if child == 0:",
            "    os._exit(0 if libc.ptrace(0, 0, None, None) == 0 else ctypes.get_errno())",
            "print('traceme', os.strerror(os.WEXITSTATUS(os.waitpid(child, 0)[1])))",
        ]
    )
    output, seen = _sandboxed(tmp_path, code)
    assert "package Read-only file system" in output
    assert "data ok" in output
    assert "var No such file or directory" in output  # /var is not even there
    assert "hidden False" in output
    assert "net Network is unreachable" in output
    assert "pid True" in output
    assert "traced 0" in output
    assert "traceme Operation not permitted" in output  # as in a host: ptrace is refused
    assert f"tried to write {tmp_path / 'package' / 'x'}" in seen
    assert "tried to write /var/tmp/kit-test-x" in seen
    assert "tried to connect to 10.9.9.9:80" in seen
    assert not (tmp_path / "package" / "x").exists()


def test_nothing_a_worker_starts_outlives_it(tmp_path: Path) -> None:
    """A double-forked child, detached from every session, dies with the sandbox."""
    marker = tmp_path / "data" / "alive"
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        time.sleep(3); open({str(marker)!r}, 'w').write('x')\n"
        "    os._exit(0)\n"
        "print('parent done')\n"
    )
    output, _ = _sandboxed(tmp_path, code)
    assert "parent done" in output
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline and not marker.exists():
        time.sleep(0.2)
    assert not marker.exists()


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
    worker.write_text(source)
    # one call, so the write it leaves behind cannot land in the window of a later one: the
    # item's own keyword, as `-k FY-EFF-001` also matches every item of this fixture's id
    result = run_kit([plugin], "-k", ":FY-EFF-001:", "--conformance-examples", "1")
    assert result.reported() == {"FY-EFF-001"}
    (finding,) = result.findings("FY-EFF-001")
    assert "after a call answered" in finding["message"] and ".fixture-cache" in finding["message"]


def test_a_fifo_in_the_plugin_folder_is_left_out_of_the_copy(run_kit, tmp_path: Path) -> None:
    """Copying a FIFO would wait for a writer forever: the kit's copy leaves it behind, and
    only the host, which refuses such a folder, reports it."""
    plugin = copy_plugin(REPO / "sample_plugins" / "fan.summer.markdown", tmp_path)
    os.mkfifo(plugin / "pipe")
    result = run_kit([plugin], "-k", "FY-WRK-001 or FY-HOST-001")
    assert result.reported() == {"FY-HOST-001"}
    assert any("pipe" in f["message"] for f in result.findings("FY-HOST-001"))
