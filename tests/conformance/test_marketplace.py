"""A marketplace night (issue 39): targets, shards by a hash of the target id, one bounded run
per target, shard reports merged into one; the shipped GitHub workflow and Kubernetes Job,
their command lines run here for two shards and merged to the same items as one run."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.marketplace.merge import MergeError, ShardReport, merge
from conformance.marketplace.server_json import ServerJsonError, launch_entry
from conformance.marketplace.targets import TargetsError, load_targets
from conformance.shards import Shard, ShardError, parse_shard, shard_from_environment, shard_of
from tests.conftest import FIXTURE_PLUGINS, REPO

KUBERNETES = REPO / "conformance" / "marketplace" / "kubernetes"
WORKFLOW = REPO / ".github" / "workflows" / "marketplace.yml"
MCP_SERVER = REPO / "tests" / "fixtures" / "mcp" / "server.py"
RUN_TIMEOUT = 900.0  # a hang guard for a whole shard run, not a pace
# Each target's wall bound in the night test, where the hung server is stopped at it. The
# test's five runs go at once, so the hang is waited on once, not five times, and the bound
# is three times what one run at a time needed: the fixture server's run shares the cores
# with four others.
WALL = "60"


# -- targets ------------------------------------------------------------------------------


def test_a_targets_file_names_plugins_registry_servers_and_config_entries(tmp_path: Path) -> None:
    (tmp_path / "plugins" / "a").mkdir(parents=True)
    lines = [
        '{"plugin": "plugins/a"}',
        "# a comment, and a blank line",
        "",
        '{"plugin": "plugins/a.zip", "id": "a-archive"}',
        '{"server": {"name": "io.example/time", "packages": []}}',
        '{"mcpServer": {"command": "python", "args": ["s.py"]}, "name": "local"}',
    ]
    (tmp_path / "t.jsonl").write_text("\n".join(lines))
    targets = load_targets(tmp_path / "t.jsonl")
    assert [(t.id, t.kind, t.line) for t in targets] == [
        ("plugins/a", "plugin", 1),
        ("a-archive", "plugin", 4),
        ("io.example/time", "server", 5),
        ("local", "mcpServer", 6),
    ]
    assert targets[0].plugin == (tmp_path / "plugins" / "a").resolve()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1]", r"t.jsonl:1 /: expected a JSON object, found \[1\]"),
        ("{", r"t.jsonl:1: not a JSON object"),
        (
            '{"plugin": "a", "server": {}}',
            r"t.jsonl:1 /: expected exactly one of .* found plugin, server",
        ),
        ('{"plugin": 3}', r"t.jsonl:1 /plugin: expected a path, found 3"),
        ('{"plugin": "a", "id": "no spaces"}', r"t.jsonl:1 /id: 'no spaces' is not an id"),
        ('{"server": {"packages": []}}', r"t.jsonl:1 /server: expected a server.json object"),
        ('{"mcpServer": {"command": "x"}}', r"t.jsonl:1 /name: an mcpServer entry needs a name"),
        ('{"plugin": "a"}\n{"plugin": "b", "id": "a"}', r"t.jsonl:2 /id: 'a' is the id of line 1"),
    ],
)
def test_a_targets_file_that_is_not_one_names_the_line_and_pointer(
    tmp_path: Path, line: str, message: str
) -> None:
    (tmp_path / "t.jsonl").write_text(line)
    with pytest.raises(TargetsError, match=message):
        load_targets(tmp_path / "t.jsonl")


def _server(**package: Any) -> dict[str, Any]:
    base = {"registryType": "npm", "identifier": "@acme/srv", "version": "1.2.3"}
    return {
        "name": "io.acme/srv",
        "packages": [{**base, "transport": {"type": "stdio"}, **package}],
    }


def test_a_registry_package_becomes_the_command_clients_run() -> None:
    npm = launch_entry(
        _server(
            runtimeArguments=[{"type": "named", "name": "--node-options", "value": "--max-old"}],
            packageArguments=[
                {"type": "positional", "value": "/data"},
                {"type": "named", "name": "--port", "default": "3000"},
                {"type": "positional", "valueHint": "optional"},
            ],
            environmentVariables=[
                {"name": "API_KEY", "isRequired": True},
                {"name": "REGION", "default": "eu"},
                {"name": "UNSET"},
            ],
        ),
        None,
        {"API_KEY": "k"},
    )
    assert npm == {
        "command": "npx",
        "args": ["-y", "--node-options", "--max-old", "@acme/srv@1.2.3", "/data", "--port", "3000"],
        "env": {"API_KEY": "k", "REGION": "eu"},
    }
    pypi = launch_entry(_server(registryType="pypi", identifier="mcp-server-time"), None, {})
    assert pypi == {"command": "uvx", "args": ["mcp-server-time@1.2.3"], "env": {}}


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ({"name": "x", "remotes": [{"type": "sse"}]}, "/server/packages: no package to run"),
        (_server(registryType="oci"), "/server/packages/0/registryType: 'oci' is not run here"),
        (
            _server(environmentVariables=[{"name": "TOKEN", "isRequired": True}]),
            "/server/packages/0/environmentVariables/0: TOKEN is required",
        ),
        (
            _server(packageArguments=[{"type": "positional", "isRequired": True}]),
            "/server/packages/0/packageArguments/0: required, and no value",
        ),
    ],
)
def test_a_package_the_kit_cannot_run_says_where(server: dict[str, Any], message: str) -> None:
    with pytest.raises(ServerJsonError, match=re.escape(message)):
        launch_entry(server, None, {})


# -- shards -------------------------------------------------------------------------------

IDS = [f"io.example/server-{n}" for n in range(400)]


def test_each_target_is_in_exactly_one_shard_and_the_shards_are_even() -> None:
    counts = Counter(shard_of(target, 4) for target in IDS)
    assert set(counts) == {1, 2, 3, 4}
    assert min(counts.values()) > 60  # 100 each on average; a hash, so roughly
    for target in IDS[:50]:
        assert sum(Shard(i, 4).holds(target) for i in range(1, 5)) == 1


def test_adding_or_removing_targets_moves_no_other_and_a_new_shard_takes_only_its_own() -> None:
    before = {t: shard_of(t, 4) for t in IDS}
    assert all(shard_of(t, 4) == s for t, s in before.items() if t not in IDS[:100])
    five = {t: shard_of(t, 5) for t in IDS}
    moved = [t for t in IDS if five[t] != before[t]]
    assert all(five[t] == 5 for t in moved)  # only into the new shard
    assert 0 < len(moved) < len(IDS) / 3


def test_shard_flags_and_the_job_index() -> None:
    assert parse_shard("2/4") == Shard(2, 4)
    assert shard_from_environment(4, {"JOB_COMPLETION_INDEX": "0"}) == Shard(1, 4)
    for bad in ("0/4", "5/4", "a/b", "1"):
        with pytest.raises(ShardError, match=r"shard"):
            parse_shard(bad)
    with pytest.raises(ShardError, match="JOB_COMPLETION_INDEX=4 is past the last index"):
        shard_from_environment(4, {"JOB_COMPLETION_INDEX": "4"})
    with pytest.raises(ShardError, match="JOB_COMPLETION_INDEX is None"):
        shard_from_environment(4, {})


# -- the kit's --shard, and merge ---------------------------------------------------------

STATIC = ("-m", "manifest", "-p", "no:randomly")


def _items(document: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    return {
        (r["plugin"], r["requirement"], str(r.get("tool")), r["status"])
        for r in document["results"]
    }


def test_kit_shards_of_a_folder_of_plugins_merge_to_the_items_of_one_run(
    pytester: pytest.Pytester,
) -> None:
    folder = pytester.path / "plugins"
    folder.mkdir()
    names = [
        "ERP-TOOL-005-dotdot",
        "FY-MAN-003-bad-version",
        "FY-MAN-003-missing-author",
        "FY-MAN-002-duplicate-key",
        "ERP-TOOL-003-bad-risk-level",
    ]
    for name in names:
        (folder / name).symlink_to(FIXTURE_PLUGINS / name)

    def run(*args: str) -> dict[str, Any]:
        base = pytester.path / f"r{len(list(pytester.path.glob('r*.json')))}"
        pytester.runpytest("--plugin-dir", str(folder), "--conformance-report", str(base), *args)
        return json.loads(base.with_suffix(".json").read_text())

    whole = run(*STATIC)
    shards = [run(*STATIC, "--shard", f"{i}/2") for i in (1, 2)]
    assert all(s["shard"]["count"] == 2 for s in shards)
    assert {p for s in shards for p in s["shard"]["assigned"]} == {
        r["plugin"] for r in whole["results"]
    }
    merged = merge([ShardReport(Path(f"s{i}"), s) for i, s in enumerate(shards, 1)])
    assert _items(merged) == _items(whole)
    with pytest.raises(MergeError, match=r"shards of 2: given twice: 1; missing: 2"):
        merge([ShardReport(Path("a"), shards[0]), ShardReport(Path("b"), shards[0])])
    with pytest.raises(MergeError, match=r"b /shard: not a shard report"):
        merge([ShardReport(Path("a"), shards[0]), ShardReport(Path("b"), whole)])


# -- a night: the workflow's and the Job's command lines ----------------------------------


def _targets(folder: Path) -> Path:
    """Plugins (one an archive) and MCP servers: one that works, one that crashes at start,
    one that never answers, one that floods its stderr."""
    import shutil

    archive = shutil.make_archive(
        str(folder / "bad-version"), "zip", FIXTURE_PLUGINS, "FY-MAN-003-bad-version"
    )
    python = sys.executable
    lines = [
        {"plugin": str(FIXTURE_PLUGINS / "ERP-TOOL-005-dotdot"), "id": "erp-dotdot"},
        {"plugin": archive, "id": "fy-bad-version-zip"},
        {"mcpServer": {"command": python, "args": [str(MCP_SERVER)]}, "name": "fixture-ok"},
        {"mcpServer": {"command": python, "args": ["-c", "raise SystemExit(3)"]}, "name": "crash"},
        {
            "mcpServer": {"command": python, "args": ["-c", "import time; time.sleep(120)"]},
            "name": "hang",
        },
        {
            "mcpServer": {
                "command": python,
                "args": [
                    "-c",
                    "import sys\nfor _ in range(20000): print('x' * 1000, file=sys.stderr)",
                ],
            },
            "name": "flood",
        },
        {"server": {"name": "io.example/remote-only", "remotes": [{"type": "sse"}]}},
    ]
    path = folder / "targets.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def _one_shard(targets: Path, output: Path, *args: str) -> str:
    """The command line of a marketplace run of every target as its one shard, into output;
    args are the run's further options, then `--` and the kit's."""
    command = ["plugin-conformance", "marketplace", "--targets", str(targets), "--shard", "1/1"]
    return shlex.join([*command, "--output", str(output), *args])


def _bash(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", **env}
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )


def _at_once(
    cwd: Path, *runs: tuple[str, dict[str, str]]
) -> list[subprocess.CompletedProcess[str]]:
    """Each (script, env) run by _bash, all at the same time, as a matrix's jobs and a Job's
    pods run: a shard's hung target is waited on while the others are checked."""
    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        return list(pool.map(lambda run: _bash(run[0], cwd, **run[1]), runs))


def _step(job: dict[str, Any], name_start: str) -> str:
    return next(s["run"] for s in job["steps"] if str(s.get("name", "")).startswith(name_start))


@pytest.mark.long
def test_the_workflow_and_the_job_run_two_shards_that_merge_to_one_runs_items(
    tmp_path: Path,
) -> None:
    targets = _targets(tmp_path)
    workflow = yaml.safe_load(WORKFLOW.read_text())
    check = _step(workflow["jobs"]["shard"], "check shard")
    merge_line = _step(workflow["jobs"]["merge"], "merge the shards")
    kit = "-m not(tools)"  # no tool searches: the statuses, not the calls, are what is checked
    # The Job's pods: the same command for each index, JOB_COMPLETION_INDEX choosing.
    (job,) = [d for d in yaml.safe_load_all((KUBERNETES / "marketplace-job.yaml").read_text())]
    container = job["spec"]["template"]["spec"]["containers"][0]
    args = [str(a) for a in container["args"]]
    args[args.index("--targets") + 1] = str(targets)
    args[args.index("--shards") + 1] = "2"
    args[args.index("--output") + 1] = str(tmp_path / "job")
    args[args.index("--wall") + 1] = WALL
    pod = shlex.join(["plugin-conformance", *args, "--", *kit.split()])
    # The workflow's two shards, the Job's two pods and one run of every target, at once.
    matrix = {"TARGETS": str(targets), "SHARDS": "2", "WALL": WALL, "KIT_ARGS": kit}
    runs = _at_once(
        tmp_path,
        *((check, {**matrix, "SHARD": shard}) for shard in ("1", "2")),
        *((pod, {"JOB_COMPLETION_INDEX": index}) for index in ("0", "1")),
        (_one_shard(targets, tmp_path / "one", "--wall", WALL, "--", *kit.split()), {}),
    )
    for done in runs:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    merged = _bash(merge_line, tmp_path, TARGETS=str(targets))
    assert merged.returncode == 0, merged.stderr
    night = json.loads((tmp_path / "merged" / "night.json").read_text())
    statuses = {t["id"]: t["status"] for t in night["targets"]}
    assert statuses == {
        "erp-dotdot": "checked",
        "fy-bad-version-zip": "did-not-start",
        "fixture-ok": "checked",
        "crash": "did-not-start",
        "hang": "timed-out",
        "flood": "did-not-start",
        "io.example/remote-only": "unsupported",
    }
    kept = list((tmp_path / "reports" / "targets").glob("*/output.txt"))
    assert len(kept) == 6 and all(path.stat().st_size <= 2**20 + 100 for path in kept)
    assert {r["plugin"] for r in night["results"]} <= set(statuses)
    assert (tmp_path / "merged" / "night.html").is_file()
    assert (tmp_path / "merged" / "night.sarif").is_file()

    (merge_job,) = list(yaml.safe_load_all((KUBERNETES / "merge-job.yaml").read_text()))
    merge_args = merge_job["spec"]["template"]["spec"]["containers"][0]["args"][0]
    line = (
        merge_args.replace("/reports/night", str(tmp_path / "job"))
        .replace("-of-16", "-of-2")
        .replace("/targets/targets.jsonl", str(targets))
    )
    assert _bash(line, tmp_path).returncode == 0
    job_night = json.loads((tmp_path / "job" / "merged.json").read_text())
    whole = json.loads((tmp_path / "one" / "shard-1-of-1.json").read_text())
    assert _items(night) == _items(whole) == _items(job_night)


def test_the_shipped_manifests_are_what_they_say(tmp_path: Path) -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    assert set(workflow[True]["workflow_call"]["inputs"]) >= {"targets", "kit", "shards"}
    matrix = workflow["jobs"]["shard"]["strategy"]["matrix"]
    assert matrix["shard"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    assert workflow["jobs"]["merge"]["needs"] == "shard"
    plan = workflow["jobs"]["plan"]["steps"][0]
    out = tmp_path / "out"
    done = _bash(plan["run"], tmp_path, SHARDS="3", GITHUB_OUTPUT=str(out))
    assert done.returncode == 0 and out.read_text() == "shards=[1,2,3]\n"
    refused = _bash(plan["run"], tmp_path, SHARDS="257", GITHUB_OUTPUT=str(out))
    assert refused.returncode == 1 and "at most 256 jobs" in refused.stderr

    (job,) = list(yaml.safe_load_all((KUBERNETES / "marketplace-job.yaml").read_text()))
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    assert (
        spec["completions"]
        == spec["parallelism"]
        == int(spec["template"]["spec"]["containers"][0]["args"][4])
    )
    pod = spec["template"]["spec"]
    container = pod["containers"][0]
    assert container["securityContext"].get("privileged") is not True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod["securityContext"]["seccompProfile"] == {"type": "Unconfined"}
    (merge_job,) = list(yaml.safe_load_all((KUBERNETES / "merge-job.yaml").read_text()))
    assert merge_job["kind"] == "Job"
    assert (
        "plugin-conformance merge"
        in merge_job["spec"]["template"]["spec"]["containers"][0]["args"][0]
    )
    containerfile = (KUBERNETES / "Containerfile").read_text()
    for needed in ("bubblewrap", "strace", "nodejs", "uv"):
        assert needed in containerfile


def test_a_target_over_its_memory_or_whose_launcher_gave_up_says_so(tmp_path: Path) -> None:
    """The statuses a night's planning counts on: a server holding more memory than its bound
    is stopped (memory-exceeded), one whose npx gave up installing is install-failed."""
    npx = REPO / "tests" / "fixtures" / "mcp" / "MCP-LIF-001-launcher-install-fails" / "npx"
    hog = "import time\nheld = bytearray(400 * 2**20)\ntime.sleep(120)"
    lines = [
        {"mcpServer": {"command": sys.executable, "args": ["-c", hog]}, "name": "hog"},
        {
            "mcpServer": {
                "command": str(npx),
                "args": [str(MCP_SERVER), "--defect", "launcher-install-fails"],
            },
            "name": "npx-gave-up",
        },
    ]
    targets = tmp_path / "targets.jsonl"
    targets.write_text("\n".join(json.dumps(line) for line in lines))
    line = _one_shard(
        targets, tmp_path / "out", "--memory", "200M", "--wall", "120", "--", "-m", "lifecycle"
    )
    done = _bash(line, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    night = json.loads((tmp_path / "out" / "shard-1-of-1.json").read_text())
    statuses = {t["id"]: (t["status"], t["reason"]) for t in night["targets"]}
    assert statuses["hog"][0] == "memory-exceeded"
    assert "over the bound of 209715200" in statuses["hog"][1]
    assert statuses["npx-gave-up"][0] == "install-failed", statuses
