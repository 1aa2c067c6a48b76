"""A worker sees a minimal, documented environment (spec: host.md#the-worker-environment):
never the host's model key or another secret of the host's environment, only what is passed
through by name; the kit starts workers the same way, so what it tests is what a host gives."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from reference_host.__main__ import build_parser
from reference_host.process.environment import (
    DEFAULT_PASS_ENV,
    WorkerEnvError,
    check_names,
    passed_through,
)
from reference_host.process.launch import WorkerSpec
from reference_host.process.sandbox import DATA_PLACE, support
from tests.conftest import MakeHost
from tests.faults.support import call_tool, write_worker_plugin

PLUGIN_ID = "test.security.envdump"
TOOL = "env_dump"
KIT_TIMEOUT = 300.0  # a hang guard


@pytest.fixture
def secrets_set(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The model key, an unrelated secret and a variable to pass through, in os.environ."""
    values = {
        "OPENAI_API_KEY": f"sk-{secrets.token_hex(16)}",
        "SECRET": secrets.token_hex(16),
        "PASSED_THROUGH": secrets.token_hex(8),
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def dumper(tmp_path: Path) -> tuple[Path, Path]:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    settings = {"dumps": str(dumps)}
    root = write_worker_plugin(tmp_path / "src", PLUGIN_ID, TOOL, "env_dump", settings=settings)
    return root, dumps


def assert_minimal(env: dict[str, str], values: dict[str, str], data_dir: Path | None) -> None:
    assert "OPENAI_API_KEY" not in env and "SECRET" not in env
    assert not set(env.values()) & {values["OPENAI_API_KEY"], values["SECRET"]}
    assert env["PASSED_THROUGH"] == values["PASSED_THROUGH"]
    assert env["PATH"] == os.environ["PATH"]
    assert env["FENGYU_PLUGIN_ID"] == PLUGIN_ID
    tmp = Path(env["TMPDIR"])
    assert tmp == Path(env["TMP"]) == Path(env["TEMP"])
    assert tmp.parent == Path(env["FENGYU_PLUGIN_DATA_DIR"])
    assert env["HOME"] == os.environ["HOME"]  # the user's, not mounted in the sandbox
    assert not any(name.endswith("_PROXY") or name.startswith("XDG_") for name in env)
    if data_dir is not None:  # the data folder as the worker sees it, the same in kit and host
        assert Path(env["FENGYU_PLUGIN_DATA_DIR"]) == data_dir
        assert tmp == data_dir / "tmp"


async def test_a_host_worker_gets_no_secret_and_the_passed_through_name(
    tmp_path: Path, secrets_set: dict[str, str], make_host: MakeHost
) -> None:
    root, _ = dumper(tmp_path)
    host = make_host(worker_env=("PASSED_THROUGH",))
    try:
        await host.install(root)
        result = await call_tool(host, TOOL)
    finally:
        await host.close()
    assert result["success"] is True
    # the answer's paths are mapped back to the host's (sandbox.Place)
    assert_minimal(result["env"], secrets_set, tmp_path / "host" / "plugin-data" / PLUGIN_ID)


async def test_without_pass_through_a_host_worker_sees_only_the_documented_names(
    tmp_path: Path, secrets_set: dict[str, str], make_host: MakeHost
) -> None:
    root, _ = dumper(tmp_path)
    host = make_host()
    try:
        await host.install(root)
        env = (await call_tool(host, TOOL))["env"]
    finally:
        await host.close()
    documented = set(DEFAULT_PASS_ENV) | {"HOME"}
    documented |= {"FENGYU_PLUGIN_ID", "FENGYU_PLUGIN_ROOT", "FENGYU_LOG_LEVEL"}
    documented |= {"FENGYU_PLUGIN_DATA_DIR"}
    documented |= {"TMPDIR", "TMP", "TEMP", "REFERENCE_HOST_LINEAGE", "PYTHONPATH"}
    documented |= {"PWD"}  # the working folder, set by the sandbox as a shell would
    extra = {name for name in env if name not in documented and not name.startswith("LC_")}
    assert extra == set(), f"undocumented variables reached the worker: {sorted(extra)}"


def test_a_kit_worker_gets_no_secret_and_the_passed_through_name(
    run_kit, tmp_path: Path, secrets_set: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pytest --plugin-dir ... --worker-env PASSED_THROUGH`: every worker the kit starts
    (protocol probe, tool harness, the kit's host) gets the environment a host gives, with
    nothing of the kit's own (the sandbox passes it unchanged)."""
    envs: list[dict[str, str]] = []
    environment = WorkerSpec.environment

    def recording(self: WorkerSpec, lineage: str | None = None) -> dict[str, str]:
        env = environment(self, lineage)
        envs.append(env)
        return env

    monkeypatch.setattr(WorkerSpec, "environment", recording)
    root, _ = dumper(tmp_path)
    run_kit([root], "--worker-env", "PASSED_THROUGH")
    assert len(envs) >= 2
    for env in envs:
        # the data folder at the place a host's worker finds it too: no tell (sandbox.Place)
        assert_minimal(env, secrets_set, DATA_PLACE if support().available else None)


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "openai_api_key",
        "REFERENCE_HOST_TOKEN",
        "*",
        "A B",
        "X=1",
        "1A",
        "a b" * 300,
    ],
)
def test_a_bad_or_secret_pass_through_name_is_refused_clearly(name: str) -> None:
    with pytest.raises(WorkerEnvError) as raised:
        check_names([name])
    assert len(str(raised.value)) < 300
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--worker-env", name])


CREDENTIALS = {
    "ANTHROPIC_API_KEY": "sk-ant",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "AWS_SESSION_TOKEN": "aws-token",
    "GITHUB_TOKEN": "ghp",
    "REFERENCE_HOST_TOKEN": "bearer",
    "OPENAI_API_KEY": "sk-openai",
    "DB_PASSWORD": "pw",
}


@pytest.mark.parametrize(
    "patterns", [("A*",), ("AWS_*",), ("G*", "D*"), ("REFERENCE_HOST_*",), ("OPENAI*", "O*")]
)
async def test_a_pattern_never_passes_a_credential_to_a_host_worker(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    patterns: tuple[str, ...],
    make_host: MakeHost,
) -> None:
    """`--worker-env 'AWS_*'` is meant for AWS_REGION, not for every plugin to get the
    host's AWS secret; a credential passes only when listed by its full name."""
    for name, value in {**CREDENTIALS, "AWS_REGION": "eu-1", "GIT_PAGER": "cat"}.items():
        monkeypatch.setenv(name, value)
    root, _ = dumper(tmp_path)
    host = make_host(worker_env=patterns)
    try:
        await host.install(root)
        env = (await call_tool(host, TOOL))["env"]
    finally:
        await host.close()
    assert not set(env) & set(CREDENTIALS), sorted(set(env) & set(CREDENTIALS))
    assert not set(env.values()) & set(CREDENTIALS.values())
    if "AWS_*" in patterns:
        assert env["AWS_REGION"] == "eu-1"
    if "G*" in patterns:
        assert env["GIT_PAGER"] == "cat"


def test_a_credential_listed_by_its_full_name_is_passed_the_host_secrets_never() -> None:
    environ = {**CREDENTIALS, "PATH": "/bin"}
    passed = passed_through(environ, ("AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"))
    assert passed == {"PATH": "/bin", "AWS_SECRET_ACCESS_KEY": "aws-secret", "GITHUB_TOKEN": "ghp"}
    assert passed_through(environ, ("REFERENCE_HOST_TOKEN", "OPENAI_API_KEY")) == {"PATH": "/bin"}


def test_the_host_cli_passes_names_to_its_config() -> None:
    args = build_parser().parse_args(["serve", "--worker-env", "A", "--worker-env", "AWS_*"])
    assert args.worker_env == ["A", "AWS_*"]
