"""After a slow tool the run says which option lowers how often it is called (a 4 s tool
made a run take 5.5 minutes with no hint)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance import slow_tools
from conformance.slow_tools import slow_tool_hints
from tests.conftest import FIXTURE_PLUGINS

PLUGIN = FIXTURE_PLUGINS / "_fengyu-python-sdk"


def test_a_tool_whose_items_took_long_in_all_gets_the_hint() -> None:
    records = [
        {"plugin": "p", "suite": "tools", "tool": "slow", "seconds": 40.0},
        {"plugin": "p", "suite": "tools", "tool": "slow", "seconds": 30.0},
        {"plugin": "p", "suite": "tools", "tool": "quick", "seconds": 2.0},
        {"plugin": "p", "suite": "worker", "tool": None, "seconds": 300.0},
    ]
    (hint,) = slow_tool_hints(records, 25)
    assert hint.startswith("p tool 'slow': its 2 property items took 70 s in all")
    assert "--conformance-examples 5" in hint and "conformance_examples" in hint
    assert slow_tool_hints(records[2:], 25) == []


def test_the_run_prints_the_hint_after_its_slow_tools(
    run_kit, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every tool counts as slow here: the hint's place in the run, not a timing, is tested."""
    monkeypatch.setattr(slow_tools, "SLOW_SECONDS", 0.0)
    plugin = shutil.copytree(PLUGIN, tmp_path / PLUGIN.name)
    result = run_kit([plugin], "-k", "FY-TOOL-005", "--conformance-examples", "10")
    text = result.result.stdout.str()
    assert "slow tools" in text
    assert "tool 'sdk_greet'" in text and "--conformance-examples 5" in text
