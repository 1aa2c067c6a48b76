"""The install copy of a plugin folder: folders and regular files only, no link ever followed.

A check of the folder before the copy proves nothing about the copy: a link renamed into
place in between was copied as the file it points at (issue 10, item 2). Here every entry is
listed without following links, opened with O_NOFOLLOW relative to its parent's descriptor,
checked to be the very regular file or folder that was listed (same device and inode), and
copied from that descriptor. A link, FIFO, device or socket refuses the install, naming it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from reference_host.support import beneath

MAX_DEPTH = 100


class UnsafeEntry(Exception):
    """A plugin folder entry that is not a plain folder or regular file, or changed while
    it was copied; the message names it."""


def copy_plain_tree(source: Path, target: Path) -> None:
    """Copy the folder source to the new folder target (which must not exist).

    Modes and modification times are kept, as shutil.copytree does, so an executable worker
    stays executable, but every entry is made readable to all (shared_mode): a sandboxed
    worker may run as another id than the host (process/identity.py) and reads its package
    as anyone would. On UnsafeEntry or OSError the caller deletes target.
    """
    try:
        source_fd = os.open(source, beneath.DIRECTORY)
    except OSError as exc:
        raise UnsafeEntry(f"{source} is not a plain folder: {exc.strerror}") from None
    try:
        os.mkdir(target, 0o700)
        target_fd = beneath.open_dir(str(target))
        try:
            _copy_folder(source_fd, target_fd, source, 0)
            os.fchmod(target_fd, shared_mode(os.fstat(source_fd).st_mode))
        finally:
            os.close(target_fd)
    finally:
        os.close(source_fd)


def shared_mode(mode: int) -> int:
    """mode without set-id bits, readable (and, where the owner may, executable) by all."""
    readable = mode & 0o500  # the owner's read and execute bits
    return (mode & 0o775) | (readable >> 3) | (readable >> 6)


def verify_plain_tree(root: Path) -> None:
    """The staged copy holds folders and regular files only (checked before it is committed)."""
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            mode = path.lstat().st_mode
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise UnsafeEntry(f"{path} is not a folder or a regular file")


def _copy_folder(source_fd: int, target_fd: int, shown: Path, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise UnsafeEntry(f"{shown}: folders nested deeper than {MAX_DEPTH}")
    with os.scandir(source_fd) as listing:
        listed = [(entry.name, entry.stat(follow_symlinks=False)) for entry in listing]
    for name, info in listed:
        path = shown / name
        if stat.S_ISLNK(info.st_mode):
            raise UnsafeEntry(f"{path} is a symbolic link; a plugin folder may not hold links")
        if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
            raise UnsafeEntry(f"{path} is not a folder or a regular file (a FIFO or a device)")
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            raise UnsafeEntry(
                f"{path} has other hard links; a plugin folder may not hold them "
                "(the same file may lie outside it)"
            )
        directory = stat.S_ISDIR(info.st_mode)
        try:
            child = beneath.open_child(source_fd, name, directory=directory)
        except beneath.NotPlain:
            raise UnsafeEntry(f"{path} was replaced by a link while it was copied") from None
        try:
            opened = os.fstat(child)
            if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                raise UnsafeEntry(f"{path} was replaced while it was copied")
            if directory:
                copy_fd = beneath.make_dir(target_fd, name)
                try:
                    _copy_folder(child, copy_fd, path, depth + 1)
                    os.utime(copy_fd, ns=(opened.st_atime_ns, opened.st_mtime_ns))
                    os.fchmod(copy_fd, shared_mode(opened.st_mode))
                finally:
                    os.close(copy_fd)
            else:
                copy_fd = os.open(name, beneath.CREATE, 0o600, dir_fd=target_fd)
                try:
                    beneath.copy_fd(child, copy_fd)
                    os.fchmod(copy_fd, shared_mode(opened.st_mode))
                    os.utime(copy_fd, ns=(opened.st_atime_ns, opened.st_mtime_ns))
                finally:
                    os.close(copy_fd)
        finally:
            os.close(child)
