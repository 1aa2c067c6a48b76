"""Who a sandboxed process is: never the real root.

Where the host (or the kit) runs as root, a user namespace alone does not help: bubblewrap
maps the sandbox's uid to the caller's, so the sandbox's "uid 0" is kuid 0 outside, owner of
every root-only file (`/etc/shadow`, ssh host keys). There the sandbox is set up as root and
the worker is dropped to SANDBOX_ID (nobody) before it runs. Elsewhere the caller is already
an ordinary user, and the worker runs as that user.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Iterator
from pathlib import Path

SANDBOX_ID = 65534  # nobody / nogroup on Debian, Fedora and Alpine


def dropped_id() -> int | None:
    """The uid a sandboxed process runs as when that is not the caller's (the caller is
    root), else None."""
    return SANDBOX_ID if hasattr(os, "geteuid") and os.geteuid() == 0 else None


def give(folder: Path) -> None:
    """Make a folder the host owns (a data folder, its home and tmp, a write staging folder)
    the sandbox identity's, so the dropped worker can write in it; nothing when workers run
    as the caller."""
    uid = dropped_id()
    if uid is None:
        return
    stat = os.stat(folder, follow_symlinks=False)
    if stat.st_uid != uid:
        os.chown(folder, uid, uid, follow_symlinks=False)


def hand_over(folder_fd: int) -> None:
    """give() for a folder the host holds open (reached without following links)."""
    uid = dropped_id()
    if uid is not None and os.fstat(folder_fd).st_uid != uid:
        os.fchown(folder_fd, uid, uid)


ACL_ACCESS, ACL_DEFAULT = "system.posix_acl_access", "system.posix_acl_default"
ACL_VERSION = 2
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
NO_ID = 0xFFFFFFFF
MAX_OPENED = 100_000  # entries of one handed folder given an ACL entry; the rest keep theirs


def open_tree(folder: Path) -> str | None:
    """Let the sandbox identity write in a folder the user handed a server (an MCP root),
    as the user could: a POSIX ACL entry for it on the folder and what it holds (read,
    write, and search where the owner may), and the same as the default for what is made
    in it later. Nothing when workers run as the caller. Why it could not be done (a file
    system without ACLs), or None."""
    uid = dropped_id()
    if uid is None:
        return None
    try:
        for count, path in enumerate(_walk(folder)):
            if count >= MAX_OPENED:
                break
            _add_entry(path, uid)
    except OSError as exc:
        return f"{folder}: {exc.strerror} (the sandbox runs as uid {uid}, which needs an ACL there)"
    return None


def _walk(folder: Path) -> Iterator[Path]:
    """folder and everything in it, folders and regular files only, no link followed."""
    yield folder
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in (*dirs, *files):
            path = Path(root) / name
            if not path.is_symlink():
                yield path


def _add_entry(path: Path, uid: int) -> None:
    """An ACL entry giving uid the owner's permissions on path (and the default ACL of a
    folder), keeping the owner, group and other permissions and any other entry. The group
    permissions come from an ACL already there, not from the mode, which then shows the mask:
    taking them from the mode widened the group to the owner's at each hand-over."""
    mode = os.lstat(path).st_mode
    owner = (mode >> 6) & 7
    try:
        present = _entries(os.getxattr(path, ACL_ACCESS, follow_symlinks=False))
    except OSError:
        present = []  # no ACL yet
    if (USER, owner, uid) in present:
        return  # given at an earlier start: leave its times alone
    group = next((perm for tag, perm, _ in present if tag == GROUP_OBJ), (mode >> 3) & 7)
    named = [e for e in present if e[0] in (USER, GROUP) and not (e[0] == USER and e[2] == uid)]
    named.append((USER, owner, uid))
    mask = group
    for _, perm, _ in named:
        mask |= perm
    entries = sorted(
        [
            (USER_OBJ, owner, NO_ID),
            (GROUP_OBJ, group, NO_ID),
            (MASK, mask, NO_ID),
            (OTHER, mode & 7, NO_ID),
            *named,
        ]
    )
    blob = struct.pack("<I", ACL_VERSION) + b"".join(struct.pack("<HHI", *e) for e in entries)
    os.setxattr(path, ACL_ACCESS, blob, follow_symlinks=False)
    if stat.S_ISDIR(mode):
        os.setxattr(path, ACL_DEFAULT, blob, follow_symlinks=False)


def _entries(blob: bytes) -> list[tuple[int, int, int]]:
    """The (tag, permissions, id) entries of an ACL as the kernel stores it."""
    return [struct.unpack_from("<HHI", blob, 4 + 8 * i) for i in range((len(blob) - 4) // 8)]


def closed_to_sandbox(folder: Path) -> str | None:
    """Why the sandbox identity cannot enter a folder bound read-only for it (its mode lets
    only its owner or group in), with the fix; None when it can, or runs as the caller."""
    uid = dropped_id()
    if uid is None or not folder.is_dir():
        return None
    info = os.stat(folder)
    allowed = info.st_mode >> 6 if info.st_uid == uid else info.st_mode
    if allowed & 0o5 == 0o5:
        return None
    return (
        f"{folder} (mode {stat.S_IMODE(info.st_mode):o}) cannot be read by the sandbox, which "
        f"runs as uid {uid} because the host runs as root: `chmod o+rx {folder}`, or run as an "
        "ordinary user"
    )
