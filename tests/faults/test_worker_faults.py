"""Worker faults through a real Host: each faulty plugin is installed beside a well-behaved
one; a failing call comes back as the failure envelope, no process outlives the host, the
next call to the faulty tool works again where the worker can work, and the other plugin's
calls work during and after the fault.

No wall-clock bounds: a fault seen "at once" is one whose call, given a long timeout, fails
naming the fault and not the timeout (TIMED_OUT); speed is for benchmarks/."""

from __future__ import annotations

import asyncio
import gc
import json
import signal
from pathlib import Path
from typing import Any

import pytest

from reference_host.host import Host
from tests.conftest import MakeHost
from tests.faults.conftest import GOOD_TOOL, ProcessGuard
from tests.faults.support import (
    alive,
    call_tool,
    is_failure_envelope,
    read_pids,
    reap,
    settled,
    wait_gone,
    write_worker_plugin,
)

MIB = 1024 * 1024
HANG_GUARD = 120  # a guard so that a regression fails instead of hanging, not a speed bound
LONG = 60  # a tool timeout no fault here should reach: a failure naming it is a regression
TIMED_OUT = "did not answer within"  # how a call the tool timeout ended fails


async def install_fault(host: Host, tmp_path: Path, kind: str, worker: str, **options: Any) -> str:
    """Install plugin test.faults.<kind> with tool <kind>_probe, served by the named fault
    worker (tests/fixtures/workers); returns the tool name."""
    tool = f"{kind}_probe"
    root = write_worker_plugin(tmp_path / "src", f"test.faults.{kind}", tool, worker, **options)
    await host.install(root)
    return tool


async def good_calls(host: Host, count: int, pause: float = 0.05) -> list[Any]:
    """Calls to the well-behaved plugin spread over a while (to run during a fault)."""
    results = []
    for n in range(count):
        results.append(await call_tool(host, GOOD_TOOL, {"n": n}))
        await asyncio.sleep(pause)
    return results


def assert_good(results: list[Any]) -> None:
    """Every call to the well-behaved plugin worked, all answered by one worker (it was
    never restarted because of its neighbour's fault)."""
    assert results and all(r["success"] is True for r in results), results
    assert len({r["pid"] for r in results}) == 1, results


async def during_good_calls(
    host: Host, tool: str, params: dict[str, Any], good_count: int
) -> tuple[Any, list[Any]]:
    """Call the faulty tool with params while the well-behaved plugin is called good_count
    times; returns the faulty call's result and the good calls' results."""
    result, good = await asyncio.gather(call_tool(host, tool, params), good_calls(host, good_count))
    return result, good


def assert_failed_on(result: Any, reason: str) -> None:
    """The call failed naming reason, not the tool timeout: the fault was seen as it
    happened, not when the timeout ran out."""
    assert is_failure_envelope(result), result
    assert reason in result["error"] and TIMED_OUT not in result["error"], result


async def next_call_restarts(host: Host, tool: str, old_pid: int) -> int:
    """The next call to the faulty tool works, answered by a new worker; returns its pid."""
    again = await call_tool(host, tool, {"n": 1})
    assert again["success"] is True and again["pid"] != old_pid
    return again["pid"]


async def recovers(
    host: Host, guard: ProcessGuard, tool: str, old_pid: int, good: list[Any], *gone: int
) -> None:
    """After a fault that killed worker old_pid: the good calls worked during it, old_pid and
    gone are gone, the next call starts a new worker, and close_and_check passes."""
    assert_good(good)
    assert wait_gone([old_pid, *gone]) == []
    again = await next_call_restarts(host, tool, old_pid)
    await close_and_check(host, guard, again, during=good)


async def close_and_check(
    host: Host, guard: ProcessGuard, *pids: int, during: list[Any] | None = None
) -> None:
    """The well-behaved plugin still works after the fault (same worker as during it);
    after host.close() no process is left: no descendant of the test, none of pids."""
    assert_good([*(during or []), *await good_calls(host, 2, 0)])
    await host.close()
    guard.assert_none_left()
    assert wait_gone(pids) == []


async def test_crash_mid_call_fails_the_pending_calls_and_the_next_call_restarts(
    host: Host, tmp_path: Path, guard: ProcessGuard
) -> None:
    tool = await install_fault(host, tmp_path, "crash", "crash", tool_timeout=LONG)
    first = await call_tool(host, tool, {"n": 0})
    assert first["success"] is True
    crashed, in_flight, good = await asyncio.gather(
        call_tool(host, tool, {"crash": True, "after": 0.3}),
        call_tool(host, tool, {"sleep": 20}),
        good_calls(host, 5),
    )
    assert_failed_on(crashed, "exited with code 3")
    assert_failed_on(in_flight, "exited with code 3")  # not its answer 20 s later
    assert_good(good)
    assert not alive(first["pid"])
    again = await next_call_restarts(host, tool, first["pid"])
    await close_and_check(host, guard, first["pid"], again, during=good)


async def test_hang_times_out_kills_the_worker_and_the_next_call_restarts(
    host: Host, tmp_path: Path, guard: ProcessGuard
) -> None:
    tool = await install_fault(host, tmp_path, "hang", "hang", tool_timeout=1)
    first = await call_tool(host, tool, {})
    hung, good = await during_good_calls(host, tool, {"hang": True}, 8)
    assert is_failure_envelope(hung)
    assert "did not answer within 1 s" in hung["error"] and "killed" in hung["error"]
    await recovers(host, guard, tool, first["pid"], good)


async def test_exit_at_start_fails_each_call_until_the_worker_can_start(
    host: Host, tmp_path: Path, guard: ProcessGuard
) -> None:
    tool = await install_fault(host, tmp_path, "exits", "exit_at_start", tool_timeout=LONG)
    first, second, good = await asyncio.gather(
        call_tool(host, tool, {}), call_tool(host, tool, {}), good_calls(host, 3)
    )
    for result in (first, second):
        assert is_failure_envelope(result), result
        assert TIMED_OUT not in result["error"], result
        assert any(
            reason in result["error"]
            for reason in ("exited with code 3", "closed its stdin", "is not running")
        ), result
    assert_good(good)
    # Every call tries a fresh start: nothing keeps the dead worker around.
    third = await call_tool(host, tool, {})
    assert is_failure_envelope(third)
    (tmp_path / "host" / "plugin-data" / "test.faults.exits" / "healed").touch()
    healed = await call_tool(host, tool, {"n": 1})
    assert healed["success"] is True
    await close_and_check(host, guard, healed["pid"], during=good)


async def test_stderr_flood_neither_blocks_the_worker_nor_the_host(
    host: Host, tmp_path: Path, guard: ProcessGuard
) -> None:
    """30 MiB of log lines plus one 17 MiB line (over the 16 MiB cap) on stderr: the answer
    still comes back (the host drains stderr while waiting), then a flood that ends in a
    crash gives the failure envelope, and the next call works."""
    tool = await install_fault(host, tmp_path, "flood", "stderr_flood", tool_timeout=LONG)
    flooded, good = await during_good_calls(host, tool, {"flood": 30, "long": 17}, 5)
    assert flooded["success"] is True, flooded  # a blocked worker would have timed out
    assert_good(good)
    pid = flooded["pid"]
    connection = host.manager.connection("test.faults.flood")
    assert connection is not None and connection.process.pid == pid
    await settled(lambda: "worker: flood over" in connection.stderr)
    assert len(connection.stderr_tail) <= 200
    died = await call_tool(host, tool, {"flood": 20, "die": True})
    assert_failed_on(died, "exited with code 5")
    again = await next_call_restarts(host, tool, pid)
    await close_and_check(host, guard, pid, again, during=good)


@pytest.mark.parametrize(
    ("fault", "mode", "readable", "unreadable", "why"),
    [
        pytest.param("bigframe", "big_frame", {}, {"big": True}, "over 16 MiB", id="over-16-mib"),
        pytest.param(
            "deep",
            "deep_answer",
            {"nest": 400},
            {"deep": 5000},
            "nested deeper than 512 levels",
            id="nested-too-deep",
        ),
    ],
)
async def test_an_unreadable_answer_fails_the_call_at_once_and_the_next_call_restarts(
    host: Host,
    tmp_path: Path,
    guard: ProcessGuard,
    fault: str,
    mode: str,
    readable: dict[str, Any],
    unreadable: dict[str, Any],
    why: str,
) -> None:
    """A frame over 16 MiB, or a line nested 5,000 deep (which, skipped as unreadable, used
    to leave its call waiting out the whole tool timeout), is refused at the reader: the call
    fails naming why, not the timeout, and the worker is killed. An answer nested 400 deep
    still comes through."""
    tool = await install_fault(host, tmp_path, fault, mode, tool_timeout=LONG)
    first = await call_tool(host, tool, readable)
    assert first["success"] is True
    failed, good = await during_good_calls(host, tool, unreadable, 5)
    assert_failed_on(failed, why)
    await recovers(host, guard, tool, first["pid"], good)


async def test_garbage_on_stdout_before_the_answer_is_skipped(
    host: Host, tmp_path: Path, guard: ProcessGuard
) -> None:
    tool = await install_fault(host, tmp_path, "garbage", "garbage", tool_timeout=LONG)
    results = await asyncio.gather(*(call_tool(host, tool, {"n": n}) for n in range(3)))
    assert [r["echo"] for r in results] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert all(r["success"] is True for r in results)
    pid = results[0]["pid"]
    assert {r["pid"] for r in results} == {pid}
    again = await call_tool(host, tool, {"n": 3})
    assert again == {**results[0], "echo": {"n": 3}}
    connection = host.manager.connection("test.faults.garbage")
    assert connection is not None
    assert "worker: hello from the startup banner" in connection.skipped_stdout
    await close_and_check(host, guard, pid)


async def test_responses_with_unhashable_ids_are_skipped(
    host: Host, tmp_path: Path, guard: ProcessGuard
) -> None:
    """A line that is a JSON object whose id is an array or object is garbage too."""
    tool = await install_fault(host, tmp_path, "oddids", "odd_ids", tool_timeout=LONG)
    result = await call_tool(host, tool, {"odd": True})
    assert result["success"] is True, result
    assert (await call_tool(host, tool, {"n": 1}))["pid"] == result["pid"]
    await close_and_check(host, guard, result["pid"])


async def test_worker_ignoring_stdin_eof_is_killed_when_the_host_closes(
    host: Host, tmp_path: Path, guard: ProcessGuard
) -> None:
    tool = await install_fault(host, tmp_path, "noeof", "ignores_eof")
    first, good = await during_good_calls(host, tool, {"n": 0}, 2)
    assert first["success"] is True
    assert_good(good)
    pid = first["pid"]
    connection = host.manager.connection("test.faults.noeof")
    assert connection is not None and connection.process.pid == pid
    await host.close()  # returns: the grace ran out, then SIGKILL (it ignores SIGTERM too)
    assert connection.process.returncode == -signal.SIGKILL
    assert not alive(pid)
    guard.assert_none_left()


async def test_children_of_a_timed_out_worker_are_killed_with_it(
    host: Host, tmp_path: Path, guard: ProcessGuard
) -> None:
    """The worker starts children (same group, own session, a grandchild, a bare fork)
    and hangs: the timeout kills the whole tree, not only the worker."""
    tool = await install_fault(host, tmp_path, "forks", "forks", tool_timeout=1)
    first = await call_tool(host, tool, {})
    forked, good = await during_good_calls(host, tool, {"fork": True}, 5)
    assert is_failure_envelope(forked) and "did not answer within 1 s" in forked["error"]
    children = read_pids(tmp_path / "host" / "plugin-data" / "test.faults.forks" / "children")
    guard.track(children)
    assert len(children) == 5
    await recovers(host, guard, tool, first["pid"], good, *children)


async def test_children_left_by_a_worker_do_not_outlive_the_host(
    host: Host, tmp_path: Path, guard: ProcessGuard
) -> None:
    """The worker starts a helper in its process group and answers; at host.close() the
    worker exits on stdin EOF: its helper must not be left running as an orphan."""
    tool = await install_fault(host, tmp_path, "background", "background_child")
    result = await call_tool(host, tool, {"background": True})
    assert result["success"] is True
    children = read_pids(tmp_path / "host" / "plugin-data" / "test.faults.background" / "children")
    guard.track(children)
    assert len(children) == 1 and alive(children[0])
    await host.close()
    assert not alive(result["pid"])
    assert wait_gone(children) == [], "the worker's child outlived the host"


async def test_crash_is_seen_at_once_even_when_a_child_holds_stdout(
    host: Host, tmp_path: Path, guard: ProcessGuard
) -> None:
    """The worker starts a child (which inherits its stdout) and crashes: the call fails
    when the worker exits (naming its exit code), not when the tool's timeout runs out."""
    tool = await install_fault(host, tmp_path, "crashchild", "crash_with_child", tool_timeout=LONG)
    crashed = await call_tool(host, tool, {"crash": True})
    children = read_pids(tmp_path / "host" / "plugin-data" / "test.faults.crashchild" / "children")
    guard.track(children)
    assert_failed_on(crashed, "exited with code 4")


async def test_timeout_returns_even_when_an_escaped_grandchild_holds_the_pipes(
    host: Host, tmp_path: Path, guard: ProcessGuard
) -> None:
    """The grandchild sleeps 600 s holding the worker's stdout and stderr: a host that waited
    for those pipes to close would leave the call pending far past its 1 s timeout."""
    tool = await install_fault(host, tmp_path, "escape", "escaped_grandchild", tool_timeout=1)
    children_file = tmp_path / "host" / "plugin-data" / "test.faults.escape" / "children"
    try:
        escaped = await asyncio.wait_for(call_tool(host, tool, {"escape": True}), HANG_GUARD)
    except TimeoutError:
        escaped = None
    children = read_pids(children_file)
    guard.track(children)
    if escaped is None:
        reap(children)  # unblock the host so that it can close
    assert escaped is not None, "the call waited on the pipes the grandchild holds"
    assert is_failure_envelope(escaped) and "did not answer within 1 s" in escaped["error"]
    assert wait_gone(children) == []


async def test_a_timeout_leaves_no_unretrieved_future_exception(
    host: Host, tmp_path: Path, guard: ProcessGuard
) -> None:
    tool = await install_fault(host, tmp_path, "hang", "hang", tool_timeout=1)
    loop = asyncio.get_running_loop()
    reported: list[str] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: reported.append(context["message"]))
    try:
        hung = await call_tool(host, tool, {"hang": True})
        assert is_failure_envelope(hung)
        assert (await call_tool(host, tool, {}))["success"] is True  # drops the old worker
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    assert reported == []


async def test_the_stderr_tail_the_host_keeps_is_bounded_in_bytes(
    host: Host, tmp_path: Path, guard: ProcessGuard
) -> None:
    tool = await install_fault(host, tmp_path, "flood", "stderr_flood", tool_timeout=LONG)
    result = await call_tool(host, tool, {"long": 2, "lines": 20})  # 40 MiB in 2 MiB lines
    assert result["success"] is True
    connection = host.manager.connection("test.faults.flood")
    assert connection is not None
    await settled(lambda: "worker: flood over" in connection.stderr)
    kept = sum(len(line) for line in connection.stderr_tail)
    assert kept <= 4 * MIB, f"the host keeps {kept / MIB:.0f} MiB of the worker's stderr"


async def test_a_tool_of_a_plugin_without_its_worker_file_names_the_file(
    tmp_path: Path, make_host: MakeHost
) -> None:
    """runtime python and no backend/worker.py (the author wrote backend/main.py): the call's
    error says which file FengYu runs, not only that there is no worker."""
    root = write_worker_plugin(tmp_path / "src", "fault.noworker", "noworker")
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["backend"] = {"runtime": "python", "protocolVersion": 4}
    (root / "manifest.json").write_text(json.dumps(manifest))
    (root / "backend" / "worker").rename(root / "backend" / "main.py")
    host = make_host()
    await host.install(root)
    output = await call_tool(host, "noworker")
    assert is_failure_envelope(output)
    assert "has no worker" in output["error"] and "backend/worker.py" in output["error"]
