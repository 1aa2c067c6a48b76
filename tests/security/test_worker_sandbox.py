"""The host's workers run in the sandbox FengYu describes (spec: host.md#the-worker-sandbox).

A real worker, started by a real Host, reports from inside what it could write, see and
reach: the package and everything but its data folder read-only, the host's own state
hidden, no network without the permission, and a worker that serves another conversation
never sees the first one's grant folders.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.fengyu.syscall_trace import effects_unseen
from reference_host.host import Host
from reference_host.process.identity import SANDBOX_ID, dropped_id
from reference_host.process.sandbox import DATA_PLACE, PACKAGE_PLACE, support
from reference_host.tools.callbacks import CallContext, plan_and_call
from tests.conftest import MakeHost
from tests.faults.support import write_worker_plugin

PLUGIN = "test.sandbox"
TOOL = "probe"

pytestmark = pytest.mark.skipif(
    not support().available, reason=f"no worker sandbox here: {effects_unseen()}"
)


async def probe(host: Host, conversation: str = "c1", **asks: Any) -> dict[str, Any]:
    callback = host.registry.snapshot().get(TOOL)
    assert callback is not None
    output = await plan_and_call(callback, asks, CallContext(conversation_id=conversation))
    answer: dict[str, Any] = output.output
    assert answer.get("success") is True, answer
    return answer


@pytest.fixture
def listener() -> Iterator[int]:
    """A loopback port with a listener, that a worker with no network must not reach."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


@pytest.fixture
async def host(tmp_path: Path, make_host: MakeHost) -> Host:
    host = make_host()
    await host.install(write_worker_plugin(tmp_path / "src", PLUGIN, TOOL, "sandbox_probe"))
    return host


async def test_only_the_data_folder_is_writable(host: Host, tmp_path: Path) -> None:
    package = host.store.plugin(PLUGIN)
    assert package is not None
    data = host.plugin_data(PLUGIN)
    targets = {
        "package": str(package.root / "backend" / "x"),
        "data": str(data / "x"),
        "tmp": str(data / "tmp" / "x"),
        "var": "/var/tmp/reference-host-sandbox-test",
        "beside": str(tmp_path / "beside.txt"),
        "host db": str(host.config.database),
    }
    answer = await probe(host, write=list(targets.values()))
    got = {name: answer["write"][path] for name, path in targets.items()}
    assert got == {
        "package": "Read-only file system",
        "data": "ok",
        "tmp": "ok",
        "var": "No such file or directory",  # not mounted
        "beside": "No such file or directory",  # nothing of the host's folders is there
        "host db": "No such file or directory",
    }
    assert not (tmp_path / "beside.txt").exists()


async def test_the_paths_a_worker_sees_are_the_kits(host: Host) -> None:
    """A plugin cannot tell the host from a kit run by where it runs: its package, data
    folder and TMPDIR are at the sandbox's own places, the same in both (the kit's side:
    tests/security/test_worker_environment.py), never under the host's data folder. The
    paths in requests and answers are mapped (the probe sends them as parts, unmapped)."""
    answer = await probe(host)
    assert answer["where"] == {
        "cwd": list(PACKAGE_PLACE.parts),
        "FENGYU_PLUGIN_ROOT": list(PACKAGE_PLACE.parts),
        "FENGYU_PLUGIN_DATA_DIR": list(DATA_PLACE.parts),
        "TMPDIR": list((DATA_PLACE / "tmp").parts),
    }


async def test_kernel_settings_are_read_only(host: Host) -> None:
    """Where the host runs as root, the sandbox's root is the real one: a writable
    /proc/sys/kernel/core_pattern ran a program of the worker's as root outside the sandbox.
    (The probe writes a word where numbers go, so a writable file would change nothing.)"""
    settings = ["/proc/sys/kernel/pid_max", "/proc/sys/vm/swappiness"]  # numbers only
    answer = await probe(host, write=settings)
    assert answer["write"] == dict.fromkeys(settings, "Read-only file system")


async def test_the_hosts_own_state_is_hidden(host: Host) -> None:
    """The host's database and other plugins' folders are not even readable (the worker's
    own data folder is there, at its place: the request's path is mapped to it)."""
    database = str(host.config.database)
    other = str(host.plugin_data("someone.else"))
    host.plugin_data("someone.else").mkdir(parents=True)
    answer = await probe(host, exists=[database, other, str(host.plugin_data(PLUGIN))])
    assert answer["exists"] == {database: False, other: False, str(host.plugin_data(PLUGIN)): True}


async def test_the_users_home_is_not_mounted(
    tmp_path: Path, make_host: MakeHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys in ~/.ssh, ~/.git-credentials and a socket in ~/.docker are not there at all (a
    unix socket on a read-only mount still connects), as in FengYu, which mounts no HOME."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (home / ".git-credentials").write_text("https://user:token@example.com")
    (home / ".docker" / "run").mkdir(parents=True)
    engine = socket.socket(socket.AF_UNIX)
    engine.bind(str(home / ".docker" / "run" / "docker.sock"))
    engine.listen()
    monkeypatch.setenv("HOME", str(home))
    host = make_host()
    await host.install(write_worker_plugin(tmp_path / "src", PLUGIN, TOOL, "sandbox_probe"))
    key, sock = str(home / ".ssh" / "id_ed25519"), str(home / ".docker" / "run" / "docker.sock")
    credentials = str(home / ".git-credentials")
    answer = await probe(host, exists=[key, sock, credentials, str(home)])
    engine.close()
    assert answer["exists"] == {key: False, sock: False, credentials: False, str(home): False}


async def test_set_id_bits_are_refused(host: Host) -> None:
    """Where the host runs as root, a set-uid file in the data folder would run as root."""
    data = host.plugin_data(PLUGIN)
    answer = await probe(host, chmod={str(data / "x"): 0o4755, str(data / "y"): 0o755})
    assert answer["chmod"] == {str(data / "x"): "Operation not permitted", str(data / "y"): "ok"}


async def test_no_other_way_to_a_set_id_file_or_a_user_namespace(host: Host) -> None:
    """openat2 (its mode in a struct the filter cannot read) and mknod of a regular file make
    set-uid files as well as chmod; a user namespace of its own would hand the worker every
    capability over what it makes next. All refused: openat2 as absent, so C libraries fall
    back to openat, whose mode the filter reads."""
    if platform.machine() != "x86_64":
        pytest.skip("the probe uses x86_64 system call numbers")
    data = host.plugin_data(PLUGIN)
    answer = (await probe(host, set_id=str(data)))["set_id"]
    assert answer == {
        "openat2": "Function not implemented",
        "mknod": "Operation not permitted",
        "unshare": "Operation not permitted",
        "modes": {},
    }


async def test_no_network_without_the_permission(host: Host, listener: int) -> None:
    target = f"127.0.0.1:{listener}"
    answer = await probe(host, connect=[target, "10.255.255.1:80"])
    assert answer["connect"][target] != "ok"
    assert answer["connect"]["10.255.255.1:80"] == "Network is unreachable"


@pytest.fixture
def own_address_listener() -> Iterator[str]:
    """A listener on this machine's own non-loopback address (no packet leaves the machine),
    which a worker with the network reaches through its user-mode network."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe_socket:
        probe_socket.connect(("192.0.2.1", 9))  # picks the outgoing address; sends nothing
        address = probe_socket.getsockname()[0]
    if address.startswith("127."):
        pytest.skip("this machine has no address but loopback")
    with socket.socket() as server:
        server.bind((address, 0))
        server.listen()
        yield f"{address}:{server.getsockname()[1]}"


@pytest.fixture
def abstract_listener() -> Iterator[str]:
    """An abstract unix socket (a desktop bus, tmux -L, an agent): it belongs to the
    network namespace, not to any folder."""
    name = f"@reference-host-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("\0" + name[1:])
        server.listen()
        yield name


async def test_the_network_permission_gives_the_network_but_not_the_hosts_loopback(
    tmp_path: Path,
    make_host: MakeHost,
    listener: int,
    own_address_listener: str,
    abstract_listener: str,
) -> None:
    """With `network` a worker reaches the world through a network of its own
    (slirp4netns), never the host's 127.0.0.1 (where the host's API listens) nor an abstract
    unix socket; before, it shared the host's network and reached both."""
    if not support().user_network and not os.environ.get("REQUIRE_SANDBOX"):
        pytest.skip(support().user_network_reason)
    source = write_worker_plugin(tmp_path / "src", PLUGIN, TOOL, "sandbox_probe")
    manifest = json.loads((source / "manifest.json").read_text())
    manifest["permissions"] = ["network"]
    (source / "manifest.json").write_text(json.dumps(manifest))
    host = make_host()
    await host.install(source)
    loopback = f"127.0.0.1:{listener}"
    answer = await probe(host, connect=[loopback, own_address_listener], unix=[abstract_listener])
    assert answer["connect"] == {loopback: "Connection refused", own_address_listener: "ok"}
    assert answer["unix"] == {abstract_listener: "Connection refused"}


async def test_ptrace_is_refused_so_no_tracer_can_be_told_apart(host: Host) -> None:
    """Under the kit's tracer PTRACE_TRACEME fails; with ptrace refused in every sandbox it
    fails in a host the same way (tests/conformance/test_effects.py checks the kit's)."""
    assert (await probe(host, traceme=True))["traceme"] == "Operation not permitted"


async def test_what_would_slip_past_a_tracer_is_refused(host: Host) -> None:
    """A child made with CLONE_UNTRACED is followed by no tracer, and io_uring writes and
    connects without the traced system calls: both are refused in every sandbox."""
    if platform.machine() != "x86_64":
        pytest.skip("the probe uses x86_64 system call numbers")
    escapes = (await probe(host, escapes=True))["escapes"]
    assert escapes == {
        "untraced child": "Operation not permitted",
        "io_uring": "Function not implemented",
    }


async def test_a_worker_runs_in_its_own_pid_namespace(host: Host) -> None:
    """Whatever it starts dies with it: the sandbox's init reaps and ends them all."""
    assert (await probe(host))["pid"] < 10


async def test_the_unconfined_toggle_runs_workers_as_before(
    tmp_path: Path, make_host: MakeHost
) -> None:
    host = make_host(sandbox=False)
    await host.install(write_worker_plugin(tmp_path / "src", PLUGIN, TOOL, "sandbox_probe"))
    outside = tmp_path / "outside.txt"
    assert (await probe(host, write=[str(outside)]))["write"] == {str(outside): "ok"}


async def test_a_worker_reaches_its_own_conversations_grants_only(host: Host) -> None:
    """The worker serving S2 is not the one that served S1: it cannot see, let alone write,
    S1's staging (a read tool planting a file there got it committed into the user's
    folder before)."""
    (s1_staging,), _ = host.grants.roots("S1", PLUGIN)
    planted = str(s1_staging / "planted.txt")
    seen_by_s1 = await probe(host, "S1", exists=[str(s1_staging)])
    assert seen_by_s1["exists"] == {str(s1_staging): True}
    in_s2 = await probe(host, "S2", exists=[str(s1_staging)], write=[planted])
    assert in_s2["exists"] == {str(s1_staging): False}
    assert in_s2["write"][planted] != "ok"
    assert not (s1_staging / "planted.txt").exists()


@pytest.fixture
def unix_listener(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A unix socket in the machine's /tmp, as a tmux server or an ssh agent keeps one."""
    folder = Path(tempfile.mkdtemp(prefix="tmux-0-"))
    path = str(folder / "default")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen()
        yield path
    shutil.rmtree(folder, ignore_errors=True)


async def test_no_unix_socket_in_tmp_is_reached(host: Host, unix_listener: str) -> None:
    """A tmux server's socket under /tmp let a plugin without permissions run a command
    outside the sandbox, as root; the sandbox's /tmp is a fresh one of its own."""
    answer = await probe(host, unix=[unix_listener], exists=[unix_listener])
    assert answer["exists"] == {unix_listener: False}
    assert answer["unix"] == {unix_listener: "No such file or directory"}


async def test_root_only_files_stay_closed(host: Host) -> None:
    """The sandbox's uid is not the real root: /etc/shadow (root's, mode 640) is closed.
    Where the tests run as an ordinary user it is closed anyway."""
    answer = await probe(host, read=["/etc/shadow", "/etc/hostname"])
    assert answer["read"] == {"/etc/shadow": "Permission denied", "/etc/hostname": "ok"}
    if dropped_id() is not None:
        assert answer["uid"] == SANDBOX_ID


async def test_only_the_system_the_runtime_and_the_package_are_there(host: Host) -> None:
    """Not the whole machine read-only, as before: FengYu's system folders, no /home, /run,
    /var, /root or /opt (but for the interpreter's own folder, bound on its own)."""
    gone = ["/home", "/run", "/var", "/root/.bashrc", "/opt", "/srv", "/mnt"]
    there = ["/usr/bin", "/etc/passwd", "/tmp", sys.executable]
    answer = await probe(host, exists=[*gone, *there])
    assert answer["exists"] == {**dict.fromkeys(gone, False), **dict.fromkeys(there, True)}


async def test_a_folder_the_sandbox_cannot_enter_is_a_clear_error(
    tmp_path: Path, make_host: MakeHost
) -> None:
    """Where the host runs as root the worker runs as nobody, which cannot read a package
    folder of mode 700: the start says so and names the fix, instead of a bare exit 126."""
    if dropped_id() is None:
        pytest.skip("the sandbox runs as the caller here: no folder of theirs is closed to it")
    host = make_host()
    await host.install(write_worker_plugin(tmp_path / "src", PLUGIN, TOOL, "sandbox_probe"))
    package = host.store.plugin(PLUGIN)
    assert package is not None
    package.root.chmod(0o700)
    callback = host.registry.snapshot().get(TOOL)
    assert callback is not None
    output = await plan_and_call(callback, {}, CallContext(conversation_id="c1"))
    assert output.output["success"] is False
    assert f"`chmod o+rx {package.root}`" in output.output["error"]
