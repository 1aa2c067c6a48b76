"""PluginProcessManager against real worker processes: calls, errors, timeouts, crashes."""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from pathlib import Path

import psutil
import pytest

from plugin_spec.fengyu_decls import tool_decls
from reference_host.process.connection import NO_RESULT
from reference_host.process.launch import WorkerSpec
from reference_host.process.manager import PluginProcessManager
from reference_host.process.timeouts import effective_timeout
from reference_host.process.worker_errors import (
    WorkerCrashed,
    WorkerLaunchError,
    WorkerProtocolError,
    WorkerRpcError,
    WorkerTimeout,
)

FAKE_WORKER = Path(__file__).with_name("fake_worker.py")


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def gone_soon(pid: int, timeout: float = 30.0) -> bool:
    """A SIGKILLed process closes its pipes a moment before it turns into a zombie (timeout
    bounds the wait, generous for a loaded machine: not a speed claim)."""
    deadline = time.monotonic() + timeout
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return gone(pid)


@pytest.fixture
async def manager(tmp_path: Path):
    manager = PluginProcessManager()
    manager.register(spec(tmp_path))
    yield manager
    await manager.close()


def spec(tmp_path: Path, **kw) -> WorkerSpec:
    return WorkerSpec(
        plugin_id="fan.summer.fake",
        root=tmp_path,
        argv=(sys.executable, str(FAKE_WORKER)),
        data_dir=tmp_path / "data",
        **kw,
    )


def pid_of(manager: PluginProcessManager) -> int:
    connection = manager.connection("fan.summer.fake")
    assert connection is not None
    return connection.process.pid


async def test_call_returns_the_result(manager: PluginProcessManager) -> None:
    assert await manager.invoke("fan.summer.fake", "echo", {"a": [1, "é"]}) == {"a": [1, "é"]}


async def test_worker_environment(manager: PluginProcessManager, tmp_path: Path) -> None:
    env = await manager.invoke("fan.summer.fake", "env", {})
    data = str(tmp_path / "data" / "tmp")
    assert env == {
        "FENGYU_PLUGIN_ID": "fan.summer.fake",
        "FENGYU_PLUGIN_ROOT": str(tmp_path),
        "FENGYU_LOG_LEVEL": "INFO",
        "TMPDIR": data,
        "TMP": data,
        "TEMP": data,
    }


async def test_concurrent_calls_are_matched_by_id(manager: PluginProcessManager) -> None:
    results = await asyncio.gather(
        *(manager.invoke("fan.summer.fake", "sleep", {"seconds": s}) for s in (0.3, 0.1, 0.2))
    )
    assert results == [0.3, 0.1, 0.2]


async def test_a_response_is_read_as_fengyu_reads_it(manager: PluginProcessManager) -> None:
    """FengYu takes a non-null error as the answer, else the result: a left-out result (what
    its Go SDK writes for `return nil, nil`) is a null result, told to the stdout observers
    as FY-WRK-021's shape, and a null error beside a result is no error."""
    seen: list[tuple[str, str]] = []
    manager.stdout_observers.append(lambda _, line, problem: seen.append((line, problem)))
    assert await manager.invoke("fan.summer.fake", "nothing", {}) is None
    assert await manager.invoke("fan.summer.fake", "null_error", {"a": 1}) == {"a": 1}
    assert [problem for _, problem in seen] == [
        NO_RESULT,
        "a response needs exactly one of result and error",
    ]


async def test_rpc_error_keeps_the_worker(manager: PluginProcessManager) -> None:
    await manager.invoke("fan.summer.fake", "echo", {})
    pid = pid_of(manager)
    with pytest.raises(WorkerRpcError) as raised:
        await manager.invoke("fan.summer.fake", "fail", {})
    assert (raised.value.code, raised.value.rpc_message) == (4001, "no such row")
    await manager.invoke("fan.summer.fake", "echo", {})
    assert pid_of(manager) == pid


async def test_timeout_kills_worker_and_descendants_then_restarts(
    manager: PluginProcessManager, tmp_path: Path
) -> None:
    pidfile = tmp_path / "child.pid"
    pending = asyncio.create_task(
        manager.invoke("fan.summer.fake", "sleep", {"seconds": 30}, caller_timeout=5)
    )
    with pytest.raises(WorkerTimeout, match="within 1 s"):
        await manager.invoke("fan.summer.fake", "spawn", {"pidfile": str(pidfile)}, tool_timeout=1)
    with pytest.raises(WorkerTimeout):
        await pending
    worker_pid = pid_of(manager)
    assert gone(worker_pid) and gone_soon(int(pidfile.read_text()))
    assert await manager.invoke("fan.summer.fake", "echo", {"again": True}) == {"again": True}
    assert pid_of(manager) != worker_pid


async def test_the_timeout_covers_a_write_the_worker_does_not_read(
    manager: PluginProcessManager, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker that stops reading stdin lets the pipe fill; the call's timeout must cover
    writing the request too, or it would wait until something else kills the worker. The
    call whose write failed leaves no failed future behind for asyncio to log at GC."""
    await manager.invoke("fan.summer.fake", "echo", {})  # the worker runs
    deaf = asyncio.create_task(manager.invoke("fan.summer.fake", "deaf", {}, tool_timeout=30))
    await asyncio.sleep(0)  # the deaf request is written first
    big = {"text": "x" * (4 * 1024 * 1024)}  # far more than a pipe buffer holds
    with pytest.raises(WorkerTimeout, match="echo did not answer within 1 s"):
        await manager.invoke("fan.summer.fake", "echo", big, tool_timeout=1)
    with pytest.raises(WorkerTimeout):  # the timeout killed the worker: its calls fail too
        await deaf
    assert await manager.invoke("fan.summer.fake", "echo", {"n": 1}) == {"n": 1}
    gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


async def test_crash_fails_the_call_and_the_next_call_restarts(
    manager: PluginProcessManager,
) -> None:
    await manager.invoke("fan.summer.fake", "echo", {})
    first = pid_of(manager)
    with pytest.raises(WorkerCrashed, match="exited with code 3") as raised:
        await manager.invoke("fan.summer.fake", "crash", {"code": 3})
    assert "about to crash" in raised.value.stderr
    assert await manager.invoke("fan.summer.fake", "echo", {"n": 1}) == {"n": 1}
    assert pid_of(manager) != first and gone(first)


async def test_worker_closing_stdout_fails_the_call_and_is_killed(
    manager: PluginProcessManager,
) -> None:
    await manager.invoke("fan.summer.fake", "echo", {})
    first = pid_of(manager)
    # A crash naming the closed stdout, not the WorkerTimeout of the 60 s it might wait.
    with pytest.raises(WorkerCrashed, match="closed its stdout"):
        await manager.invoke("fan.summer.fake", "close_stdout", {}, tool_timeout=60)
    assert gone_soon(first)
    assert await manager.invoke("fan.summer.fake", "echo", {"n": 1}) == {"n": 1}


async def test_non_json_lines_and_unknown_ids_are_skipped(
    manager: PluginProcessManager,
) -> None:
    assert await manager.invoke("fan.summer.fake", "noise", {}) == "after noise"
    connection = manager.connection("fan.summer.fake")
    assert connection is not None
    assert list(connection.skipped_stdout) == ["this is not json"]


async def test_stdout_observers_see_lines_that_are_not_responses(
    manager: PluginProcessManager,
) -> None:
    """The kit holds every stdout byte to the protocol: a line that is not JSON is told to
    the observers, a response to someone else's id is a response all the same."""
    seen: list[tuple[str, str, str]] = []
    manager.stdout_observers.append(lambda *line: seen.append(line))
    assert await manager.invoke("fan.summer.fake", "noise", {}) == "after noise"
    assert seen == [
        ("fan.summer.fake", "this is not json", "a stdout line that is not a JSON object")
    ]


async def test_large_result_under_the_cap(manager: PluginProcessManager) -> None:
    result = await manager.invoke("fan.summer.fake", "big", {"bytes": 4 * 1024 * 1024})
    assert len(result) == 4 * 1024 * 1024


async def test_frame_over_16_mib_kills_the_worker(manager: PluginProcessManager) -> None:
    with pytest.raises(WorkerProtocolError, match="over 16 MiB"):
        await manager.invoke("fan.summer.fake", "big", {"bytes": 17 * 1024 * 1024})
    assert await manager.invoke("fan.summer.fake", "echo", {"ok": 1}) == {"ok": 1}


async def test_stderr_is_captured(manager: PluginProcessManager) -> None:
    await manager.invoke("fan.summer.fake", "log", {"text": "hello from stderr"})
    await asyncio.sleep(0.05)
    connection = manager.connection("fan.summer.fake")
    assert connection is not None and "hello from stderr" in connection.stderr


async def test_close_reaps_the_worker(manager: PluginProcessManager) -> None:
    await manager.invoke("fan.summer.fake", "echo", {})
    connection = manager.connection("fan.summer.fake")
    assert connection is not None
    await manager.close()
    assert connection.process.returncode == 0


async def test_worker_ignoring_eof_is_killed_on_close(tmp_path: Path) -> None:
    manager = PluginProcessManager()
    manager.register(spec(tmp_path, extra_env={"IGNORE_EOF": "1"}))
    await manager.invoke("fan.summer.fake", "echo", {})
    connection = manager.connection("fan.summer.fake")
    assert connection is not None
    await connection.close(grace=0.2)
    assert connection.process.returncode is not None and gone(connection.process.pid)


async def test_launch_failure_is_clear(tmp_path: Path) -> None:
    manager = PluginProcessManager()
    manager.register(
        WorkerSpec("fan.summer.none", tmp_path, ("/no/such/worker",), tmp_path / "data")
    )
    with pytest.raises(WorkerLaunchError, match="cannot start /no/such/worker"):
        await manager.invoke("fan.summer.none", "echo", {})


# -- replacing a spec (upgrade, disable, uninstall) ----------------------------------------


def workers() -> list[int]:
    """Live fake workers started by this test process."""
    return [
        child.pid
        for child in psutil.Process().children(recursive=True)
        if not gone(child.pid) and str(FAKE_WORKER) in " ".join(child.cmdline())
    ]


async def test_replace_stops_a_worker_whose_start_was_under_way(tmp_path: Path) -> None:
    """An upgrade that lands while a call is starting the old worker: the call is answered
    by that worker, which is then stopped; the next call starts from the new spec."""
    manager = PluginProcessManager()
    old, new = spec(tmp_path / "v1"), spec(tmp_path / "v2")
    manager.register(old)
    try:
        call = asyncio.create_task(manager.invoke(old.plugin_id, "echo", {"n": 1}))
        await asyncio.sleep(0)  # the call holds the start lock and is spawning the old worker
        await manager.replace(old.plugin_id, new)
        assert await call == {"n": 1}
        assert manager.connection(old.plugin_id) is None
        assert workers() == []  # the old worker was started, then stopped: none is left
        assert await manager.invoke(old.plugin_id, "echo", {"n": 2}) == {"n": 2}
        connection = manager.connection(old.plugin_id)
        assert connection is not None and connection.spec == new
    finally:
        await manager.close()


async def test_replace_with_the_same_spec_keeps_the_worker(manager: PluginProcessManager) -> None:
    await manager.invoke("fan.summer.fake", "echo", {})
    running = manager.connection("fan.summer.fake")
    assert running is not None
    await manager.replace("fan.summer.fake", running.spec)
    assert manager.connection("fan.summer.fake") is running and running.alive


async def test_replace_with_none_stops_the_worker_and_refuses_calls(
    manager: PluginProcessManager,
) -> None:
    await manager.invoke("fan.summer.fake", "echo", {})
    running = manager.connection("fan.summer.fake")
    assert running is not None
    await manager.replace("fan.summer.fake", None)
    assert running.process.returncode is not None
    with pytest.raises(WorkerLaunchError, match="has no worker"):
        await manager.invoke("fan.summer.fake", "echo", {})


async def test_a_notification_the_worker_does_not_take_in_time_kills_it(tmp_path: Path) -> None:
    manager = PluginProcessManager()
    manager.register(spec(tmp_path, call_timeout=1))
    try:
        await manager.invoke("fan.summer.fake", "echo", {})
        deaf = asyncio.create_task(manager.invoke("fan.summer.fake", "deaf", {}, tool_timeout=30))
        await asyncio.sleep(0)  # the deaf request is written first
        with pytest.raises(WorkerTimeout, match="could not be sent within 1 s"):
            await manager.notify("fan.summer.fake", "log", {"text": "x" * (4 * 1024 * 1024)})
        with pytest.raises(WorkerTimeout):
            await deaf
    finally:
        await manager.close()


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        ({"tool": 5, "method": 7, "caller": 9, "backend": 11}, 5.0),
        ({"method": 7, "caller": 9, "backend": 11}, 7.0),
        ({"caller": 9, "backend": 11}, 9.0),
        ({"backend": 11}, 11.0),
        ({}, 60.0),
        ({"tool": 900, "method": 7}, 600.0),  # clamped to 1..600
        ({"method": 0.2}, 1.0),
        ({"tool": True, "method": 7}, 7.0),  # a boolean is no number of seconds
    ],
)
def test_timeout_precedence(declared: dict[str, float], expected: float) -> None:
    """The tool's timeoutSeconds, its method's, the caller's, callTimeoutSeconds, 60 s."""
    positional = (declared.get("tool"), declared.get("caller"), declared.get("backend"))
    assert effective_timeout(*positional, method=declared.get("method")) == expected


def test_tool_declarations_keep_tool_and_method_timeouts_apart_and_idempotent() -> None:
    manifest = {
        "schemaVersion": 2,
        "rpc": {"methods": {"save": {"timeoutSeconds": 120}, "load": {}}},
        "aiTools": [
            {"name": "save_doc", "method": "save", "effect": "write", "idempotent": True},
            {"name": "save_now", "method": "save", "effect": "write", "timeoutSeconds": 10},
            {"name": "load_doc", "method": "load", "effect": "read"},
        ],
    }
    decls = {d.definition.name: d for d in tool_decls(manifest)}
    got = {n: (d.timeout, d.method_timeout, d.idempotent) for n, d in decls.items()}
    assert got == {
        "save_doc": (None, 120, True),
        "save_now": (10, 120, False),
        "load_doc": (None, None, False),
    }


async def test_the_methods_timeout_applies_when_the_tool_declares_none(tmp_path: Path) -> None:
    manager = PluginProcessManager()
    manager.register(spec(tmp_path, call_timeout=30))
    try:
        with pytest.raises(WorkerTimeout, match="sleep did not answer within 1 s"):
            await manager.invoke(
                "fan.summer.fake", "sleep", {"seconds": 30}, method_timeout=1, caller_timeout=30
            )
        answer = await manager.invoke(
            "fan.summer.fake", "sleep", {"seconds": 0.2}, tool_timeout=30, method_timeout=1
        )
        assert answer == 0.2  # the tool's own 30 s came first
    finally:
        await manager.close()
