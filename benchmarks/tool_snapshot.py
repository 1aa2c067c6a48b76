"""Section 2: the tool registry's snapshot with 1 to 1000 installed plugins (6 tools each).

The baseline is the cold snapshot: a fresh ToolRegistry over the same store, which reads
every enabled plugin's row (manifest included) and builds its callbacks. Against it:

- unchanged: the same registry again with nothing changed (what every chat pays);
- after re-install: one plugin upgraded (host.plugins.install of its folder again), so its
  revision changed: exactly that plugin is re-read;
- after disable: one plugin disabled: it drops out, nothing is re-read.

The registry's factory and Store.plugin are wrapped with counters, so the table also shows
how many manifests each kind of snapshot re-read (checked: 0, 1 and 0).

Plugins are generated FengYu v2 manifests without a worker, in temporary folders. Up to
INSTALL_LIMIT they are installed with host.plugins.install (validator None). Above it they are
recorded through the Store API in one transaction, as install would record them: install
checks tool-name clashes against every enabled plugin, which makes n installs O(n^2)
(about a minute for 1000 here). Installation is never what is timed.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import Row, Settings, median
from reference_host.host import Host, HostConfig
from reference_host.tools.snapshot import ToolRegistry

SECTION = "2 registry snapshot"
TOOLS_PER_PLUGIN = 6
INSTALL_LIMIT = 100
TARGET_UNCHANGED = 1 / 20  # unchanged / cold at 1000 plugins, at most


def manifest(index: int) -> dict[str, Any]:
    """A FengYu v2 manifest with TOOLS_PER_PLUGIN tools and no worker."""
    prefix = f"p{index:04d}"
    methods = {
        f"{prefix}_m{t}": {
            "description": f"Method {t} of plugin {index}.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "Some text."},
                    "count": {"type": "integer", "minimum": 0},
                    "filePath": {"type": "string", "description": "A file to read."},
                },
                "required": ["text"],
                "additionalProperties": False,
            },
            "outputSchema": {
                "type": "object",
                "properties": {"success": {"type": "boolean"}, "summary": {"type": "string"}},
                "required": ["success"],
            },
        }
        for t in range(TOOLS_PER_PLUGIN)
    }
    return {
        "schemaVersion": 2,
        "id": f"bench.plugin.{prefix}",
        "name": f"Bench plugin {index}",
        "description": "A generated plugin for the registry benchmark.",
        "version": "1.0.0",
        "rpc": {"methods": methods},
        "aiTools": [
            {
                "name": f"{prefix}_tool{t}",
                "description": f"Tool {t} of plugin {index}.",
                "method": f"{prefix}_m{t}",
                "effect": "read",
            }
            for t in range(TOOLS_PER_PLUGIN)
        ],
    }


class Counter:
    """Counts calls of a wrapped function."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.fn(*args, **kwargs)


def _populate(host: Host, sources: Path, seeded: Path, count: int) -> str:
    """Create count plugin folders and install or record them; returns how."""
    folders = []
    for index in range(count):
        folder = sources / f"p{index:04d}"
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(json.dumps(manifest(index)), encoding="utf-8")
        folders.append(folder)
    if count <= INSTALL_LIMIT:
        for folder in folders:
            host.plugins.install(folder)
        return "host.plugins.install"
    with host.store.transaction() as db:
        for index, folder in enumerate(folders):
            data = manifest(index)
            root = seeded / data["id"]  # what install copies to; an upgrade removes it
            shutil.copytree(folder, root)
            host.store.put_plugin(
                db,
                plugin_id=data["id"],
                profile="fengyu-v2",
                version=data["version"],
                root=root,
                manifest=data,
                enabled=True,
            )
            host.store.own_tools(db, data["id"], [])
            host.store.set_tools_active(db, data["id"], True)
    return "Store.put_plugin, one transaction"


def _measure_size(settings: Settings, count: int, temp: Path) -> tuple[list[Row], str]:
    host = Host(HostConfig(data_dir=temp / "host"), validator=None)
    try:
        how = _populate(host, temp / "sources", temp / "seeded", count)
        factory = Counter(host._callbacks)
        reads = Counter(host.store.plugin)
        host.store.plugin = reads  # type: ignore[method-assign]  # instance attribute wins

        def fresh() -> ToolRegistry:
            return ToolRegistry(host.store, [], factory)

        def counted(registry: ToolRegistry) -> tuple[float, int, int]:
            """One timed snapshot and the factory / Store.plugin calls it made."""
            factory.calls = reads.calls = 0
            start = time.perf_counter()
            snapshot = registry.snapshot()
            elapsed = time.perf_counter() - start
            assert len(snapshot.callbacks) in (
                count * TOOLS_PER_PLUGIN,
                (count - 1) * TOOLS_PER_PLUGIN,
            )
            return elapsed, factory.calls, reads.calls

        reps = settings.reps
        for _ in range(settings.warmup):
            fresh().snapshot()
        cold = [counted(fresh()) for _ in range(reps)]

        registry = fresh()
        registry.snapshot()
        unchanged_counts = counted(registry)
        batch = 2000 if not settings.quick else 500
        unchanged = []
        for _ in range(reps):
            start = time.perf_counter()
            for _ in range(batch):
                registry.snapshot()
            unchanged.append((time.perf_counter() - start) / batch)

        target_id = manifest(count // 2)["id"]
        target_folder = temp / "sources" / f"p{count // 2:04d}"
        reinstalled, disabled = [], []
        for _ in range(reps):
            host.plugins.install(target_folder)  # an upgrade: same id, revision bumped
            reinstalled.append(counted(registry))
            host.plugins.disable(target_id)
            disabled.append(counted(registry))
            host.plugins.enable(target_id)
            registry.snapshot()
    finally:
        asyncio.run(host.close())

    def counts(samples: list[tuple[float, int, int]]) -> str:
        made = sorted({s[1] for s in samples})
        read = sorted({s[2] for s in samples})
        return f"factory calls {_one(made)}, Store.plugin calls {_one(read)}"

    cold_median = median([s[0] for s in cold])
    label = f"{count} plugin{'s' if count > 1 else ''}"
    rows = [
        Row(
            SECTION,
            f"{label}: cold snapshot (baseline)",
            cold_median,
            "cold",
            cold_median,
            note=counts(cold),
        ),
        Row(
            SECTION,
            f"{label}: unchanged / cold",
            median(unchanged),
            "cold",
            cold_median,
            unit="us",
            target="< 1/20" if count == 1000 else "",
            met=median(unchanged) / cold_median < TARGET_UNCHANGED if count == 1000 else None,
            note=counts([unchanged_counts]),
        ),
        *(
            Row(
                SECTION,
                f"{label}: after one {change} / cold",
                median([s[0] for s in samples]),
                "cold",
                cold_median,
                note=counts(samples),
            )
            for change, samples in (("re-install", reinstalled), ("disable", disabled))
        ),
    ]
    _check_counts(count, cold, [unchanged_counts], reinstalled, disabled)
    return rows, f"{label}: {how}"


def _one(values: list[int]) -> str:
    return str(values[0]) if len(values) == 1 else "/".join(map(str, values))


Sample = tuple[float, int, int]


def _check_counts(
    count: int,
    cold: list[Sample],
    unchanged: list[Sample],
    reinstalled: list[Sample],
    disabled: list[Sample],
) -> None:
    """The re-read counts the registry promises; a violation is a bug, not a slow run."""
    problems = []
    if any(s[1] != count for s in cold):
        problems.append(f"cold snapshot did not build all {count} plugins")
    if any(s[1] or s[2] for s in unchanged):
        problems.append("the unchanged snapshot re-read manifests")
    if any(s[1] != 1 or s[2] != 1 for s in reinstalled):
        problems.append("the snapshot after one re-install did not re-read exactly one")
    if any(s[1] or s[2] for s in disabled):
        problems.append("the snapshot after one disable re-read manifests")
    if problems:
        raise AssertionError("; ".join(problems))


def run(settings: Settings) -> tuple[list[Row], list[str]]:
    sizes = (1, 10, 100) if settings.quick else (1, 10, 100, 1000)
    rows: list[Row] = []
    setups = []
    for count in sizes:
        with tempfile.TemporaryDirectory(prefix="bench-registry-") as temp:
            size_rows, how = _measure_size(settings, count, Path(temp))
        rows.extend(size_rows)
        setups.append(how)
    notes = [
        f"{TOOLS_PER_PLUGIN} tools per plugin; plugins set up with " + "; ".join(setups),
        "unchanged: median of batches of back-to-back snapshot() calls, per call",
    ]
    return rows, notes
