"""The benchmarks run whole: every section's quick form ends with a table and leaves nothing
running, and the SSE section's scripted model stays within the host's limits per chat.

No figure is asserted here (speed lives in benchmarks/); only that each section runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.__main__ import SECTIONS
from benchmarks.sse import in_process, model, new_host
from reference_host.agent.loop import MAX_CALLS_PER_TURN, MAX_STEPS
from tests.conftest import REPO

QUICK_TIMEOUT = 600.0  # a hang guard: the quick form takes well under a minute


def test_the_sse_model_spreads_its_calls_over_turns_the_host_allows() -> None:
    turns = model(1000).turns
    calls = [call for turn in turns for call in turn.tool_calls]
    assert len(calls) == 1000 and len({call.id for call in calls}) == 1000
    assert all(len(turn.tool_calls) <= MAX_CALLS_PER_TURN for turn in turns)
    assert len(turns) <= MAX_STEPS
    assert turns[-1].text and not turns[-1].tool_calls


async def test_the_sse_chat_of_1000_calls_runs_to_its_answer(tmp_path: Path) -> None:
    """The in-process baseline: every call and result, the answer's token and done."""
    host = new_host(tmp_path)
    try:
        timing = await in_process(host, 1000)
    finally:
        await host.close()
    assert timing.events == 2 * 1000 + 2


@pytest.mark.long
def test_the_quick_form_of_every_section_runs_to_the_end(tmp_path: Path) -> None:
    results = tmp_path / "results.md"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--output", str(results)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=QUICK_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    table = results.read_text("utf-8")
    sections = {int(n) for n in re.findall(r"^\| (\d+)\. ", table, re.MULTILINE)}
    assert len(sections) == len(SECTIONS), table
    assert "- left running after the run: nothing" in table
