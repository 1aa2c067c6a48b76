"""A strict run fails when effect checks could not run on this machine (no bubblewrap or
strace): it passed before, with every FY-EFF item skipped. --conformance-allow-unobserved
accepts such a run, as every run did before."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance.fengyu import syscall_trace
from tests.conftest import FIXTURE_PLUGINS

PLUGIN = FIXTURE_PLUGINS / "_fengyu-python-sdk"
SELECTED = ("-k", "FY-EFF-001 or FY-MAN-001")


@pytest.fixture
def no_strace(monkeypatch: pytest.MonkeyPatch) -> str:
    """This machine as one without strace: the kit cannot see what a tool tries."""
    monkeypatch.setattr(syscall_trace, "strace_program", lambda: "")
    reason = syscall_trace.effects_unseen()
    assert reason
    return reason


def test_strict_fails_a_run_that_could_not_observe_effects(
    no_strace: str, run_kit, tmp_path: Path
) -> None:
    plugin = shutil.copytree(PLUGIN, tmp_path / PLUGIN.name)
    lenient = run_kit([plugin], *SELECTED)
    strict = run_kit([plugin], *SELECTED, "--conformance-strict")
    allowed = run_kit([plugin], *SELECTED, "--conformance-strict", "--conformance-allow-unobserved")

    assert lenient.result.ret == 0
    assert allowed.result.ret == 0
    assert strict.result.ret == 1
    skipped = [r for r in strict.report["results"] if r["requirement"] == "FY-EFF-001"]
    assert skipped and all(r["reason"] == no_strace for r in skipped)
    text = strict.result.stdout.str()
    assert f"{len(skipped)} x {no_strace}" in text
    assert "--conformance-allow-unobserved" in text
    assert "checks that could not run" not in allowed.result.stdout.str()
