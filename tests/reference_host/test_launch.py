"""Launch order (spec: fengyu-worker.md#starting-the-worker) and timeout precedence
(spec: fengyu-worker.md#timeouts-and-the-end-of-input)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reference_host.process.launch import MissingArtifact, WorkerSpec, manifest_spec, worker_command
from reference_host.process.sandbox import SandboxPolicy, support
from reference_host.process.timeouts import effective_timeout
from reference_host.process.worker_errors import WorkerLaunchError


def make_worker(root: Path, mode: int = 0o755) -> Path:
    (root / "backend").mkdir(exist_ok=True)
    worker = root / "backend" / "worker"
    worker.write_text("#!/bin/sh\n")
    worker.chmod(mode)
    return worker


LEGACY: dict[str, object] = {"schemaVersion": 2}


def runtime(name: str, version: int | None = 4) -> dict[str, object]:
    backend: dict[str, object] = {"runtime": name}
    if version is not None:
        backend["protocolVersion"] = version
    return {"schemaVersion": 2, "version": "1.2.3", "backend": backend}


def test_override_wins(tmp_path: Path) -> None:
    make_worker(tmp_path)
    assert worker_command(tmp_path, LEGACY, "python3 -m my_worker --x 'a b'") == (
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
    assert worker_command(tmp_path, LEGACY, tmp=tmp_path / "tmp") == (
        "/usr/bin/java",
        f"-Djava.io.tmpdir={tmp_path / 'tmp'}",
        "-Djava.awt.headless=true",
        "-jar",
        "backend/worker.jar",
    )


def test_jar_without_java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "backend").mkdir()
    (tmp_path / "backend" / "worker.jar").write_bytes(b"PK")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(WorkerLaunchError, match="needs java"):
        worker_command(tmp_path, LEGACY)


def test_legacy_executable(tmp_path: Path) -> None:
    worker = make_worker(tmp_path)
    assert worker_command(tmp_path, LEGACY) == (str(worker),)


def test_legacy_not_executable(tmp_path: Path) -> None:
    make_worker(tmp_path, 0o644)
    with pytest.raises(WorkerLaunchError, match="chmod"):
        worker_command(tmp_path, LEGACY)


def test_no_worker_says_what_fengyu_runs(tmp_path: Path) -> None:
    with pytest.raises(MissingArtifact, match=r"java -Djava\.awt\.headless=true -jar") as caught:
        worker_command(tmp_path, LEGACY)
    assert "no backend.runtime, so java" in caught.value.message


def test_python_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "backend").mkdir()
    (tmp_path / "backend" / "worker.py").write_text("")
    monkeypatch.delenv("FENGYU_PYTHON", raising=False)
    assert worker_command(tmp_path, runtime("python")) == ("python3", "-u", "backend/worker.py")
    monkeypatch.setenv("FENGYU_PYTHON", "/opt/py/bin/python3.12")
    assert worker_command(tmp_path, runtime("python"))[0] == "/opt/py/bin/python3.12"


def test_declared_runtime_has_no_legacy_fallback(tmp_path: Path) -> None:
    """An executable backend/worker does not stand in for a declared runtime's file."""
    make_worker(tmp_path)
    with pytest.raises(MissingArtifact, match=r"backend/worker.py is not in the package"):
        worker_command(tmp_path, runtime("python"))


def test_go_worker_without_its_bit_runs_from_a_copy(tmp_path: Path) -> None:
    """FengYu sets the executable bit itself; the kit and host set it on a copy of their
    own, never on the author's file."""
    worker = make_worker(tmp_path, 0o644)
    scratch = tmp_path / "scratch"
    (command,) = worker_command(tmp_path, runtime("go"), scratch=scratch)
    assert Path(command) == scratch / "worker" and os.access(command, os.X_OK)
    assert worker.stat().st_mode & 0o777 == 0o644


def test_go_worker_with_its_bit_runs_in_place(tmp_path: Path) -> None:
    worker = make_worker(tmp_path)
    assert worker_command(tmp_path, runtime("go"), scratch=tmp_path / "s") == (str(worker),)


def test_unknown_runtime(tmp_path: Path) -> None:
    with pytest.raises(WorkerLaunchError, match="'node' is not one FengYu runs"):
        worker_command(tmp_path, runtime("node"))


def test_manifest_spec_carries_the_handshake_facts(tmp_path: Path) -> None:
    (tmp_path / "backend").mkdir()
    (tmp_path / "backend" / "worker.py").write_text("")
    spec = manifest_spec("a.b", tmp_path, runtime("python", 1), tmp_path / "data")
    assert (spec.runtime, spec.protocol_version, spec.plugin_version) == ("python", 1, "1.2.3")
    (tmp_path / "legacy").mkdir()
    legacy = make_worker(tmp_path / "legacy")
    spec = manifest_spec("a.b", tmp_path / "legacy", LEGACY, tmp_path / "data")
    assert (spec.runtime, spec.protocol_version, spec.argv) == ("java", None, (str(legacy),))


def test_shell_command_is_a_reproduction(tmp_path: Path) -> None:
    spec = WorkerSpec("a.b", tmp_path, ("backend/worker", "--flag x"), tmp_path)
    assert spec.shell_command() == (
        f"cd {tmp_path} && FENGYU_PLUGIN_ID=a.b FENGYU_PLUGIN_ROOT=. backend/worker '--flag x'"
    )


WRITES_BESIDE_ITSELF = """import os, pathlib, sys
tmp = pathlib.Path(os.environ["TMPDIR"]) / "scratch.txt"
tmp.write_text("tmp is the worker's own")
try:
    pathlib.Path("written-by-the-worker.txt").write_text("x")
except OSError as exc:
    print(f"refused: {exc.strerror}")
"""


@pytest.mark.skipif(
    not support().available and not os.environ.get("REQUIRE_SANDBOX"),
    reason=f"no worker sandbox here: {support().reason}",
)
def test_a_confined_reproduction_refuses_what_the_sandbox_refused(tmp_path: Path) -> None:
    """A write into the plugin folder, refused in the kit's sandbox, must be refused when the
    printed line is pasted too, and not land in the author's folder; TMPDIR stays writable."""
    (tmp_path / "worker.py").write_text(WRITES_BESIDE_ITSELF)
    policy = SandboxPolicy(tmp_path, tmp_path / "data")
    spec = WorkerSpec("a.b", tmp_path, (sys.executable, "worker.py"), tmp_path, sandbox=policy)
    line = spec.shell_command(confined=True)

    done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert "refused: Read-only file system" in done.stdout
    assert not (tmp_path / "written-by-the-worker.txt").exists()
    assert spec.shell_command(confined=False) == spec.shell_command()


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


def test_a_protocol_version_written_4_0_is_4(tmp_path: Path) -> None:
    """JSON Schema takes 4.0 as the integer 4, so the handshake must be sent for it too."""
    (tmp_path / "backend").mkdir()
    (tmp_path / "backend" / "worker.py").write_text("")
    manifest = runtime("python")
    manifest["backend"]["protocolVersion"] = 4.0  # type: ignore[index]
    assert manifest_spec("a.b", tmp_path, manifest, tmp_path / "data").protocol_version == 4


def test_a_linked_runtime_file_is_not_started(tmp_path: Path) -> None:
    """A link could point anywhere; FengYu and the host install no package holding one."""
    outside = tmp_path / "outside.py"
    outside.write_text("")
    root = tmp_path / "plugin"
    (root / "backend").mkdir(parents=True)
    (root / "backend" / "worker.py").symlink_to(outside)
    with pytest.raises(MissingArtifact, match="is a symbolic link"):
        worker_command(root, runtime("python"))


def test_a_go_copy_replaces_the_old_one_a_worker_may_still_run(tmp_path: Path) -> None:
    worker = make_worker(tmp_path, 0o644)
    scratch = tmp_path / "scratch"
    (first,) = worker_command(tmp_path, runtime("go"), scratch=scratch)
    running = Path(first).stat().st_ino
    worker.write_text("#!/bin/sh\necho v2\n")
    (second,) = worker_command(tmp_path, runtime("go"), scratch=scratch)
    assert first == second and Path(second).stat().st_ino != running
    assert Path(second).read_text() == "#!/bin/sh\necho v2\n"
    assert sorted(p.name for p in scratch.iterdir()) == ["worker"]
