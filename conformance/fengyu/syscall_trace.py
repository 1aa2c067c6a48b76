"""What a sandboxed worker tried to do, read from its system calls (`strace`, outside the
sandbox).

Inside the sandbox (reference_host/process/sandbox.py) a write outside the worker's data
folder and grants fails with EROFS, and a connection without the network permission fails
with ENETUNREACH: nothing changes that a snapshot could see. The attempt itself is the
evidence, and FengYu's sandbox would refuse it the same way. strace runs outside the
sandbox's PID namespace, so the worker's TracerPid reads 0, and it sets no variable; it
traces every process of the sandbox until the last one is gone, so a write made after a
call answered, or by a detached child, is still seen.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from reference_host.process.sandbox import support

WRITES = (
    *("open", "openat", "openat2", "creat", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat"),
    *("rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat", "truncate"),
    *("ftruncate", "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown"),
    *("fchownat", "utime", "utimes", "futimesat", "utimensat", "mknod", "mknodat", "bind"),
    *("setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr"),
)
SENDS = ("connect", "sendto", "sendmsg", "sendmmsg")
# The sandbox's answers to a write it does not allow: a read-only mount, a mode, a rename
# out of a writable folder (another mount), or a folder it hides (ENOENT, see below).
REFUSED = ("EROFS", "EACCES", "EPERM", "EXDEV")
# What a runtime itself tries and takes no for, whatever the tool does: Python's byte-code
# cache beside a read-only module, the JVM's performance-data file in /tmp. Only where
# nothing may be written: in a writable folder such a name could be a link to anywhere.
RUNTIME_NOISE = re.compile(r"(/__pycache__(/|$)|\.pyc(\.\d+)?$|^/tmp/hsperfdata_)")

_LINE = re.compile(r"^(\d+)\s+(\d+\.\d+) (.*)$")
_CALL = re.compile(r"^(\w+)\((.*)\) += (-?\d+|\?)(?: (E[A-Z0-9]+))?")
_PATH = re.compile(r'"((?:[^"\\]|\\.)*)"')
_FD_PATH = re.compile(r"^\d+<([^>]*)>")  # with -y, a descriptor shows what it names
_WRITE_FLAGS = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC")
_INET = re.compile(
    r"sa_family=AF_INET6?, sin6?_port=htons\((\d+)\)"
    r".*?(?:inet_addr\(\"([^\"]+)\"\)|inet_pton\(AF_INET6, \"([^\"]+)\")"
)


@cache
def strace_program() -> str:
    """strace, where it is installed (the kit needs it to see refused attempts)."""
    return shutil.which("strace") or ""


def effects_unseen() -> str:
    """Why the kit cannot see what a worker or server does on this machine; "" when it can."""
    if not support().available:
        return f"effects are seen only inside the worker sandbox: {support().reason}"
    if not strace_program():
        return (
            "strace is not installed, and without it what the sandbox refuses is not seen "
            "(Debian: apt-get install strace)"
        )
    return ""


def tracer(strace: str, output: Path) -> tuple[str, ...]:
    """The command prefix that appends the traced calls of a program and all it starts to
    output, with wall-clock times (so each can be laid at the door of a call). With
    --seccomp-bpf only the traced calls stop the program: the thousands of other calls a
    runtime makes while it starts run at full speed, which makes a traced start (after each
    crash of a worker under a property search) about twice as fast, with the same trace."""
    return (
        *(strace, "--seccomp-bpf", "-f", "-qq", "-y", "-ttt", "-A", "-s", "4096"),
        *("-e", "signal=none"),
        # "?": a name this architecture lacks (utime on aarch64) is skipped, not an error
        *("-e", f"trace={','.join('?' + n for n in (*WRITES, *SENDS))}"),
        *("-o", str(output), "--"),
    )


@dataclass(frozen=True)
class Attempt:
    """One traced call that wrote or reached out: when, what (a path or host:port), whether
    the sandbox refused it, and the call as strace printed it."""

    time: float
    kind: str  # write | connect
    target: str
    refused: bool
    line: str

    def describe(self) -> str:
        if self.kind == "connect":
            verb = "tried to connect to" if self.refused else "connected to"
            return f"{verb} {self.target}"
        verb = "tried to write" if self.refused else "wrote"
        return f"{verb} {self.target}"


def read_trace(path: Path, cwd: Path, writable: Iterable[Path] = ()) -> list[Attempt]:
    """The attempts in a trace file, in order, relative paths taken from cwd (the worker's
    working folder); writable: the folders the worker may write, where no runtime noise is
    taken for granted. A connection to loopback counts: in a sandbox without the network it
    was meant for a service of the host's, and reached nothing."""
    try:
        text = path.read_text("utf-8", "replace")
    except FileNotFoundError:
        return []
    return list(_attempts(_joined(text.splitlines()), cwd, tuple(writable)))


def _joined(lines: Iterable[str]) -> Iterator[tuple[float, str]]:
    """(time, call) for each call, an `<unfinished ...>` line joined with its `resumed`."""
    pending: dict[str, str] = {}
    for line in lines:
        match = _LINE.match(line)
        if match is None:
            continue
        pid, stamp, rest = match.groups()
        if rest.endswith("<unfinished ...>"):
            pending[pid] = rest[: -len("<unfinished ...>")].rstrip()
            continue
        resumed = re.match(r"^<\.\.\. \w+ resumed>\s?(.*)$", rest)
        if resumed is not None:
            rest = pending.pop(pid, "") + resumed.group(1)
        yield float(stamp), rest


def _hidden_from_it(target: str) -> bool:
    """Whether a write that failed for a missing folder failed because the sandbox does not
    mount it: a folder on its way exists out here (below the root: the user's HOME, /var),
    not because the path is missing everywhere."""
    path = Path(target)
    return path.is_absolute() and any(p.is_dir() for p in path.parents[:-1])


def _attempts(
    calls: Iterable[tuple[float, str]], cwd: Path, writable: tuple[Path, ...]
) -> Iterator[Attempt]:
    for stamp, text in calls:
        match = _CALL.match(text)
        if match is None:
            continue
        name, args, result, errno = match.groups()
        if name in SENDS:
            inet = _INET.search(args)
            if inet is not None:
                port, v4, v6 = inet.groups()
                target = f"[{v6}]:{port}" if v6 else f"{v4}:{port}"
                failed = result == "-1" and errno != "EINPROGRESS"
                yield Attempt(stamp, "connect", target, failed, text)
            continue
        refused = result == "-1" and (errno in REFUSED or errno == "ENOENT")
        if not refused or (name.startswith("open") and not _WRITE_FLAGS.search(args)):
            continue
        written = _target(args, cwd)
        if written is None or (errno == "ENOENT" and not _hidden_from_it(written)):
            continue
        if RUNTIME_NOISE.search(written) and not _under(written, writable):
            continue
        yield Attempt(stamp, "write", written, True, text)


def _target(args: str, cwd: Path) -> str | None:
    """The path a call meant to write: its last quoted path (a relative one taken from cwd
    or from its folder descriptor), else the file its descriptor names."""
    paths = _PATH.findall(args)
    if not paths:
        named = _FD_PATH.match(args)
        return str(named.group(1)) if named else None
    target = str(paths[-1])
    if target.startswith("/"):
        return target
    folder = re.match(r"^(?:AT_FDCWD|\d+)<([^>]*)>", args)
    if folder is not None:
        return str(Path(folder.group(1)) / target)
    return str(cwd / target)


def _under(target: str, folders: tuple[Path, ...]) -> bool:
    return any(Path(target).is_relative_to(folder) for folder in folders)
