"""Launch order (spec: fengyu-worker.md#starting-the-worker) and timeout precedence
(spec: fengyu-worker.md#timeouts-and-the-end-of-input)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reference_host.process import WorkerLaunchError, WorkerSpec, effective_timeout, worker_command


def make_worker(root: Path, mode: int = 0o755) -> Path:
    (root / "backend").mkdir(exist_ok=True)
    worker = root / "backend" / "worker"
    worker.write_text("#!/bin/sh\n")
    worker.chmod(mode)
    return worker


def test_override_wins(tmp_path: Path) -> None:
    make_worker(tmp_path)
    assert worker_command(tmp_path, "python3 -m my_worker --x 'a b'") == (
        "python3",
        "-m",
        "my_worker",
        "--x",
        "a b",
    )


def test_jar_before_executable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_worker(tmp_path)
    (tmp_path / "backend" / "worker.jar").write_bytes(b"PK")
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/java" if name == "java" else None)
    assert worker_command(tmp_path) == ("/usr/bin/java", "-jar", "backend/worker.jar")


def test_jar_without_java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "backend").mkdir()
    (tmp_path / "backend" / "worker.jar").write_bytes(b"PK")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(WorkerLaunchError, match="needs java"):
        worker_command(tmp_path)


def test_executable(tmp_path: Path) -> None:
    worker = make_worker(tmp_path)
    assert worker_command(tmp_path) == (str(worker),)


def test_not_executable(tmp_path: Path) -> None:
    make_worker(tmp_path, 0o644)
    with pytest.raises(WorkerLaunchError, match="chmod"):
        worker_command(tmp_path)


def test_no_worker(tmp_path: Path) -> None:
    with pytest.raises(WorkerLaunchError, match="no worker in"):
        worker_command(tmp_path)


def test_shell_command_is_a_reproduction(tmp_path: Path) -> None:
    spec = WorkerSpec("a.b", tmp_path, ("backend/worker", "--flag x"), tmp_path)
    assert spec.shell_command() == (
        f"cd {tmp_path} && FENGYU_PLUGIN_ID=a.b FENGYU_PLUGIN_ROOT=. backend/worker '--flag x'"
    )


@pytest.mark.parametrize(
    ("tool", "caller", "backend", "expected"),
    [
        (5, 10, 20, 5.0),
        (None, 10, 20, 10.0),
        (None, None, 20, 20.0),
        (None, None, None, 60.0),
        (0, None, None, 1.0),
        (9999, None, None, 600.0),
        (None, 0.2, None, 1.0),
        (True, None, 30, 30.0),
    ],
)
def test_effective_timeout(tool, caller, backend, expected: float) -> None:
    assert effective_timeout(tool, caller, backend) == expected
