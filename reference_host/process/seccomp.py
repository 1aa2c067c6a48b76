"""The one system call filter of the worker sandbox: ptrace is refused (EPERM).

A worker never needs ptrace, and refusing it everywhere makes the kit's tracer invisible:
under strace a worker's `ptrace(PTRACE_TRACEME)` fails, so a worker that asked could tell the
kit from a host. With this filter it fails in both, the same way. The program is classic BPF
as seccomp(2) takes it (struct sock_filter: u16 code, u8 jt, u8 jf, u32 k), handed to bwrap
through a file descriptor (`--seccomp FD`).
"""

from __future__ import annotations

import errno
import os
import struct

LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
JUMP_IF_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
RETURN = 0x06  # BPF_RET | BPF_K
ARCH_OFFSET, NR_OFFSET = 4, 0  # struct seccomp_data: int nr; u32 arch; ...
ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
REFUSE = 0x00050000 | errno.EPERM  # SECCOMP_RET_ERRNO
# ptrace's number per architecture (AUDIT_ARCH_*): x86_64, i386, aarch64.
PTRACE = ((0xC000003E, 101), (0x40000003, 26), (0xC00000B7, 117))


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def program() -> bytes:
    """Refuse ptrace on the architectures above, allow everything else."""
    blocks = len(PTRACE)
    insns = [_insn(LOAD_WORD, 0, 0, ARCH_OFFSET)]
    for index, (arch, number) in enumerate(PTRACE):
        left = blocks - index - 1  # blocks after this one, three instructions each
        allow = 3 * left  # from the JEQ on the number to RETURN ALLOW
        insns += [
            # not this architecture: the next block (the accumulator still holds the arch)
            _insn(JUMP_IF_EQUAL, 0, 2, arch),
            _insn(LOAD_WORD, 0, 0, NR_OFFSET),
            _insn(JUMP_IF_EQUAL, allow + 1, allow, number),
        ]
    insns += [_insn(RETURN, 0, 0, ALLOW), _insn(RETURN, 0, 0, REFUSE)]
    return b"".join(insns)


def program_fd() -> int:
    """A readable descriptor holding program(), inheritable, for bwrap's --seccomp; the
    caller closes it once the worker is started."""
    fd = os.memfd_create("worker-seccomp", 0)
    os.write(fd, program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
