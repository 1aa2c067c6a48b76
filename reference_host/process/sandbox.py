"""The OS sandbox every worker runs in (spec: host.md#the-worker-sandbox), shaped like FengYu's.

FengYu wraps each worker in `bwrap --die-with-parent` on Linux: the package read-only, the
plugin's data folder and the current call's write grants writable, read grants readable,
and no network unless the manifest asks for `network`, `network.email` or `database`. The
kit and the host build the same command here, so a worker cannot tell them apart and what
the kit checks is what the host runs.

On top of FengYu's shape: the worker gets PID, IPC, UTS and user namespaces of its own (what
it starts dies with it, and it cannot make namespaces of its own), no capabilities, a system
call filter (seccomp.py: no ptrace, so the kit's tracer cannot be told from its absence, and
nothing that slips past it), read-only kernel settings, and the folders in `hidden` (the
host's or the kit's own state), the socket folders and the user's credential folders show up
empty and read-only, but for the folders bound inside them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from reference_host.process.seccomp import program_fd

PROBE_SECONDS = 10.0
NETWORK_PERMISSIONS = frozenset({"network", "network.email", "database"})
# The user's credential folders, the ones FengYu never grants for writing: hidden, so a
# worker reads no key in them and reaches no socket there (a container engine's under
# ~/.docker): a unix socket on a read-only mount still connects.
CREDENTIALS = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".docker",
    ".kube",
    ".config/gcloud",
    ".config/github-copilot",
)
# The kernel's settings in a fresh /proc: bwrap leaves them writable where it runs as root
# (the sandbox's uid 0 is the real one), and a worker could then set kernel.core_pattern to a
# program of its own, which the kernel runs as root outside every namespace.
KERNEL_SETTINGS = (Path("/proc/sys"), Path("/proc/sysrq-trigger"))
# Runtime folders: other programs' sockets (a unix socket on a read-only mount still
# connects: the desktop bus, a container engine, an X server) are out of a worker's sight, as
# the host's own state is. /tmp stays readable: interpreters and virtual environments live
# there too (a CI checkout, say), and FengYu's sandbox keeps it read-only, not hidden.
SHARED = (Path("/run"), Path("/dev/shm"), Path("/tmp/.X11-unix"), Path("/tmp/.ICE-unix"))


@dataclass(frozen=True)
class SandboxPolicy:
    """What one worker may reach: package read-only; data and writable read-write; readable
    read-only; hidden folders emptied; the network only when network is set."""

    package: Path
    data: Path
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    network: bool = False

    def with_grants(self, writable: Iterable[Path], readable: Iterable[Path]) -> SandboxPolicy:
        """The policy with the grant folders of one call's conversation added."""
        return replace(
            self,
            writable=(*self.writable, *writable),
            readable=(*self.readable, *readable),
        )


def wants_network(manifest: Mapping[str, Any]) -> bool:
    """Whether FengYu gives the plugin's worker the network (its permissions ask for it)."""
    permissions = manifest.get("permissions")
    if not isinstance(permissions, list):
        return False
    return any(isinstance(p, str) and p in NETWORK_PERMISSIONS for p in permissions)


@dataclass(frozen=True)
class Support:
    """Whether workers can be sandboxed here: the bwrap program, or why not."""

    program: str
    reason: str = ""

    @property
    def available(self) -> bool:
        return bool(self.program)


@cache
def support() -> Support:
    """bwrap, when it is installed and can make the namespaces here (probed once)."""
    if not sys.platform.startswith("linux"):
        return Support("", f"the worker sandbox (bubblewrap) is Linux-only; this is {sys.platform}")
    program = shutil.which("bwrap")
    if program is None:
        return Support("", "bubblewrap is not installed (Debian: apt-get install bubblewrap)")
    with tempfile.TemporaryDirectory(prefix="sandbox-probe-") as folder:
        package, data = Path(folder) / "package", Path(folder) / "data"
        package.mkdir()
        data.mkdir()
        probe = SandboxPolicy(package, data, hidden=(Path(folder),))
        fd = program_fd()
        argv = command(program, probe, ("true",), package, fd)
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=PROBE_SECONDS, check=False, pass_fds=(fd,)
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Support("", f"bubblewrap could not be run: {exc}")
        finally:
            os.close(fd)
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = lines[-1] if lines else f"exit code {done.returncode}"
        return Support("", f"bubblewrap cannot make a sandbox here (user namespaces?): {why}")
    return Support(program)


def command(
    program: str,
    policy: SandboxPolicy,
    argv: Iterable[str],
    cwd: Path,
    seccomp_fd: int | None = None,
) -> list[str]:
    """The bwrap command that runs argv in cwd under policy (program: the bwrap path;
    seccomp_fd: a descriptor holding seccomp.program(), passed to the child)."""
    args = [
        program,
        *("--die-with-parent", "--new-session", "--unshare-all", "--unshare-user"),
        *("--disable-userns", "--cap-drop", "ALL"),
        *(("--seccomp", str(seccomp_fd)) if seccomp_fd is not None else ()),
        *(("--share-net",) if policy.network else ()),
        *("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"),
    ]
    for kernel in KERNEL_SETTINGS:
        if kernel.exists():
            args += ["--ro-bind", str(kernel), str(kernel)]
    hidden = _hidden(policy)
    for folder in hidden:
        args += ["--tmpfs", str(folder)]
    for kept in _kept(hidden):
        args += ["--ro-bind", str(kept), str(kept)]
    args += ["--ro-bind", str(policy.package), str(policy.package)]
    for folder in policy.readable:
        args += ["--ro-bind", str(folder), str(folder)]
    for folder in (policy.data, *policy.writable):
        args += ["--bind", str(folder), str(folder)]
    for folder in hidden:
        args += ["--remount-ro", str(folder)]
    return [*args, "--chdir", str(cwd), "--", *argv]


def _hidden(policy: SandboxPolicy) -> list[Path]:
    """The folders shown empty: SHARED and the user's credential folders where they are real
    folders, and policy.hidden."""
    home = os.environ.get("HOME")
    credentials = [Path(home) / c for c in CREDENTIALS] if home else []
    shared = [p for p in (*SHARED, *credentials) if p.is_dir() and not p.is_symlink()]
    folders = [*shared, *(p for p in policy.hidden if p not in shared)]
    # One inside another is hidden with it (bwrap cannot remount it read-only on its own).
    return [p for p in folders if not any(p != q and p.is_relative_to(q) for q in folders)]


def _kept(hidden: list[Path]) -> list[Path]:
    """What a hidden folder holds that every program needs, read-only: the resolver's
    configuration when /etc/resolv.conf points into /run (systemd-resolved)."""
    resolver = Path("/etc/resolv.conf").resolve()
    inside = any(resolver.is_relative_to(folder) for folder in hidden)
    return [resolver] if inside and resolver.is_file() else []
