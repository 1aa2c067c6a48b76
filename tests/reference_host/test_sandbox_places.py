"""Where the kit's and the host's folders show up in a sandbox (sandbox.Place): fixed places,
the same in both, with the paths in requests and answers mapped between the two views."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from reference_host.process import sandbox
from reference_host.process.sandbox import (
    DATA_PLACE,
    FILES_PLACE,
    PACKAGE_PLACE,
    Place,
    SandboxPolicy,
    command,
)

PACKAGE = Path("/srv/kit-run-1/package")
DATA = Path("/srv/kit-run-1/plugin-data/demo")


def policy() -> SandboxPolicy:
    return SandboxPolicy(
        PACKAGE, DATA, places=(Place(PACKAGE, PACKAGE_PLACE), Place(DATA, DATA_PLACE))
    )


def test_a_folder_and_what_it_holds_are_seen_at_its_place() -> None:
    seen = policy()
    assert seen.inside(DATA / "tmp" / "x") == DATA_PLACE / "tmp" / "x"
    assert seen.inside(PACKAGE) == PACKAGE_PLACE
    assert seen.outside(DATA_PLACE / "tmp") == DATA / "tmp"
    assert seen.inside(Path("/srv/kit-run-1/plugin-data/other")) == Path(
        "/srv/kit-run-1/plugin-data/other"
    )


def test_the_innermost_place_wins() -> None:
    inner = PACKAGE / "vendor"
    seen = SandboxPolicy(
        PACKAGE, DATA, places=(Place(PACKAGE, PACKAGE_PLACE), Place(inner, Path("/inner")))
    )
    assert seen.inside(inner / "x") == Path("/inner/x")
    assert seen.inside_text(f"{inner}/x and {PACKAGE}/y") == "/inner/x and /plugin/y"


def test_paths_in_text_are_mapped_only_as_whole_paths() -> None:
    seen = policy()
    assert seen.inside_text(f"-Djava.io.tmpdir={DATA}/tmp") == f"-Djava.io.tmpdir={DATA_PLACE}/tmp"
    assert seen.inside_text(f"{DATA}x/y") == f"{DATA}x/y"  # a longer name
    assert seen.outside_text("/x/plugin-data/y") == "/x/plugin-data/y"  # inside a longer path
    assert seen.outside_text("wrote /plugin-data/out.txt") == f"wrote {DATA}/out.txt"


def test_requests_and_answers_are_mapped_both_ways() -> None:
    seen = policy().with_grants((Path("/srv/host/grants/c1/demo/write"),), ())
    request = {"path": "/srv/host/grants/c1/demo/write/out", "list": [f"{DATA}/a"], "n": 3}
    inside = seen.inside_value(request)
    assert inside == {"path": f"{FILES_PLACE}/write/out", "list": [f"{DATA_PLACE}/a"], "n": 3}
    assert seen.outside_value(inside) == request


def test_another_data_folder_takes_the_same_place() -> None:
    moved = policy().with_data(Path("/srv/kit-run-1/probe/demo"))
    assert moved.inside(Path("/srv/kit-run-1/probe/demo/tmp")) == DATA_PLACE / "tmp"
    assert moved.inside(DATA) == DATA


def test_the_sandbox_binds_each_folder_at_its_place() -> None:
    args = command("bwrap", policy(), ["python3", f"{PACKAGE}/main.py"], PACKAGE)
    text = " ".join(args)
    assert f"--ro-bind {PACKAGE} {PACKAGE_PLACE}" in text
    assert f"--bind {DATA} {DATA_PLACE}" in text
    assert f"--chdir {PACKAGE_PLACE} " in text
    assert args[-1] == f"{PACKAGE_PLACE}/main.py"
    assert "/srv/kit-run-1" not in text.replace(f"{PACKAGE} ", "").replace(f"{DATA} ", "")


def test_a_shared_network_keeps_a_resolver_that_links_outside_the_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without slirp4netns a sandbox with the network shares the host's; /etc/resolv.conf
    linking into /run (systemd-resolved) must still resolve there, the one file bound."""
    stub = tmp_path / "run" / "resolve" / "stub-resolv.conf"
    stub.parent.mkdir(parents=True)
    stub.write_text("nameserver 127.0.0.53\n")
    link = tmp_path / "resolv.conf"
    link.symlink_to(stub)
    monkeypatch.setattr(sandbox, "RESOLV_CONF", link)
    monkeypatch.setattr(sandbox, "slirp_program", lambda: None)
    shared = " ".join(command("bwrap", replace(policy(), network=True), ["python3"], PACKAGE))
    assert f"--ro-bind {stub} {stub}" in shared
    assert "--unshare-net" not in shared
    closed = " ".join(command("bwrap", policy(), ["python3"], PACKAGE))
    assert str(stub) not in closed


def test_each_start_finds_the_same_runtime_folders_and_grows_nothing() -> None:
    """runtime_folders runs at every worker start. Each start used to add PATH's folders to
    the cached list it was handed, a dozen entries more per start, so a long-lived host (or a
    kit run restarting a crashing worker) spent longer on every start than on the one before."""
    argv = [sys.executable, "worker.py"]
    search = os.environ.get("PATH", os.defpath)
    first = sandbox.runtime_folders(argv)
    held = len(sandbox._program_folders(sys.executable, search))
    for _ in range(3):
        assert sandbox.runtime_folders(argv) == first
    assert len(sandbox._program_folders(sys.executable, search)) == held
