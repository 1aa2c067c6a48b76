"""The kit's set-up work per plugin does not grow with its tool count: what every tool item
needs from the whole manifest (the declared methods and their timeouts, the schema
validation) is computed once per plugin, and each tool's input space once per tool. A run
that recomputed them per item was quadratic: a 10,000-tool plugin's full run was 14 % done
after 300 s. Counted, not timed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.many_tools import write_plugin
from conformance.catalog import load_catalog
from conformance.checks import fengyu_manifest
from conformance.fengyu import services
from conformance.strategies import InputSpace

SIZES = (3, 30)


def counting(counts: Counter[str], name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        return func(*args, **kwargs)

    return wrapper


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    counted: Counter[str] = Counter()
    monkeypatch.setattr(
        services,
        "declared_methods",
        counting(counted, "declared_methods", services.declared_methods),
    )
    monkeypatch.setattr(
        fengyu_manifest, "validate", counting(counted, "validate", fengyu_manifest.validate)
    )
    monkeypatch.setattr(
        InputSpace, "of", classmethod(counting(counted, "input_space", InputSpace.of.__func__))
    )
    return counted


@pytest.mark.parametrize("tools", SIZES)
def test_full_run_computes_plugin_wide_facts_once(
    run_kit, tmp_path: Path, counts: Counter[str], tools: int
) -> None:
    plugin = write_plugin(tmp_path, tools)

    result = run_kit([plugin], "--conformance-examples", "2")

    # 30 tools and the 2 built-ins are more than the 20 Anthropic's strict mode takes at once
    warned = {"FY-PROV-002"} if tools + 2 > 20 else set()
    statuses = {r["status"] for r in result.report["results"] if r["requirement"] not in warned}
    assert statuses <= {"passed", "skipped", "not-applicable"}, result.result.stdout.str()[-3000:]
    assert {r["requirement"] for r in result.report["results"] if r["status"] == "warned"} == warned
    tool_items = [r for r in result.report["results"] if r["requirement"].startswith("FY-TOOL-")]
    per_tool = [
        rid
        for rid, r in load_catalog().items()
        if rid.startswith("FY-TOOL-") and r.per_tool and r.applies_to("fengyu-v2")
    ]
    assert Counter(r["requirement"] for r in tool_items) == dict.fromkeys(per_tool, tools)
    assert counts["declared_methods"] == 1
    assert counts["validate"] == 1
    # one per tool for its FY-TOOL items, plus FY-HOST-001's scripted call of one tool
    assert counts["input_space"] <= tools + 1
