"""User-mode networking for a sandbox that has the network: its own network namespace, with
egress through slirp4netns and the host's loopback closed.

Sharing the host's network namespace gave a worker with `network` (and every MCP server) the
host's loopback services and every abstract unix socket on the machine (a desktop bus, an
agent, a tmux server started with -L). So such a sandbox gets a namespace of its own too, and
slirp4netns (Debian: slirp4netns) connects it to the outside world as a user-mode NAT, with
`--disable-host-loopback`: 127.0.0.1 of the host is not reachable from inside, nor are the
abstract sockets, which belong to a network namespace.

This module is the launcher put in front of the command (`python -I -S netstack.py [--userns]
-- COMMAND...`: run as a file, with the standard library only, so it starts in milliseconds
whatever environment the worker gets); it becomes the command (exec), so what the host starts
and watches is still the command.
- As root (no user namespace: identity.py), it makes the network namespace itself, brings its
  loopback up, has slirp4netns attached to it, and runs bwrap inside it (`--share-net`). The
  helper is forked before, so slirp4netns runs in the host's namespace, where the world is.
- Otherwise (`--userns`) bwrap makes the namespace, in its user namespace: bwrap reports its
  child's pid (`--info-fd`) and holds the child before it runs the command (`--block-fd`)
  until slirp4netns, which joins that user namespace, has configured the network. slirp4netns
  is attached only once bwrap has brought the loopback up (its address shows in the
  namespace's routes): configuring both at once failed one start in twenty.
A helper (a grandchild, so the command is left no child it does not know) starts slirp4netns
and waits for it. slirp4netns exits when the sandbox is gone, as bwrap holds the other end of
its exit pipe (`--sync-fd`) for as long as the sandbox lives; it also carries the worker's
lineage token (lineage.py), so it is ended with everything else the worker started.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import select
import shutil
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Sequence

INFO_FD, BLOCK_FD, RESOLVER_FD, SYNC_FD = 40, 41, 42, 43
READY_SECONDS = 10.0
SLIRP_OPTIONS = ("--configure", "--mtu=65520", "--disable-host-loopback")
# slirp4netns's own DNS forwarder: the namespace cannot reach a resolver on the host's
# loopback (127.0.0.53), so its /etc/resolv.conf names this one.
RESOLVER = b"nameserver 10.0.2.3\n"
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def slirp_program() -> str | None:
    """slirp4netns, when it is installed."""
    return shutil.which("slirp4netns")


def launcher(userns: bool) -> tuple[str, ...]:
    """The words put in front of the command (userns: bwrap makes the namespaces, with
    `--info-fd INFO_FD --block-fd BLOCK_FD`; else the launcher makes the network one)."""
    return (sys.executable, "-I", "-S", __file__, *(["--userns"] if userns else []), "--")


def main(argv: Sequence[str]) -> int:
    """Set up the namespace or the pipes and the helper, then become the command."""
    if "--" not in argv:
        print("usage: netstack [--userns] -- COMMAND...", file=sys.stderr)
        return 2
    split = list(argv).index("--")
    userns, command = "--userns" in argv[:split], list(argv[split + 1 :])
    program = slirp_program()
    if program is None or not command:
        print("netstack: slirp4netns is not installed (Debian: slirp4netns)", file=sys.stderr)
        return 127
    exit_r, exit_w = os.pipe()  # bwrap holds exit_w while the sandbox lives (--sync-fd)
    if userns:
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        _helper(lambda: _attach(program, _loopback_up(_child_pid(info_r)), exit_r, block_w, True))
        kept = [(info_w, INFO_FD), (block_r, BLOCK_FD)]
        for fd in (info_r, block_w):
            os.close(fd)
    else:
        made_r, made_w = os.pipe()  # the helper is forked first: slirp4netns stays outside
        ready_r, ready_w = os.pipe()
        me = os.getpid()
        _helper(
            lambda: _attach(program, me if os.read(made_r, 1) else None, exit_r, ready_w, False)
        )
        os.close(made_r)
        os.close(ready_w)
        try:
            _own_namespace()
        except OSError as exc:
            print(f"netstack: cannot make a network namespace: {exc}", file=sys.stderr)
            return 126
        os.write(made_w, b"1")
        os.close(made_w)
        select.select([ready_r], [], [], READY_SECONDS + 1)
        os.close(ready_r)
        kept = []
    os.close(exit_r)
    resolver = os.memfd_create("resolv.conf", 0)
    os.write(resolver, RESOLVER)
    os.lseek(resolver, 0, os.SEEK_SET)
    for fd, target in (*kept, (resolver, RESOLVER_FD), (exit_w, SYNC_FD)):
        os.dup2(fd, target, inheritable=True)
        os.close(fd)
    os.execvp(command[0], command)
    return 127  # not reached


def _helper(work: object) -> None:
    """Run work() in a grandchild (the child exits at once and is reaped here)."""
    child = os.fork()
    if child == 0:
        code = 0
        if os.fork() == 0:
            os.setsid()  # not in the command's group, which the host watches and kills
            try:
                code = work()  # type: ignore[operator]
            finally:
                os._exit(code)
        os._exit(0)
    os.waitpid(child, 0)


def _own_namespace() -> None:
    """Move this process into a new network namespace with its loopback up."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as control:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(control, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(control, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))


def _attach(program: str, pid: int | None, exit_r: int, done_w: int, userns: bool) -> int:
    """In the helper: attach slirp4netns to pid's network namespace, wait until it says the
    network is configured, then write to done_w (the sandbox then starts anyway, with no
    network, if a step failed: the failure is its first connection's)."""
    try:
        if pid is None:
            return 1
        ready_r, ready_w = os.pipe()
        options = [*SLIRP_OPTIONS, f"--ready-fd={ready_w}", f"--exit-fd={exit_r}"]
        if userns:
            options.append(f"--userns-path=/proc/{pid}/ns/user")
        subprocess.Popen(
            [program, *options, str(pid), "tap0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(ready_w, exit_r),
        )
        os.close(ready_w)
        readable, _, _ = select.select([ready_r], [], [], READY_SECONDS)
        return 0 if readable and os.read(ready_r, 1) else 1
    finally:
        with contextlib.suppress(OSError):  # the command is gone already
            os.write(done_w, b"1")


def _loopback_up(pid: int | None) -> int | None:
    """pid, once its network namespace's loopback is up (127.0.0.1 among its local routes),
    or None when it never is (the sandbox failed to start)."""
    deadline = time.monotonic() + READY_SECONDS
    while pid is not None and time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/net/fib_trie", "rb") as routes:
                if b"127.0.0.1" in routes.read():
                    return pid
        except OSError:
            return None
        time.sleep(0.002)
    return None


def _child_pid(info_r: int) -> int | None:
    """The child-pid of bwrap's info JSON (written once, when the child exists)."""
    text = b""
    while True:
        chunk = os.read(info_r, 4096)
        if not chunk:
            return None
        text += chunk
        try:
            info = json.loads(text)
        except ValueError:
            continue
        pid = info.get("child-pid") if isinstance(info, dict) else None
        return pid if isinstance(pid, int) else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
