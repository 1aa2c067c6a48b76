"""Run a worker with no network at all: an unprivileged user and network namespace.

`unshare -rn` (util-linux) gives the process a network namespace of its own, whose only
interface (loopback) is down, without any privilege where the kernel allows unprivileged
user namespaces. The same request answered there and outside tells whether a tool needs
the network, whatever client library it uses. Where the namespace cannot be made (not
Linux, no unshare, user namespaces disabled), the reason is returned instead.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from functools import cache

PROBE_SECONDS = 10.0


@cache
def isolation() -> tuple[tuple[str, ...], str]:
    """The command prefix that runs a program without network, or () and why not."""
    if not sys.platform.startswith("linux"):
        return (), f"network namespaces are Linux-only (this is {sys.platform})"
    unshare = shutil.which("unshare")
    if unshare is None:
        return (), "unshare (util-linux) is not on PATH"
    prefix = (unshare, "--user", "--map-root-user", "--net", "--")
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", "import socket; socket.gethostname()"],
            capture_output=True,
            timeout=PROBE_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return (), f"unshare could not be run: {exc}"
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = lines[-1] if lines else f"exit code {done.returncode}"
        return (), f"an unprivileged network namespace cannot be made here: {why}"
    return prefix, ""
