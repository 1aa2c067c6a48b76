"""What a sandboxed worker tried to do, read from its system calls (`strace`, outside the
sandbox).

Inside the sandbox (reference_host/process/sandbox.py) a write outside the worker's data
folder and grants fails with EROFS, and a connection without the network permission fails
with ENETUNREACH: nothing changes that a snapshot could see. The attempt itself is the
evidence, and FengYu's sandbox would refuse it the same way. strace runs outside the
sandbox's PID namespace, so the worker's TracerPid reads 0, and it sets no variable; it
traces every process of the sandbox until the last one is gone, so a write made after a
call answered, or by a detached child, is still seen.

Sending counts, not only connecting: a socket opened and connected while the worker started
sends during a call with a plain write or sendto, no address given. So the trace follows
which descriptors are sockets (socket, accept, socketpair: `-y` names each by its inode, the
same in every process that holds it) and of which family; a send on an internet or unix
socket is an attempt, one on a socketpair (a runtime's own wake-up channel) or a netlink
socket is not. It also notes which process or thread started which (clone, fork) and when
each ended, so that an effect can be laid at the door of the call that started its doer
(attribution.py), and what is still asleep when the kit would end the worker.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
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
SENDS = ("connect", "sendto", "sendmsg", "sendmmsg", "write", "writev", "sendfile")
# What the trace needs besides: which descriptors are sockets, who started whom, and the
# sleeps a thread a call started is in when the kit would end the worker.
LINEAGE = ("socket", "socketpair", "accept", "accept4", "clone", "clone3", "fork", "vfork")
SLEEPS = ("nanosleep", "clock_nanosleep", "setsid")
NET_KINDS = ("connect", "send")  # the kinds of Attempt that reach out of the sandbox
# The sandbox's answers to a write it does not allow: a read-only mount, a mode, a rename
# out of a writable folder (another mount), or a folder it hides (ENOENT, see below).
REFUSED = ("EROFS", "EACCES", "EPERM", "EXDEV")
# What a runtime itself tries and takes no for, whatever the tool does: Python's byte-code
# cache beside a read-only module, the JVM's performance-data file in /tmp. Only where
# nothing may be written: in a writable folder such a name could be a link to anywhere.
RUNTIME_NOISE = re.compile(r"(/__pycache__(/|$)|\.pyc(\.\d+)?$|^/tmp/hsperfdata_)")
# Unix sockets the C library itself asks when a name is looked up (nscd, systemd's user
# database): a lookup, whatever the tool does, and refused in the sandbox anyway.
UNIX_NOISE = re.compile(r"^(/var)?/run/(nscd/socket$|systemd/userdb/)")

_LINE = re.compile(r"^(\d+)\s+(\d+\.\d+) (.*)$")
_CALL = re.compile(r"^(\w+)\((.*)\) += (-?\d+|\?)(?: (E[A-Z0-9]+))?")
_PATH = re.compile(r'"((?:[^"\\]|\\.)*)"')
_FD_PATH = re.compile(r"^\d+<([^>]*)>")  # with -y, a descriptor shows what it names
_WRITE_FLAGS = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC")
_SOCKET_FD = re.compile(r"^(\d+)<socket:\[(\d+)\]>")  # the first argument, with -y
_RETURNED = re.compile(r"^(\d+)<socket:\[(\d+)\]>$")  # a returned socket, with -y
_PAIR = re.compile(r"socket:\[(\d+)\]")
_UNIX = re.compile(r'sa_family=AF_UNIX, sun_path=(@?)"((?:[^"\\]|\\.)*)"')
_FAMILY = re.compile(r"^(AF_INET6?|AF_UNIX)\b")
_EXIT = re.compile(r"^\+\+\+ (exited with|killed by)")
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
        # -q, not -qq: each process's and thread's end is printed, to know what still runs
        *(strace, "--seccomp-bpf", "--pidns-translation", "-f", "-q", "-y", "-ttt", "-A"),
        *("-s", "4096"),
        *("-e", "signal=none"),
        # "?": a name this architecture lacks (utime on aarch64) is skipped, not an error
        *("-e", f"trace={','.join('?' + n for n in (*WRITES, *SENDS, *LINEAGE, *SLEEPS))}"),
        *("-o", str(output), "--"),
    )


@dataclass(frozen=True)
class Attempt:
    """One traced call that wrote or reached out: when, what (a path, host:port or a unix
    socket), whether it failed (refused by the sandbox, or unreachable), the call as strace
    printed it, and the process or thread that made it (task)."""

    time: float
    kind: str  # write | connect | send
    target: str
    refused: bool
    line: str
    task: int = 0

    def describe(self, tried: bool = False) -> str:
        """What it did; tried: as an attempt whatever its outcome (a sandbox without the
        network, where a connection under way reaches nothing)."""
        tried = tried or self.refused
        if self.kind == "connect":
            verb = "tried to connect to" if tried else "connected to"
        elif self.kind == "send":
            verb = "tried to send to" if tried else "sent to"
        else:
            verb = "tried to write" if tried else "wrote"
        return f"{verb} {self.target}"


@dataclass
class Trace:
    """What a trace file holds: the attempts in order, who started each process or thread
    (births: task -> (its starter, when)), the tasks that ended, and the tasks in a sleep
    (or that made themselves a session of their own, daemonised) when it was read. inits
    are the first processes of new PID namespaces: the sandbox's own init, which bwrap makes
    a session of its own while the worker starts, often after the first call was sent."""

    attempts: list[Attempt] = field(default_factory=list)
    births: dict[int, tuple[int, float]] = field(default_factory=dict)
    ended: set[int] = field(default_factory=set)
    asleep: set[int] = field(default_factory=set)
    daemons: set[int] = field(default_factory=set)
    inits: set[int] = field(default_factory=set)


def read_trace(path: Path, cwd: Path, writable: Iterable[Path] = ()) -> list[Attempt]:
    """The attempts in a trace file, in order (see read_full)."""
    return read_full(path, cwd, writable).attempts


def read_full(path: Path, cwd: Path, writable: Iterable[Path] = ()) -> Trace:
    """A trace file read: relative paths taken from cwd (the worker's working folder);
    writable: the folders the worker may write, where a write is an attempt even when it
    succeeds (its data folder: allowed to a FengYu tool, not to a read-only MCP tool) and no
    runtime noise is taken for granted. A connection to loopback counts: in a sandbox without
    the network it was meant for a service of the host's, and reached nothing."""
    try:
        text = path.read_text("utf-8", "replace")
    except FileNotFoundError:
        return Trace()
    return _Reader(cwd, tuple(writable)).read(text.splitlines())


def _hidden_from_it(target: str) -> bool:
    """Whether a write that failed for a missing folder failed because the sandbox does not
    mount it: a folder on its way exists out here (below the root: the user's HOME, /var),
    not because the path is missing everywhere."""
    path = Path(target)
    return path.is_absolute() and any(p.is_dir() for p in path.parents[:-1])


class _Reader:
    """One pass over a trace, following its sockets (by inode) and its tasks."""

    def __init__(self, cwd: Path, writable: tuple[Path, ...]) -> None:
        self.cwd = cwd
        self.writable = writable
        self.trace = Trace()
        self.families: dict[str, str] = {}  # socket inode -> inet | unix | pair | other
        self.peers: dict[str, str] = {}  # socket inode -> what it was connected to

    def read(self, lines: Iterable[str]) -> Trace:
        pending: dict[str, tuple[float, str]] = {}
        for line in lines:
            match = _LINE.match(line)
            if match is None:
                continue
            pid, stamp, rest = match.groups()
            task = int(pid)
            if _EXIT.match(rest):
                self.trace.ended.add(task)
                self.trace.asleep.discard(task)
                continue
            if rest.split("(", 1)[0] in SLEEPS and " = " not in rest:
                self.trace.asleep.add(task)  # asleep as the file was read, its line unended
            if rest.endswith("<unfinished ...>"):
                pending[pid] = (float(stamp), rest[: -len("<unfinished ...>")].rstrip())
                continue
            began = float(stamp)
            resumed = re.match(r"^<\.\.\. \w+ resumed>\s?(.*)$", rest)
            if resumed is not None:
                began, start = pending.pop(pid, (began, ""))
                rest = start + resumed.group(1)
                self.trace.asleep.discard(task)
            self._call(task, began, rest)
        return self.trace

    def _call(self, task: int, stamp: float, text: str) -> None:
        """One whole call, made by task at stamp (when it began)."""
        match = _CALL.match(text)
        if match is None:
            return
        name, args, result, errno = match.groups()
        failed = result == "-1"
        if name in LINEAGE:
            self._lineage(task, stamp, name, args, text.rsplit("= ", 1)[-1], failed)
        elif name == "setsid" and not failed:
            self.trace.daemons.add(task)
        elif name in SENDS:
            attempt = self._send(name, args, failed and errno != "EINPROGRESS", text)
            if attempt is not None:
                self.trace.attempts.append(replace(attempt, time=stamp, task=task))
        elif name in WRITES:
            attempt = self._write(name, args, errno if failed else None, text)
            if attempt is not None:
                self.trace.attempts.append(replace(attempt, time=stamp, task=task))

    def _lineage(
        self, task: int, stamp: float, name: str, args: str, returned: str, failed: bool
    ) -> None:
        if failed:
            return
        if name in ("clone", "clone3", "fork", "vfork"):
            # --pidns-translation: a child in the sandbox's PID namespace, as the trace names it
            child = re.search(r"/\* (\d+) in strace's PID NS \*/", returned) or re.match(
                r"^(\d+)", returned
            )
            if child is not None:
                self.trace.births[int(child.group(1))] = (task, stamp)
                if "CLONE_NEWPID" in args:
                    self.trace.inits.add(int(child.group(1)))
        elif name == "socketpair":
            for inode in _PAIR.findall(args):
                self.families[inode] = "pair"
        elif name == "socket":
            made = _RETURNED.match(returned.split(" ", 1)[0])
            family = _FAMILY.match(args)
            if made is not None:
                kind = "other" if family is None else family.group(1)
                self.families[made.group(2)] = {"AF_UNIX": "unix", "other": "other"}.get(
                    kind, "inet"
                )
        else:  # accept, accept4: a connection of the listening socket's family
            made = _RETURNED.match(returned.split(" ", 1)[0])
            listening = _SOCKET_FD.match(args)
            if made is not None and listening is not None:
                self.families[made.group(2)] = self.families.get(listening.group(2), "other")

    def _send(self, name: str, args: str, failed: bool, text: str) -> Attempt | None:
        """A connect or send to an internet address or a unix socket, named in the call or
        known from its socket; None for a descriptor that is no such socket."""
        socket = _SOCKET_FD.match(args)
        inode = socket.group(2) if socket is not None else ""
        family = self.families.get(inode, "")
        kind = "connect" if name == "connect" else "send"
        inet = _INET.search(args) if name in ("connect", "sendto", "sendmsg", "sendmmsg") else None
        if inet is not None:
            port, v4, v6 = inet.groups()
            target = f"[{v6}]:{port}" if v6 else f"{v4}:{port}"
        elif (unix := _UNIX.search(args)) is not None and name != "write":
            abstract, path = unix.groups()
            if UNIX_NOISE.search(path):
                return None
            target = f"the unix socket {abstract}{path}"
        elif family in ("inet", "unix") and kind == "send":
            target = self.peers.get(
                inode, f"an {'internet' if family == 'inet' else 'unix'} socket"
            )
        else:
            return None
        if name == "connect" and inode:
            self.peers[inode] = target
        return Attempt(0.0, kind, target, failed, text)

    def _write(self, name: str, args: str, errno: str | None, text: str) -> Attempt | None:
        """A write the sandbox refused, or one it allowed in a writable folder; None for any
        other call (a read, a write it allowed elsewhere: the sandbox's own /tmp)."""
        if name.startswith("open") and not _WRITE_FLAGS.search(args):
            return None
        if errno is not None and errno not in (*REFUSED, "ENOENT"):
            return None
        written = _target(args, self.cwd)
        if written is None:
            return None
        if errno is None:
            if name == "bind" or not _under(written, self.writable):
                return None
            return Attempt(0.0, "write", written, False, text)
        if errno == "ENOENT" and not _hidden_from_it(written):
            return None
        if RUNTIME_NOISE.search(written) and not _under(written, self.writable):
            return None
        return Attempt(0.0, "write", written, True, text)


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
