"""No plugin can touch the kit's reports: last round's tamper attack, replayed on the real kit.

Last round a worker read the kit's arguments from /proc, double-forked, re-exec'd with an
empty environment (out of the process-lineage scan) and, about 2 s after pytest exited,
rewrote the --junitxml file and both --conformance-report files to say everything passed.
The fixture tests/fixtures/plugins/_tamper does exactly that at start and on each call, and
is told the paths besides (an omniscient attacker). The kit runs every worker in the
sandbox (its own PID namespace, ended with the kit, all but its data folder read-only), so
once the kit has exited nothing of the plugin is left, and the reports stay what it wrote.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from reference_host.process.sandbox import support
from tests.conftest import FIXTURE_PLUGINS

TAMPER = FIXTURE_PLUGINS / "_tamper"
GONE_WITHIN = 30.0  # bound on waiting for the plugin's processes to be gone
KIT_TIMEOUT = 600

ON_LINUX = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the attack and the scan read /proc"
)
SANDBOXED = pytest.mark.skipif(
    not support().available and not os.environ.get("REQUIRE_SANDBOX"),
    reason=f"no worker sandbox here: {support().reason}",
)


def processes_with(token: str) -> dict[int, str]:
    """pid -> command line of every other process whose command line or environment holds
    token (what the test put in the plugin's id, folder and the attacker's command)."""
    needle, found = token.encode(), {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                cmdline = f.read()
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as f:
                    environ = f.read()
            except PermissionError:
                environ = b""
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if needle in cmdline or needle in environ:
            found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode("utf-8", "replace")
    return found


def wait_until_gone(token: str) -> dict[int, str]:
    """Poll (bounded) until no process holds token; what is still there at the bound is
    killed, so the test leaves nothing running, and returned for the assertion."""
    deadline = time.monotonic() + GONE_WITHIN
    while (left := processes_with(token)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return left


def failed_in_markdown(markdown: str, plugin_id: str) -> str:
    """The failed column of the plugin's row in the Markdown report's summary table."""
    header = next(line for line in markdown.splitlines() if line.startswith("| plugin |"))
    column = [c.strip() for c in header.strip("|").split("|")].index("failed")
    row = next(line for line in markdown.splitlines() if line.startswith(f"| {plugin_id} |"))
    return [c.strip() for c in row.strip("|").split("|")][column]


def tampering_plugin(tmp_path: Path, reports: list[Path]) -> tuple[Path, str]:
    """A copy of the _tamper fixture told the report paths, and the token it carries in its
    id, its folder's name and its rewriter's command line."""
    token = f"tamper{uuid.uuid4().hex}"
    plugin = tmp_path / f"plugin-{token}"
    shutil.copytree(TAMPER, plugin)
    manifest = json.loads((plugin / "manifest.json").read_text("utf-8"))
    manifest["id"] = f"fixture.{token}"
    (plugin / "manifest.json").write_text(json.dumps(manifest, indent=2), "utf-8")
    (plugin / "targets.json").write_text(
        json.dumps({"token": token, "paths": [str(p) for p in reports]}), "utf-8"
    )
    return plugin, token


def rewriters(token: str) -> set[int]:
    """The attacker's detached rewriters running now (python3 -c ... token ...)."""
    return {pid for pid, cmd in processes_with(token).items() if cmd.startswith("python3 -c ")}


@SANDBOXED
def test_no_worker_outlives_the_kit_or_rewrites_its_reports(tmp_path: Path) -> None:
    """The kit's exit leaves no process of the plugin, and the junit XML, JSON and Markdown
    reports are byte for byte what the kit wrote, and say the plugin failed. While the kit
    runs, the test looks for the attacker's rewriters: the attack did start."""
    out = tmp_path / "out"
    out.mkdir()
    junit, report = out / "j.xml", out / "r"
    reports = [junit, report.with_suffix(".json"), report.with_suffix(".md")]
    plugin, token = tampering_plugin(tmp_path, reports)
    argv = [
        *(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:asyncio"),
        *("--plugin-dir", str(plugin), "--junitxml", str(junit)),
        *("--conformance-report", str(report)),
    ]
    log = tmp_path / "kit.log"
    started: set[int] = set()
    with log.open("wb") as output:
        kit = subprocess.Popen(argv, cwd=out, stdout=output, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + KIT_TIMEOUT
        while kit.poll() is None and time.monotonic() < deadline:
            started |= rewriters(token)
            time.sleep(0.1)
        if kit.poll() is None:
            kit.kill()
        returncode = kit.wait()
    at_exit = {path: path.read_bytes() if path.exists() else b"" for path in reports}
    left = wait_until_gone(token)
    afterwards = {path: path.read_bytes() if path.exists() else b"" for path in reports}

    kit_output = log.read_text("utf-8", "replace")[-6000:]
    assert returncode == 1, kit_output
    assert started, "the worker never started its rewriter: the attack was not tried"
    assert left == {}, f"processes of the plugin outlived the kit: {left}"
    assert afterwards == at_exit, "a report changed after the kit exited"
    failures = re.search(rb'<testsuite [^>]*failures="(\d+)"', at_exit[junit])
    assert failures is not None and int(failures.group(1)) > 0, at_exit[junit][:500]
    records = json.loads(at_exit[reports[1]])["results"]
    status = {r["requirement"]: r["status"] for r in records if r["tool"] is None}
    assert (status["FY-WRK-001"], status["FY-WRK-004"]) == ("passed", "failed")
    assert failed_in_markdown(at_exit[reports[2]].decode("utf-8"), f"fixture.{token}") != "0"


@ON_LINUX
def test_the_attack_works_where_nothing_stops_it(tmp_path: Path) -> None:
    """The control: the same worker run bare (no kit, no sandbox) leaves a rewriter behind
    that rewrites the reports after the worker is gone, so the test above does not pass on
    a harmless worker."""
    out = tmp_path / "out"
    out.mkdir()
    reports = [out / "j.xml", out / "r.json", out / "r.md"]
    reports[0].write_text('<testsuites><testsuite name="pytest" errors="0" failures="2">')
    reports[1].write_text(json.dumps({"results": [{"status": "failed", "findings": ["x"]}]}))
    reports[2].write_text("| fixture | fengyu-v2 | 40 | 0 | 2 |\n")
    before = [path.read_bytes() for path in reports]
    plugin, token = tampering_plugin(tmp_path, reports)

    subprocess.run(
        [sys.executable, "-u", "backend/worker.py"],
        cwd=plugin,
        env={**os.environ, "FENGYU_PLUGIN_ID": f"fixture.{token}"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    deadline = time.monotonic() + GONE_WITHIN
    while time.monotonic() < deadline and any(
        path.read_bytes() == old for path, old in zip(reports, before, strict=True)
    ):
        time.sleep(0.2)
    left = wait_until_gone(token)  # the rewriter ends by itself, 7 s after it started

    assert left == {}
    assert b'failures="0"' in reports[0].read_bytes()
    assert json.loads(reports[1].read_text())["results"] == [{"status": "passed", "findings": []}]
    assert "All requirements passed" in reports[2].read_text()
