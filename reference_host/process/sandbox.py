"""The OS sandbox every worker runs in (spec: host.md#the-worker-sandbox), shaped like FengYu's.

FengYu wraps each worker in `bwrap --die-with-parent` on Linux: the package read-only, the
plugin's data folder and the current call's write grants writable, read grants readable,
and no network unless the manifest asks for `network`, `network.email` or `database`. The
kit and the host build the same command here, so a worker cannot tell them apart and what
the kit checks is what the host runs.

On top of FengYu's shape: the worker gets PID, IPC, UTS and user namespaces of its own (what
it starts dies with it, and it cannot make namespaces of its own), no capabilities, and the
folders in `hidden` (the host's or the kit's own state) show up empty and read-only, but for
the folders bound inside them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

PROBE_SECONDS = 10.0
NETWORK_PERMISSIONS = frozenset({"network", "network.email", "database"})


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
        """The policy with the grant folders of one call's conversation."""
        return SandboxPolicy(
            self.package, self.data, tuple(writable), tuple(readable), self.hidden, self.network
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
    probe = SandboxPolicy(Path("/"), Path("/dev/null"))
    argv = command(program, probe, ("true",), cwd=Path("/"))
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Support("", f"bubblewrap could not be run: {exc}")
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = lines[-1] if lines else f"exit code {done.returncode}"
        return Support("", f"bubblewrap cannot make a sandbox here (user namespaces?): {why}")
    return Support(program)


def command(program: str, policy: SandboxPolicy, argv: Iterable[str], cwd: Path) -> list[str]:
    """The bwrap command that runs argv in cwd under policy (program: the bwrap path)."""
    args = [
        program,
        *("--die-with-parent", "--new-session", "--unshare-all", "--unshare-user"),
        *("--disable-userns", "--cap-drop", "ALL"),
        *(("--share-net",) if policy.network else ()),
        *("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"),
    ]
    for folder in policy.hidden:
        args += ["--tmpfs", str(folder)]
    args += ["--ro-bind", str(policy.package), str(policy.package)]
    for folder in policy.readable:
        args += ["--ro-bind", str(folder), str(folder)]
    for folder in (policy.data, *policy.writable):
        args += ["--bind", str(folder), str(folder)]
    for folder in policy.hidden:
        args += ["--remount-ro", str(folder)]
    return [*args, "--chdir", str(cwd), "--", *argv]
