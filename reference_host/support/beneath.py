"""Files reached beneath a directory descriptor, one component at a time, never through a link.

A path string checked with resolve() can be redirected before anyone opens it (a symlink
renamed into place). A descriptor cannot: each component here is opened relative to the
descriptor of its parent with O_NOFOLLOW, so a link anywhere on the way fails the open
instead of being followed, and what was opened is what gets read or written
(spec: host.md#fileref-grants).
POSIX only (dir_fd and O_NOFOLLOW); `supported()` says whether this platform has them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Iterator, Sequence

DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
# O_NONBLOCK: opening a FIFO must not wait for a writer; the fstat then refuses it
READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
CHUNK = 1024 * 1024
CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


class NotPlain(OSError):
    """An entry that is a link, or neither a regular file nor a folder, where one was needed."""


class TooLarge(OSError):
    """A file that holds more bytes than the copy may take (it may have grown since its size
    was checked)."""


def supported() -> bool:
    return os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")


def open_dir(path: str) -> int:
    """A descriptor of the folder at path (an allowed root, opened once and kept)."""
    return os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))


def open_beneath(root_fd: int, parts: Sequence[str], *, directory: bool) -> int:
    """Open root/parts[0]/.../parts[-1] without following any link; the caller closes it.

    Raises NotPlain when a component is a link, or the last one is not of the kind asked
    for, or a file that has other hard links: a hard link is the same file under another
    name, which may lie outside the folder (made or swapped in by whoever can write there),
    so its content would come from outside. FileNotFoundError when something on the way is
    gone.
    """
    fd = os.dup(root_fd)
    try:
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            flags = DIRECTORY if (directory or not last) else READ
            try:
                child = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise NotPlain(exc.errno, "a link or not a folder", part) from None
                raise
            os.close(fd)
            fd = child
        info = os.fstat(fd)
        if not (stat.S_ISDIR(info.st_mode) if directory else stat.S_ISREG(info.st_mode)):
            raise NotPlain(errno.EINVAL, "not a regular file" if not directory else "not a folder")
        if not directory and info.st_nlink > 1:
            raise NotPlain(errno.EMLINK, "a file with other hard links")
        return fd
    except BaseException:
        os.close(fd)
        raise


def entries(dir_fd: int) -> Iterator[tuple[str, str]]:
    """(name, kind) of each entry of the folder, kind "dir", "file" or "other" (links too),
    from lstat-like data: nothing is followed."""
    with os.scandir(dir_fd) as listing:
        for entry in listing:
            if entry.is_dir(follow_symlinks=False):
                yield entry.name, "dir"
            elif entry.is_file(follow_symlinks=False):
                yield entry.name, "file"
            else:
                yield entry.name, "other"


def open_child(dir_fd: int, name: str, *, directory: bool) -> int:
    """One entry of an open folder, not followed if it is a link (see open_beneath)."""
    return open_beneath(dir_fd, [name], directory=directory)


def copy_fd(source_fd: int, target_fd: int, limit: int | None = None) -> int:
    """Copy the whole content of one open file into another; returns the bytes copied.

    With a limit, a source holding more than limit bytes raises TooLarge once limit + 1 have
    been read: its size was checked before, but a file can grow while it is copied, and a
    sparse one costs nothing to make, so only the copy itself can bound what it writes.
    """
    if limit is None:
        with (
            open(source_fd, "rb", closefd=False) as source,
            open(target_fd, "wb", closefd=False) as target,
        ):
            shutil.copyfileobj(source, target, CHUNK)
            return target.tell()
    copied = 0
    while chunk := os.read(source_fd, min(CHUNK, limit + 1 - copied)):
        copied += len(chunk)
        if copied > limit:
            raise TooLarge(errno.EFBIG, f"more than {limit} bytes")
        view = memoryview(chunk)
        while view:
            view = view[os.write(target_fd, view) :]
    return copied


def write_file(
    source_fd: int, dir_fd: int, name: str, temporary: str, limit: int | None = None
) -> int:
    """Copy source into dir/name: written to a fresh dir/temporary, then renamed over name
    (at most limit bytes, see copy_fd; nothing is left behind when it is exceeded).

    The rename replaces whatever entry name is (a link included) without following it, and
    never writes into an existing file, so a hard link there cannot carry the write out.
    """
    target = os.open(temporary, CREATE, 0o644, dir_fd=dir_fd)
    try:
        try:
            size = copy_fd(source_fd, target, limit)
        finally:
            os.close(target)
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)
        raise
    return size


def make_dir(dir_fd: int, name: str) -> int:
    """dir/name as a folder (made if missing, never a link); returns its descriptor."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o755, dir_fd=dir_fd)
    return open_child(dir_fd, name, directory=True)
