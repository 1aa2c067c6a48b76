"""The system call filter of the worker sandbox: what a worker never needs, and what would let
it slip past the kit's tracer, is refused the same way in the kit and in a host.

- ptrace: EPERM. Under the kit's strace a worker's `ptrace(PTRACE_TRACEME)` fails; refused
  everywhere, it fails in a host too, so asking tells a worker nothing.
- clone with CLONE_UNTRACED: EPERM. Such a child is not followed by a tracer.
- clone or unshare with CLONE_NEWUSER: EPERM. A user namespace of its own gives a worker
  every capability over the namespaces it then makes (bwrap's --disable-userns refuses it
  too, with ENOSPC; this holds wherever that is missing).
- clone3, io_uring_setup and openat2: ENOSYS, as on a kernel without them (C libraries fall
  back to clone and openat). clone3's flags and openat2's mode are in a struct the filter
  cannot read; io_uring's reads, writes and connects bypass the traced system calls.
- a mode with the set-user-id or set-group-id bit (chmod, fchmod, fchmodat, open, openat,
  creat, mknod, mknodat): EPERM. Where the host runs as root a worker could otherwise leave
  a set-uid root program in its data folder.
- on x86_64, the x32 system calls (numbers with bit 30 set): ENOSYS. They carry the x86_64
  architecture value but numbers of their own, so every check above would miss them.

The program is classic BPF as seccomp(2) takes it (struct sock_filter: u16 code, u8 jt,
u8 jf, u32 k), assembled from labelled instructions and handed to bwrap through a file
descriptor (`--seccomp FD`).
"""

from __future__ import annotations

import errno
import os
import struct
from dataclasses import dataclass

LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
JUMP_IF_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JUMP_IF_SET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
JUMP_IF_AT_LEAST = 0x35  # BPF_JMP | BPF_JGE | BPF_K
JUMP_ALWAYS = 0x05  # BPF_JMP | BPF_JA
RETURN = 0x06  # BPF_RET | BPF_K
NR, ARCH, FIRST_ARGUMENT = 0, 4, 16  # offsets in struct seccomp_data (the low word, LE)
CLONE_UNTRACED = 0x00800000
CLONE_NEWUSER = 0x10000000
X32_SYSCALL_BIT = 0x40000000
VERDICTS = {
    "allow": 0x7FFF0000,  # SECCOMP_RET_ALLOW
    "eperm": 0x00050000 | errno.EPERM,  # SECCOMP_RET_ERRNO
    "enosys": 0x00050000 | errno.ENOSYS,
}


@dataclass(frozen=True)
class Numbers:
    """One architecture (its AUDIT_ARCH_* value), its system call numbers, and the calls that
    set a file's mode, with the index of their mode argument."""

    arch: int
    ptrace: int
    clone: int
    unshare: int
    modes: tuple[tuple[int, int], ...]
    clone3: int = 435
    io_uring_setup: int = 425
    openat2: int = 437
    x32: bool = False  # numbers from X32_SYSCALL_BIT up are another ABI's


# modes: chmod, fchmod, fchmodat, fchmodat2, open, openat, creat, mknod, mknodat (those the
# architecture has)
ARCHITECTURES = (
    Numbers(  # x86_64
        0xC000003E,
        101,
        56,
        272,
        ((90, 1), (91, 1), (268, 2), (452, 2), (2, 2), (257, 3), (85, 1), (133, 1), (259, 2)),
        x32=True,
    ),
    Numbers(  # i386
        0x40000003,
        26,
        120,
        310,
        ((15, 1), (94, 1), (306, 2), (452, 2), (5, 2), (295, 3), (8, 1), (14, 1), (297, 2)),
    ),
    # aarch64: no chmod, open, creat nor mknod
    Numbers(0xC00000B7, 117, 220, 97, ((52, 1), (53, 2), (452, 2), (56, 3), (33, 2))),
)
SET_ID_BITS = 0o6000  # S_ISUID | S_ISGID: a file the worker makes must not run as its owner

Insn = tuple[
    int, str | int, str | int, int | str
]  # code, jump if true, if false, k (a label for JA)
Line = tuple[str | None, Insn]


def _block(index: int, numbers: Numbers) -> list[Line]:
    """The instructions for one architecture; a label on the first, jumps by label."""
    after, argument = f"arch{index + 1}", f"argument{index}_"
    lines: list[Line] = [
        (f"arch{index}", (JUMP_IF_EQUAL, 0, after, numbers.arch)),
        (None, (LOAD_WORD, 0, 0, NR)),
    ]
    if numbers.x32:
        lines.append((None, (JUMP_IF_AT_LEAST, "enosys", 0, X32_SYSCALL_BIT)))
    lines += [
        (None, (JUMP_IF_EQUAL, "eperm", 0, numbers.ptrace)),
        (None, (JUMP_IF_EQUAL, "enosys", 0, numbers.clone3)),
        (None, (JUMP_IF_EQUAL, "enosys", 0, numbers.io_uring_setup)),
        (None, (JUMP_IF_EQUAL, "enosys", 0, numbers.openat2)),
        (None, (JUMP_IF_EQUAL, f"clone{index}", 0, numbers.clone)),
        (None, (JUMP_IF_EQUAL, f"unshare{index}", 0, numbers.unshare)),
    ]
    lines += [(None, (JUMP_IF_EQUAL, f"{argument}{at}", 0, nr)) for nr, at in numbers.modes]
    lines += [
        (None, (JUMP_ALWAYS, 0, 0, "allow")),
        (f"clone{index}", (LOAD_WORD, 0, 0, FIRST_ARGUMENT)),
        (None, (JUMP_IF_SET, "eperm", "allow", CLONE_UNTRACED | CLONE_NEWUSER)),
        (f"unshare{index}", (LOAD_WORD, 0, 0, FIRST_ARGUMENT)),
        (None, (JUMP_IF_SET, "eperm", "allow", CLONE_NEWUSER)),
    ]
    for at in sorted({at for _, at in numbers.modes}):
        lines += [
            (f"{argument}{at}", (LOAD_WORD, 0, 0, FIRST_ARGUMENT + 8 * at)),
            (None, (JUMP_IF_SET, "eperm", "allow", SET_ID_BITS)),
        ]
    return lines


def program() -> bytes:
    """The filter: per architecture, the refusals above; everything else allowed."""
    lines: list[Line] = [(None, (LOAD_WORD, 0, 0, ARCH))]
    for index, numbers in enumerate(ARCHITECTURES):
        lines += _block(index, numbers)
    lines.append((f"arch{len(ARCHITECTURES)}", (RETURN, 0, 0, VERDICTS["allow"])))
    for verdict, value in VERDICTS.items():
        lines.append((verdict, (RETURN, 0, 0, value)))
    labels = {label: at for at, (label, _) in enumerate(lines) if label is not None}

    def offset(at: int, target: str | int) -> int:
        return target if isinstance(target, int) else labels[target] - at - 1

    def encode(at: int, code: int, jt: str | int, jf: str | int, k: int | str) -> bytes:
        if code == JUMP_ALWAYS:  # the offset is in k
            return struct.pack("<HBBI", code, 0, 0, offset(at, k))
        assert isinstance(k, int)
        return struct.pack("<HBBI", code, offset(at, jt), offset(at, jf), k)

    return b"".join(encode(at, *insn) for at, (_, insn) in enumerate(lines))


def program_fd() -> int:
    """A readable descriptor holding program(), for bwrap's --seccomp; the caller passes it
    to the child and closes it once the worker is started."""
    fd = os.memfd_create("worker-seccomp", 0)
    os.write(fd, program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
