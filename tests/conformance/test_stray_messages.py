"""FY-WRK-007 says where a stray stdout line came in words a reader can act on: a step's
plain name, and a line written at the worker's exit as that, not as the last call's fault."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURE_PLUGINS, copy_plugin


def stray_messages(run_kit, tmp_path: Path, fixture: str) -> str:
    plugin = copy_plugin(FIXTURE_PLUGINS / fixture, tmp_path)
    result = run_kit([plugin], "-m", "worker", "-k", ":FY-WRK-007:")
    assert result.statuses()["FY-WRK-007"] == "failed"
    return "\n".join(f["message"] for f in result.findings("FY-WRK-007"))


def test_a_step_is_named_plainly(run_kit, tmp_path: Path) -> None:
    """The fixture logs to stdout as it starts: during the handshake, a step of the probe."""
    messages = stray_messages(run_kit, tmp_path, "FY-WRK-007-logs-on-stdout")

    assert "in the protocol probe, during step 'handshake': " in messages
    assert "Step." not in messages


def test_a_line_at_the_exit_is_told_as_such(run_kit, tmp_path: Path) -> None:
    """The fixture's banner reaches stdout only when it exits: the finding says so, and
    names the last call as context only."""
    messages = stray_messages(run_kit, tmp_path, "FY-WRK-007-banner-at-exit")

    assert "in the protocol probe, at its exit, after its stdin was closed: " in messages
    assert (
        "calling each tool once), at the worker's exit, after its stdin closed (the last call "
        "before: tool 'fixture_greet' (method 'greet') with {"
    ) in messages
    assert "after calling" not in messages
