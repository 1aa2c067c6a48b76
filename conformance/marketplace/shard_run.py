"""`plugin-conformance marketplace --targets FILE --shard I/N --output DIR`: one shard of a
marketplace night, each of its targets checked in a run of its own (run_target.py).

The shard's report (DIR/shard-I-of-N.json, with .md, .html and .sarif beside it) is the
targets' kit reports joined, each record's `plugin` the target's id (stable across nights,
what `diff` compares; the kit's own label stays in `label`), with a `targets` list saying how
each target's run ended and what it cost, and the `shard` it was (what `merge` checks)."""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from conformance import __version__
from conformance.marketplace.run_target import Limits, Outcome, run_target
from conformance.marketplace.targets import Target
from conformance.report import write_document
from conformance.shards import Shard
from plugin_spec.json_types import JsonArray, JsonObject, as_object, loads, objects_in


def shard_path(output: Path, shard: Shard) -> Path:
    return output / f"shard-{shard.index}-of-{shard.count}"


def run_shard(
    targets: list[Target],
    shard: Shard,
    output: Path,
    limits: Limits,
    *,
    jobs: int = 1,
    kit_args: list[str] | None = None,
    told: Callable[[Outcome], None] = lambda outcome: None,
) -> JsonObject:
    """Check the shard's targets (jobs at a time); write and return its report."""
    mine = [t for t in targets if shard.holds(t.id)]
    began = time.time()
    work = output / "targets"

    def one(target: Target) -> Outcome:
        outcome = run_target(target, work / _folder_name(target.id), limits, kit_args or [])
        told(outcome)
        return outcome

    with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
        outcomes = list(pool.map(one, mine))
    document = joined(outcomes, began, time.time())
    document["shard"] = {
        "index": shard.index,
        "count": shard.count,
        "assigned": [*sorted(t.id for t in mine)],
    }
    base = shard_path(output, shard)
    write_document(document, base=base, sarif=base.with_suffix(".sarif"))
    return document


def joined(outcomes: list[Outcome], began: float, ended: float) -> JsonObject:
    """The targets' reports as one, each record under its target's id."""
    plugins: JsonArray = []
    results: list[JsonObject] = []
    tools: JsonArray = []
    claims: JsonArray = []
    for outcome in outcomes:
        if outcome.report is None:
            continue
        report = as_object(loads(outcome.report.read_text("utf-8")))
        for plugin in objects_in(report.get("plugins")):
            plugins.append({**plugin, "label": outcome.id, "kit_label": plugin.get("label")})
        for record in objects_in(report.get("results")):
            results.append({**record, "plugin": outcome.id, "label": record.get("plugin")})
        tools += [{**t, "target": outcome.id} for t in objects_in(report.get("tools"))]
        claims += [{**c, "target": outcome.id} for c in objects_in(report.get("claims"))]
    results.sort(key=lambda r: (str(r["plugin"]), str(r["requirement"]), str(r.get("tool") or "")))
    summary: JsonObject = {str(s): n for s, n in Counter(r["status"] for r in results).items()}
    return {
        "kit": {"name": "ai-plugin-conformance", "version": __version__},
        "run": {
            "started": datetime.fromtimestamp(began, UTC).isoformat(timespec="seconds"),
            "seconds": round(ended - began, 3),
            "dir": str(Path.cwd()),
        },
        "summary": summary,
        "plugins": plugins,
        "results": [*results],
        "tools": tools,
        "claims": claims,
        "targets": [o.to_json() for o in sorted(outcomes, key=lambda o: o.id)],
    }


def _folder_name(target_id: str) -> str:
    """A folder name for the target's run: its id made safe, and a hash of it (two ids
    that read the same once made safe keep folders of their own)."""
    safe = "".join(c if c.isalnum() or c in "._-@+" else "_" for c in target_id)[:100]
    return f"{safe}-{hashlib.sha256(target_id.encode()).hexdigest()[:10]}"
