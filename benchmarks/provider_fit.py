"""Section 7: judging a tool snapshot against the three providers' rules.

What `GET /api/tools/providers` and every kit run pay: `fits` over the snapshot (each tool
judged per provider, rewrites applied, then the whole request). The baseline is what
installing the same tools already costs: `Draft202012Validator.check_schema` on each input
schema, the metaschema check the kit's install validation runs. Measured on the tools of the
sample plugins and FengYu's official plugins, repeated to 600 tools (100 plugins of six).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from benchmarks.common import Row, Settings, median, timed
from conformance.checks.providers import judged
from conformance.profiles import load_plugin
from plugin_spec.plugin_folders import expand
from plugin_spec.providers.judge import fits

SECTION = "7 provider fit"
REPO = Path(__file__).resolve().parent.parent
FOLDERS = (
    REPO / "sample_plugins",
    REPO / "tests" / "data" / "fengyu_realworld" / "OfficialPlugins",
)
TARGET = 1.0  # fits / check_schema on the same schemas, at most: cheaper than install


def real_tools() -> list[tuple[str, Any]]:
    tools = []
    for root in expand(list(FOLDERS)):
        plugin = load_plugin(root)
        if plugin.load_error is None and plugin.tools:
            tools += [(t.name, t.schema) for t in judged(plugin)]
    return tools


def run(settings: Settings) -> tuple[list[Row], list[str]]:
    base = real_tools()
    count = 60 if settings.quick else 600
    tools = [
        (f"{name}_{i}", schema) for i in range(count // len(base) + 1) for name, schema in base
    ]
    tools = tools[:count]
    judged_times = timed(lambda: fits(tools), settings.reps, settings.warmup)
    checked_times = timed(
        lambda: [Draft202012Validator.check_schema(s) for _, s in tools],
        settings.reps,
        settings.warmup,
    )
    value, baseline = median(judged_times), median(checked_times)
    row = Row(
        SECTION,
        f"fits() on {count} real tool schemas, 3 providers",
        value,
        "check_schema of each",
        baseline,
        target=f"ratio <= {TARGET:g}",
        met=value / baseline <= TARGET,
        note=f"{len(base)} distinct schemas from the sample and official plugins",
    )
    return [row], []
