"""Connection attempts seen from inside a worker: `strace` on its connect and send calls.

A tool that opens a socket, fails (there is no network where it runs) and answers success
anyway leaves no outcome to compare and no proxy record. Tracing the system calls of the
copy of the worker that runs without network sees the attempt itself, with its target, in
any language. strace needs no privilege to trace its own children; where it is missing or
cannot trace, the kit goes without it and says so.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

from conformance.fengyu.net_namespace import PROBE_SECONDS, isolation

SYSCALLS = "connect,sendto,sendmsg"
_INET = re.compile(
    r"sa_family=AF_INET6?, sin6?_port=htons\((\d+)\)"
    r".*?(?:inet_addr\(\"([^\"]+)\"\)|inet_pton\(AF_INET6, \"([^\"]+)\")"
)


@cache
def tracing() -> str:
    """The strace program where it can trace inside the network namespace, else ""."""
    strace = shutil.which("strace")
    prefix, _ = isolation()
    if strace is None or not prefix:
        return ""
    argv = [*prefix, *tracer(strace, Path("/dev/null")), sys.executable, "-c", "pass"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return strace if done.returncode == 0 else ""


def tracer(strace: str, output: Path) -> tuple[str, ...]:
    """The command prefix that traces a program and its children into output."""
    return (
        strace,
        "-f",
        "-qq",
        "--seccomp-bpf",
        "-e",
        f"trace={SYSCALLS}",
        "-e",
        "signal=none",
        "-o",
        str(output),
        "--",
    )


def attempts(trace: str) -> list[str]:
    """The internet targets (host:port) of the traced calls, in order, once each; local
    sockets (AF_UNIX, netlink) are not network."""
    found: dict[str, None] = {}
    for line in trace.splitlines():
        match = _INET.search(line)
        if match:
            port, v4, v6 = match.groups()
            found[f"[{v6}]:{port}" if v6 else f"{v4}:{port}"] = None
    return list(found)
