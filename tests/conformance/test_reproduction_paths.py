"""A go or java worker's `reproduce:` line names only what the author has: the plugin folder.

The kit runs a copy of the package in a scratch folder it removes at the end of the run, a go
worker without its executable bit from a copy of its own there, and java with its temporary
folder there; the printed line named those folders, so pasted after the run it failed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.fengyu.harness import ToolHarness
from conformance.fengyu.services import private_copy
from reference_host.process.launch import manifest_spec
from tests.conftest import DEADLINES

# Answers each request line with a result naming the folder it ran in.
GO_LIKE_WORKER = """#!/usr/bin/env python3
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"ran": "yes"}}))
"""


def _harness(tmp_path: Path, runtime: str, artifact: str, text: str) -> Iterator[ToolHarness]:
    author = tmp_path / "author" / "plugin"
    (author / "backend").mkdir(parents=True)
    (author / artifact).write_text(text, encoding="utf-8")
    manifest = {"id": "fixture.repro", "backend": {"runtime": runtime, "protocolVersion": 4}}
    kit = tmp_path / "kit"  # the kit's scratch folder: gone once the run ends
    package = kit / "plugins" / "fixture.repro"
    private_copy(author, package)
    data = kit / "plugin-data" / "fixture.repro"
    spec = manifest_spec(
        "fixture.repro",
        package,
        manifest,
        data,
        scratch=kit / "runtime-bin" / "fixture.repro",
        hidden=(kit,),
    )
    harness = ToolHarness(spec, folder=author, deadlines=DEADLINES)
    yield harness
    harness.close()


@pytest.fixture
def go_harness(tmp_path: Path) -> Iterator[ToolHarness]:
    """A go worker without its executable bit, as a zip or a checkout may leave it."""
    yield from _harness(tmp_path, "go", "backend/worker", GO_LIKE_WORKER)


def test_a_go_workers_line_runs_the_authors_file(go_harness: ToolHarness, tmp_path: Path) -> None:
    request = {"jsonrpc": "2.0", "id": "repro-1", "method": "greet", "params": {}}
    line = go_harness.reproduction(request)
    assert str(tmp_path / "kit") not in line, line
    assert "./backend/worker" in line
    author = tmp_path / "author" / "plugin"
    assert not os.access(author / "backend" / "worker", os.X_OK)

    done = subprocess.run(
        ["sh", "-c", line], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60
    )

    assert [json.loads(out) for out in done.stdout.splitlines()] == [
        {"jsonrpc": "2.0", "id": "repro-1", "result": {"ran": "yes"}}
    ], done.stderr
    assert os.access(author / "backend" / "worker", os.X_OK)  # as FengYu sets the bit


def test_a_java_workers_line_names_no_folder_of_the_kit(tmp_path: Path) -> None:
    if shutil.which("java") is None:
        pytest.skip("java is not on PATH")
    for harness in _harness(tmp_path, "java", "backend/worker.jar", "not a jar"):
        line = harness.reproduction({"jsonrpc": "2.0", "id": "repro-1", "method": "m"})
        assert str(tmp_path / "kit") not in line, line
        assert "-jar backend/worker.jar" in line
        assert f"cd {tmp_path / 'author' / 'plugin'}" in line
