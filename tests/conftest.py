"""Shared test helpers: run the kit in-process with pytester and read its JSON report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hypothesis  # noqa: F401  (imported once here: in-process kit runs would re-import it)
import pytest

from conformance.deadlines import Deadlines
from reference_host.grants.grant_store import GrantStore
from reference_host.host import Host, HostConfig

pytest_plugins = ["pytester"]

TESTS = Path(__file__).parent
FIXTURE_PLUGINS = TESTS / "fixtures" / "plugins"
REPO = TESTS.parent

# Sample workers start with `#!/usr/bin/env python3`: make that the interpreter running the
# tests (with the SDK installed), even when pytest was started without activating the venv.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
# The fixture workers share tests/fixtures/plugins/misbehaving_worker.py; a host installs a copy
# of a plugin folder only, so they find it through PYTHONPATH, as an installed package would be.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(FIXTURE_PLUGINS), os.environ.get("PYTHONPATH", "")) if p
)
# Workers get only a short list of the host's variables (spec: host.md#the-worker-environment);
# PYTHONPATH is passed to them explicitly, as a host owner would with --worker-env.
os.environ["REFERENCE_HOST_WORKER_ENV"] = "PYTHONPATH"
# The kit's deadlines in these tests (docs/guide/options.md#deadlines): a fixture that hangs
# is waited on half as long as a user's plugin, which still leaves an honest worker started
# in a sandbox on a loaded 2-core machine ample time. Kit runs get it as the flag, the tests
# that build the kit's parts themselves as DEADLINES.
DEADLINE_SCALE = 0.5
DEADLINES = Deadlines().scaled(DEADLINE_SCALE)
SEVERITY = [
    "failed",
    "stale-baseline-entry",
    "expected-failure",
    "warned",
    "not-exercised",
    "passed",
    "skipped",
    "not-applicable",
]
NOT_REPORTED = ("passed", "skipped", "not-applicable", "not-exercised")


@dataclass
class KitResult:
    """The outcome of one kit run: pytest's result plus the parsed JSON report."""

    result: pytest.RunResult
    report: dict[str, Any]

    def statuses(self, plugin: str | None = None) -> dict[str, str]:
        """Requirement id -> status, for one plugin label (or the only plugin).

        A per-tool requirement has one record per tool; the worst of them stands for it.
        """
        records = self.report["results"]
        labels = {r["plugin"] for r in records}
        if plugin is None:
            assert len(labels) == 1, f"several plugins in the run: {labels}"
            plugin = labels.pop()
        worst: dict[str, str] = {}
        for record in records:
            if record["plugin"] == plugin:
                rid, status = record["requirement"], record["status"]
                if rid not in worst or SEVERITY.index(status) < SEVERITY.index(worst[rid]):
                    worst[rid] = status
        return worst

    def reported(self, plugin: str | None = None) -> set[str]:
        """Requirements that did not simply pass (failed, warned, expected or stale)."""
        return {rid for rid, status in self.statuses(plugin).items() if status not in NOT_REPORTED}

    def findings(self, requirement: str) -> list[dict[str, Any]]:
        return [
            f
            for r in self.report["results"]
            if r["requirement"] == requirement
            for f in r["findings"]
        ]


@pytest.fixture(scope="session")
def tmp_path_factory(tmp_path_factory: pytest.TempPathFactory) -> pytest.TempPathFactory:
    """pytest's, but each folder it makes (tmp_path, pytester's) is enterable by everyone,
    like a user's own folders: where the tests run as root, the sandbox runs as nobody
    (reference_host/process/identity.py) and refuses to bind a folder it cannot enter
    (tests/security/test_worker_sandbox.py checks that error)."""
    made = tmp_path_factory.mktemp

    def mktemp(basename: str, numbered: bool = True) -> Path:
        folder = made(basename, numbered)
        folder.chmod(0o755)
        return folder

    tmp_path_factory.mktemp = mktemp  # type: ignore[method-assign]
    return tmp_path_factory


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester whose inner runs leave pytest-asyncio out (the kit does not need it, and
    without an ini file it warns about its defaults, which would count in the outcomes) and
    use the tests' deadlines."""
    monkeypatch.setenv(
        "PYTEST_ADDOPTS", f"-p no:asyncio --conformance-deadline-scale {DEADLINE_SCALE}"
    )
    return pytester


@pytest.fixture
def run_kit(pytester: pytest.Pytester):
    """Run `pytest --plugin-dir ...` in-process; returns a KitResult."""

    def run(plugin_dirs: Iterable[Path], *args: str) -> KitResult:
        report_base = pytester.path / "kit-report"
        argv = [a for d in plugin_dirs for a in ("--plugin-dir", str(d))]
        result = pytester.runpytest(*argv, "--conformance-report", str(report_base), *args)
        report_file = report_base.with_suffix(".json")
        report = json.loads(report_file.read_text()) if report_file.exists() else {}
        return KitResult(result, report)

    return run


def failures(result: pytest.RunResult) -> str:
    """A run's output before its short test summary, which repeats whole failure texts where
    pytest sees a CI environment (CI=true), as on CI services and in .ci/run."""
    return result.stdout.str().split(" short test summary info ")[0]


def run_pytest(
    cwd: Path, *args: str, env: dict[str, str], timeout: float, python: str = sys.executable
) -> subprocess.CompletedProcess[str]:
    """`python -m pytest *args` in a process of its own, in cwd with env, as a user runs it
    (python: the tests' own unless given); its output as text."""
    return subprocess.run(
        [python, "-m", "pytest", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


def plugin_with_manifest(tmp_path: Path, manifest: Any, name: str = "plugin") -> Path:
    """A plugin folder holding the given manifest (dict/list -> JSON, str -> verbatim)."""
    root = tmp_path / name
    root.mkdir(parents=True, exist_ok=True)
    text = manifest if isinstance(manifest, str) else json.dumps(manifest, indent=2)
    (root / "manifest.json").write_text(text, encoding="utf-8")
    return root


def tools_manifest(
    plugin_id: str, tools: dict[str, Any], name: str = "Tools", description: str = "Tools."
) -> dict[str, Any]:
    """A FengYu v2 manifest with a read tool per entry of tools (name -> inputSchema), each
    calling a method of its own that has that inputSchema."""
    methods = {
        f"method_{i:03d}": {"description": "Do one thing.", "inputSchema": schema}
        for i, schema in enumerate(tools.values())
    }
    ai_tools = [
        {
            "name": tool,
            "description": "Do one thing.",
            "method": f"method_{i:03d}",
            "effect": "read",
        }
        for i, tool in enumerate(tools)
    ]
    return v2_manifest(plugin_id, name, description, methods, ai_tools)


def v2_manifest(
    plugin_id: str,
    name: str,
    description: str,
    methods: dict[str, Any],
    ai_tools: list[dict[str, Any]],
    **members: Any,
) -> dict[str, Any]:
    """A FengYu v2 manifest with the kit's usual version, author, icon, category and ui entry
    around the given rpc methods and aiTools; members adds top-level ones (backend, ...)."""
    return {
        "schemaVersion": 2,
        "id": plugin_id,
        "name": name,
        "description": description,
        "version": "1.0.0",
        "author": "ai-plugin-conformance",
        "icon": "puzzle-outline",
        "category": "other",
        "ui": {"entry": "ui/index.html"},
        "rpc": {"methods": methods},
        "aiTools": ai_tools,
        **members,
    }


def python_plugin(
    folder: Path, manifest: dict[str, Any], worker: str, permissions: list[str]
) -> Path:
    """A python-runtime plugin in folder (made here): the manifest, run by backend/worker.py
    with the given source (protocol version 4), asking for permissions."""
    manifest = {
        **manifest,
        "backend": {"runtime": "python", "protocolVersion": 4},
        "permissions": permissions,
    }
    (folder / "backend").mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2))
    (folder / "backend" / "worker.py").write_text(worker)
    return folder


def file_texts(folder: Path) -> dict[str, str]:
    """Every file below folder, by its path relative to folder, with its text."""
    return {str(p.relative_to(folder)): p.read_text() for p in folder.rglob("*") if p.is_file()}


def grant_store(roots: list[Path], data: Path) -> Iterator[GrantStore]:
    """For a fixture to `yield from`: a GrantStore over roots keeping its copies in data,
    closed when the fixture ends."""
    grants = GrantStore(roots, data)
    yield grants
    grants.close()


def copy_plugin(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / source.name
    shutil.copytree(source, target, symlinks=True)  # a fixture's link is its defect
    return target


MakeHost = Callable[..., Host]


@pytest.fixture
async def make_host(tmp_path: Path) -> AsyncIterator[MakeHost]:
    """Build hosts as `make_host(validator=..., builtins=..., **HostConfig fields)`; the data
    folder is `tmp_path / "host"` unless `data_dir` says otherwise. Every host it made is
    closed at teardown, the last made first."""
    made: list[Host] = []

    def build(*, validator: Any = None, builtins: Iterable[Any] = (), **config: Any) -> Host:
        config.setdefault("data_dir", tmp_path / "host")
        host = Host(HostConfig(**config), validator=validator, builtins=builtins)
        made.append(host)
        return host

    yield build
    for host in reversed(made):
        await host.close()
