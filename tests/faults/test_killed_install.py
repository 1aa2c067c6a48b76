"""The host killed (SIGKILL) during an install: a child process creates a Host on a data
folder and installs (or upgrades) a big plugin; it is killed at chosen points (while it
starts, during the copy, between the copy and the transaction, inside the SQLite
transaction, while the old version's folder is removed, after it finished) and at random
moments. A new Host on the same folder must then show exactly the old state or exactly the
new one, the installed version's folder complete, no folder that no row points at, and a
database that passes PRAGMA integrity_check."""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import sys
from pathlib import Path

from reference_host.host import Host, HostConfig
from tests.faults.conftest import ProcessGuard
from tests.faults.support import write_worker_plugin

CHILD = Path(__file__).with_name("install_child.py")
PLUGIN = "test.faults.big"
KIB = 1024
FILES = {f"assets/blob-{n:03}.bin": bytes([n]) * 64 * KIB for n in range(100)}
FILES["assets/huge.bin"] = b"\x01" * 10 * KIB * KIB  # about 16 MiB in all
COPY_PAUSE = 0.001  # seconds after each copied file: the copy takes about 0.15 s
TX_PAUSE = 0.3  # seconds inside the transaction, and while the old folder is removed
SEED = 20240611

State = list[tuple[str, str, bool]]


def make_source(parent: Path, version: str) -> Path:
    return write_worker_plugin(parent, PLUGIN, "big_probe", version=version, extra_files=FILES)


def set_version(source: Path, version: str) -> None:
    manifest = json.loads((source / "manifest.json").read_text())
    manifest["version"] = version
    (source / "manifest.json").write_text(json.dumps(manifest, indent=2))


async def install_and_kill(data_dir: Path, source: Path, marker: str, count: int, delay: float):
    """Run the child until it printed marker count times (or for delay seconds when
    marker is "time"), SIGKILL it; returns the markers it printed."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        str(data_dir),
        str(source),
        str(COPY_PAUSE),
        str(TX_PAUSE),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    seen: list[str] = []
    try:
        if marker == "time":
            await asyncio.sleep(delay)
        else:
            while seen.count(marker) < count:
                line = await asyncio.wait_for(child.stdout.readline(), 60)
                assert line, f"the child ended before {marker}: {seen}"
                seen.append(line.decode().strip())
    finally:
        child.kill()
        rest, errors = await child.communicate()
    seen += rest.decode().split()
    assert child.returncode == -9, errors.decode()[-2000:]
    return seen


def folder_files(root: Path) -> dict[str, int]:
    """Every file's size by relative path (the manifest's only by name: its version
    changes from one install to the next)."""
    return {
        str(p.relative_to(root)): 0 if p.name == "manifest.json" else p.stat().st_size
        for p in root.rglob("*")
        if p.is_file()
    }


async def check_recovered(data_dir: Path, old: State, new: State, source: Path) -> State:
    """Open a new Host on data_dir and check it is in exactly the old or the new state."""
    host = Host(HostConfig(data_dir=data_dir))  # runs remove_orphans
    try:
        rows = host.store.plugins()
        state = [(row.id, row.version, row.enabled) for row in rows]
        assert state in (old, new), f"half a state: {state}, not {old} or {new}"
        expected_files = folder_files(source)
        for row in rows:
            manifest = json.loads((row.root / "manifest.json").read_text())
            assert manifest["version"] == row.version == row.manifest["version"]
            assert folder_files(row.root) == expected_files, f"{row.root} is incomplete"
        plugins = data_dir / "plugins"
        assert set(plugins.glob("*/*")) == {row.root for row in rows}, "orphan folders"
        assert [p.name for p in plugins.iterdir() if not p.is_dir()] == []
        assert list(plugins.glob(".*")) == [], "a staging folder was left"
        assert {p.name for p in plugins.iterdir()} == {row.id for row in rows}, "empty folders"
    finally:
        await host.close()
    with sqlite3.connect(data_dir / "host.sqlite3") as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    return state


async def disable(data_dir: Path) -> State:
    host = Host(HostConfig(data_dir=data_dir))
    try:
        await host.disable(PLUGIN)
        return [(row.id, row.version, row.enabled) for row in host.store.plugins()]
    finally:
        await host.close()


async def test_an_install_killed_at_any_point_leaves_the_old_or_the_new_state(
    tmp_path: Path, guard: ProcessGuard
) -> None:
    rng = random.Random(SEED)
    data_dir = tmp_path / "data"
    # (marker to kill at, how many of it, seconds to wait); "time" kills after the delay
    plan: list[tuple[str, int, float]] = [
        ("time", 0, rng.uniform(0.0, 0.3)),  # while the child starts
        ("copy-start", 1, 0),
        ("copied", 30, 0),
        ("staged", 1, 0),
        ("in-transaction", 1, 0),
        ("installed", 1, 0),  # v1 installed; then disabled below
        ("copied", 60, 0),
        ("in-transaction", 1, 0.02),
        ("removing-old", 1, 0),
        ("installed", 1, 0),
        *(("time", 0, rng.uniform(0.3, 0.8)) for _ in range(2)),
    ]
    state: State = []
    outcomes = []
    source = make_source(tmp_path / "src", "1.0.0")
    for step, (marker, count, delay) in enumerate(plan):
        version = f"1.0.{step}"
        set_version(source, version)
        enabled = state[0][2] if state else True
        new = [(PLUGIN, version, enabled)]
        seen = await install_and_kill(data_dir, source, marker, count, delay)
        where = seen[-1] if seen else "before started"
        state = await check_recovered(data_dir, state, new, source)
        outcomes.append((marker, where, "new" if state == new else "old"))
        if marker == "installed":
            assert state == new
            if step == 5:  # the upgrades that follow must keep it disabled
                state = await disable(data_dir)
        elif marker in ("copy-start", "copied", "staged", "in-transaction"):
            assert state != new, f"step {step}: killed at {where} yet installed"
        elif marker == "removing-old":
            assert state == new
    assert state[0][2] is False  # every upgrade after the disable kept it disabled
    guard.assert_none_left()
    killed_at = {where for _, where, _ in outcomes}
    assert {"copied", "in-transaction", "removing-old"} <= killed_at, outcomes


async def test_a_first_install_killed_leaves_no_empty_plugin_folder(
    tmp_path: Path, guard: ProcessGuard
) -> None:
    data_dir = tmp_path / "data"
    source = make_source(tmp_path / "src", "1.0.0")
    seen = await install_and_kill(data_dir, source, "in-transaction", 1, 0)
    assert seen[-1] == "in-transaction"
    await check_recovered(data_dir, [], [(PLUGIN, "1.0.0", True)], source)
    assert list((data_dir / "plugins").iterdir()) == []
