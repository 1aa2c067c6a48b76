"""Every worker and MCP server has bounds, resources declared or not (spec: host.md#worker-bounds):
processes, open files and the bytes of its data folder; the kernel holds its share, the
sampled watcher ends a tree over a bound with RESOURCE_LIMIT, and a declared maxProcesses or
the host's --worker-limit moves a bound."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conformance.mcp.server import McpServer
from plugin_spec.fengyu_decls import ResourceLimits
from reference_host.__main__ import build_parser
from reference_host.mcp.config import ServerConfig
from reference_host.mcp.launch import Launch
from reference_host.process import sandbox
from reference_host.process.bounds import (
    DEFAULT_LIMITS,
    GIB,
    LimitSettingError,
    WorkerLimits,
    configured,
    limit_setting,
)
from reference_host.process.launch import manifest_spec
from reference_host.process.limits import LimitPolicy, Overrun, Usage, folder_bytes, overruns
from reference_host.process.manager import PluginProcessManager
from reference_host.process.sandbox import SandboxPolicy, support
from reference_host.process.worker_errors import WorkerResourceLimit
from tests.conftest import MakeHost
from tests.faults.support import call_tool, write_worker_plugin
from tests.reference_host.test_resource_limits import PLUGIN, QUICK, greedy_spec

MIB = 1024 * 1024
needs_sandbox = pytest.mark.skipif(not support().available, reason=support().reason)


@pytest.fixture
async def manager() -> AsyncIterator[PluginProcessManager]:
    manager = PluginProcessManager(limits=LimitPolicy(interval=QUICK))
    yield manager
    await manager.close()


def test_defaults_and_settings() -> None:
    assert WorkerLimits(processes=256, open_files=4096, data_bytes=GIB) == DEFAULT_LIMITS
    assert limit_setting("processes=512") == ("processes", 512)
    assert limit_setting("Open-Files = 8192") == ("open-files", 8192)
    assert limit_setting("data=2GiB") == ("data", 2 * GIB)
    assert limit_setting("data=1m") == ("data", MIB)
    assert configured(["data=1M", "processes=8", "processes=9"]) == WorkerLimits(9, 4096, MIB)
    for bad in ("processes", "cpu=2", "processes=0", "processes=2M", "data=lots", "data=-1"):
        with pytest.raises(LimitSettingError, match="--worker-limit"):
            limit_setting(bad)


def test_a_declared_max_processes_is_the_process_limit() -> None:
    bounds = WorkerLimits(processes=8)
    assert bounds.declared(ResourceLimits(memory_mb=64)) == bounds
    assert bounds.declared(ResourceLimits(max_processes=2)).processes == 2
    manifest = {"backend": {"resources": {"maxProcesses": 3}}}
    spec = manifest_spec("p", Path("/p"), manifest, Path("/d"), override="w", bounds=bounds)
    assert spec.limits == replace(bounds, processes=3)


def test_overruns_of_the_bounds_name_the_limit_the_value_and_the_bound() -> None:
    bounds = WorkerLimits(processes=8)
    assert overruns(Usage(9, 0), ResourceLimits(), bounds) == [Overrun("processes", 9, 8, True)]
    assert overruns(Usage(9, 0), ResourceLimits()) == []  # bounds not watched (the kit)
    assert overruns(Usage(9, 0), ResourceLimits(max_processes=10), bounds) == []
    assert overruns(Usage(3, 0), ResourceLimits(max_processes=2), bounds) == [
        Overrun("processes", 3, 2)
    ]
    assert Overrun("processes", 9, 8, True).message == (
        "Worker exceeded its process limit (9/8; the host's --worker-limit processes, as the "
        "manifest declares no maxProcesses)"
    )
    assert Overrun("data", 2 * MIB, MIB, True).message == (
        "Worker exceeded its data folder limit (2097152/1048576 bytes; the host's "
        "--worker-limit data)"
    )
    assert Overrun("data", 2, 1, True).field == "--worker-limit data"


def test_folder_bytes_counts_what_the_tree_takes_on_disk_once(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a").write_bytes(b"x" * MIB)
    os.link(tmp_path / "sub" / "a", tmp_path / "b")
    (tmp_path / "outside").symlink_to("/usr")
    used = folder_bytes(tmp_path)
    assert MIB <= used < 2 * MIB  # the hard link once, the link not followed
    assert folder_bytes(tmp_path / "missing") == 0


def test_the_sandbox_command_carries_the_kernel_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """prlimit right before the worker's program (after setpriv as root); RLIMIT_NPROC only
    in a user namespace of the worker's own, one past the bound and bwrap's init."""
    policy = SandboxPolicy(tmp_path, tmp_path / "data")
    bounds = WorkerLimits(processes=8, open_files=64, data_bytes=MIB)
    monkeypatch.setattr(sandbox, "dropped_id", lambda: 65534)
    argv = sandbox.command("bwrap", policy, ["worker"], tmp_path, None, bounds)
    tail = argv[argv.index(sandbox.SETPRIV) :]
    limits = tail[tail.index("--", tail.index("--no-new-privs")) + 1 :]
    assert limits[1:] == ["--nofile=64", f"--fsize={MIB + 1}", "--", "worker"]
    assert os.path.basename(limits[0]) == "prlimit"
    monkeypatch.setattr(sandbox, "dropped_id", lambda: None)
    argv = sandbox.command("bwrap", policy, ["worker"], tmp_path, None, bounds)
    assert argv[-4:] == [f"--fsize={MIB + 1}", "--nproc=10", "--", "worker"]
    if sandbox._sizes(support().program or "bwrap"):
        argv = sandbox.command(support().program, policy, ["worker"], tmp_path, None, bounds)
        size = argv.index("--size")
        assert argv[size : size + 4] == ["--size", str(MIB), "--tmpfs", "/tmp"]


def test_an_mcp_server_gets_the_bounds(tmp_path: Path) -> None:
    bounds = WorkerLimits(open_files=64)
    server = ServerConfig("fs", "python3", ("-V",), {}, tmp_path)
    launch = Launch(server, tmp_path / "data", None, bounds=bounds)
    assert launch.spec.limits == bounds
    assert "--nofile=64" in launch.argv()


def test_the_kit_starts_an_mcp_server_under_the_bounds_it_was_given(tmp_path: Path) -> None:
    server = McpServer("fs", ("python3", "-V"), tmp_path, {}, (), "--mcp-command", scratch=tmp_path)
    server.bounds = WorkerLimits(open_files=64)
    assert server.spec().limits == server.bounds
    assert "--nofile=64" in server.spec().command()


async def test_a_worker_declaring_nothing_over_the_process_bound_gets_resource_limit(
    manager: PluginProcessManager, tmp_path: Path
) -> None:
    manager.register(replace(greedy_spec(tmp_path), limits=WorkerLimits(processes=3)))
    with pytest.raises(WorkerResourceLimit) as raised:
        await manager.invoke(PLUGIN, "run", {"children": 3, "seconds": 60}, caller_timeout=60)
    overrun = raised.value.overrun
    assert (overrun.limit, overrun.declared, overrun.bound) == ("processes", 3, True)
    assert overrun.seen > 3
    assert raised.value.message.startswith("RESOURCE_LIMIT: Worker exceeded its process limit")


async def test_a_declared_max_processes_overrides_the_bound(
    manager: PluginProcessManager, tmp_path: Path
) -> None:
    spec = replace(greedy_spec(tmp_path), limits=WorkerLimits(processes=8))
    manager.register(spec, ResourceLimits(max_processes=2))
    with pytest.raises(WorkerResourceLimit) as raised:
        await manager.invoke(PLUGIN, "run", {"children": 2, "seconds": 60}, caller_timeout=60)
    assert (raised.value.overrun.declared, raised.value.overrun.bound) == (2, False)


async def test_a_worker_filling_its_data_folder_gets_resource_limit(
    manager: PluginProcessManager, tmp_path: Path
) -> None:
    """Several files, none of them too big alone: the watcher sums the folder."""
    manager.register(replace(greedy_spec(tmp_path), limits=WorkerLimits(data_bytes=MIB)))
    params = {"write": MIB // 2, "files": 4, "seconds": 60}
    with pytest.raises(WorkerResourceLimit) as raised:
        await manager.invoke(PLUGIN, "run", params, caller_timeout=60)
    overrun = raised.value.overrun
    assert (overrun.limit, overrun.declared) == ("data", MIB)
    assert overrun.seen > MIB
    assert "data folder limit" in raised.value.message


async def test_one_file_stops_one_byte_past_the_data_bound(
    manager: PluginProcessManager, tmp_path: Path
) -> None:
    """The kernel's file size cap: the write past it fails (EFBIG), and the folder is over
    its bound, which ends the worker with RESOURCE_LIMIT."""
    manager.register(replace(greedy_spec(tmp_path), limits=WorkerLimits(data_bytes=MIB)))
    params = {"write": 8 * MIB, "seconds": 60}
    with pytest.raises(WorkerResourceLimit) as raised:
        await manager.invoke(PLUGIN, "run", params, caller_timeout=60)
    assert raised.value.overrun.limit == "data"
    assert (tmp_path / "data" / "written-0").stat().st_size == MIB + 1


async def test_a_raised_data_bound_lets_the_same_writes_through(
    manager: PluginProcessManager, tmp_path: Path
) -> None:
    manager.register(replace(greedy_spec(tmp_path), limits=WorkerLimits(data_bytes=8 * MIB)))
    answer = await manager.invoke(PLUGIN, "run", {"write": MIB // 2, "files": 4}, caller_timeout=60)
    assert (answer["written"], answer["stopped"]) == (2 * MIB, "")


@pytest.mark.parametrize(("open_files", "got"), [(64, range(1, 64)), (512, range(200, 201))])
async def test_open_files_stop_at_the_bound(
    manager: PluginProcessManager, tmp_path: Path, open_files: int, got: range
) -> None:
    manager.register(replace(greedy_spec(tmp_path), limits=WorkerLimits(open_files=open_files)))
    answer = await manager.invoke(PLUGIN, "run", {"open": 200}, caller_timeout=60)
    assert answer["opened"] in got
    assert answer["refused"] == ("Too many open files" if open_files < 200 else "")


@needs_sandbox
async def test_the_host_bounds_a_sandboxed_worker_declaring_nothing(
    make_host: MakeHost, tmp_path: Path
) -> None:
    """The host's --worker-limit reaches the sandboxed worker of a plugin that declares no
    resources: over its data bound, the call fails with RESOURCE_LIMIT; over the open-file
    bound, the kernel refuses; a raised bound lets the same call through."""
    root = write_worker_plugin(tmp_path / "src", PLUGIN, "greedy_run", "greedy")
    host = make_host(
        data_dir=tmp_path / "host", worker_limits=configured(["data=1M", "open-files=64"])
    )
    await host.install(root)
    output = await call_tool(host, "greedy_run", {"write": MIB // 2, "files": 4, "seconds": 30})
    error = _error(output)
    assert error.startswith("RESOURCE_LIMIT: Worker exceeded its data folder limit"), error
    assert "/1048576 bytes" in error
    (host.plugin_data(PLUGIN) / "written-0").unlink()  # what it wrote stays; make room
    for index in range(1, 4):
        (host.plugin_data(PLUGIN) / f"written-{index}").unlink(missing_ok=True)
    opened = await call_tool(host, "greedy_run", {"open": 100})
    assert opened["refused"] == "Too many open files", opened
    await host.close()
    raised = make_host(data_dir=tmp_path / "host", worker_limits=configured(["data=8M"]))
    output = await call_tool(raised, "greedy_run", {"write": MIB // 2, "files": 4, "open": 100})
    assert (output["written"], output["opened"]) == (2 * MIB, 100), output


@needs_sandbox
async def test_the_host_bounds_the_processes_of_a_sandboxed_worker(
    make_host: MakeHost, tmp_path: Path
) -> None:
    root = write_worker_plugin(tmp_path / "src", PLUGIN, "greedy_run", "greedy")
    host = make_host(data_dir=tmp_path / "host", worker_limits=configured(["processes=4"]))
    await host.install(root)
    error = _error(await call_tool(host, "greedy_run", {"children": 4, "seconds": 30}))
    assert error.startswith("RESOURCE_LIMIT: Worker exceeded its process limit"), error
    assert "/4; the host's --worker-limit processes" in error


def _error(output: Any) -> str:
    """The error text of a failed call's output."""
    if isinstance(output, str):
        output = json.loads(output)
    assert isinstance(output, dict) and "error" in output, output
    return str(output["error"])


def test_the_host_command_line_sets_the_bounds() -> None:
    args = build_parser().parse_args(
        ["serve", "--worker-limit", "processes=512", "--worker-limit", "data=2G"]
    )
    assert DEFAULT_LIMITS.with_settings(args.worker_limit) == WorkerLimits(512, 4096, 2 * GIB)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--worker-limit", "memory=1G"])
