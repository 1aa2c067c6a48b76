"""A traceback a worker prints at every call is quoted once, with how many times it came.

A handler that raises on an input prints one traceback per call of the property search, and
the finding's stderr was the same traceback many times over (15 in one report), its first
copy cut in two.
"""

from __future__ import annotations

from pathlib import Path

from conformance.repeats import collapsed
from tests.conftest import FIXTURE_PLUGINS, copy_plugin

TRACEBACK = "Traceback (most recent call last):"


def test_a_repeated_block_is_kept_once_with_its_count() -> None:
    block = [TRACEBACK, '  File "worker.py", line 3', "IndexError: string index out of range"]
    lines = ["starting", *block * 15, "done", "done"]
    assert collapsed(lines) == [
        "starting",
        *block,
        "[the 3 lines above came 15 times in a row]",
        "done",
        "[the line above came 2 times in a row]",
    ]
    assert collapsed(["a", "b", "a"]) == ["a", "b", "a"]


def test_a_crash_at_every_call_quotes_its_traceback_once(run_kit, tmp_path: Path) -> None:
    plugin = copy_plugin(FIXTURE_PLUGINS / "FY-TOOL-001-answers-internal-error", tmp_path)
    result = run_kit([plugin], "-k", ":FY-TOOL-001:")
    (finding,) = result.findings("FY-TOOL-001")
    stderr = finding["message"].split("worker stderr (last lines):")[1]
    assert stderr.count(TRACEBACK) == 1, stderr  # the search printed it at every crash
    assert "IndexError: string index out of range" in stderr
