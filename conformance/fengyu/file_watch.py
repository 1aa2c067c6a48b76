"""What a call did to the files handed to it: a snapshot, before and after.

A snapshot records each entry's type, size, modification time, change time and inode, and
the SHA-256 of each regular file's bytes. The times alone do not prove the bytes unchanged:
the change time moves on every write, but only as often as the kernel's coarse clock ticks
(a rewrite within milliseconds of the last change keeps it), and a write through a shared
memory mapping whose page is already dirty moves no time at all. Handed files are small
examples, so hashing them costs little (see docs/spec/fengyu-worker.md#effects-on-files).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

Record = tuple[str, int, int, int, int, str]  # type, size, mtime_ns, ctime_ns, inode, sha256
MAX_ENTRIES = 20_000  # per area: the files handed to one tool are far fewer


@dataclass(frozen=True)
class Area:
    """A watched folder, named as findings name it ("the tool's handed files")."""

    root: Path
    name: str


@dataclass(frozen=True)
class Change:
    kind: str  # created | modified | deleted
    path: Path
    area: str
    detail: str = ""  # for modified: whether its bytes changed

    def describe(self) -> str:
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.kind} {self.path} ({self.area}){detail}"


Snapshot = dict[str, tuple[str, Record]]  # by path, as a string: Path objects cost more


class TooManyEntries(Exception):
    """An area holds more entries than a snapshot reads: it cannot be watched whole."""

    def __init__(self, area: Area, limit: int) -> None:
        self.area, self.limit = area, limit
        super().__init__(
            f"{area.name} ({area.root}) holds more than {limit} entries, too many to "
            "watch on every call"
        )


def _record(entry: os.DirEntry[str]) -> Record | None:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return None
    kind = "d" if stat.S_ISDIR(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else "f"
    size = 0 if kind == "d" else st.st_size
    mtime = 0 if kind == "d" else st.st_mtime_ns
    digest = _digest(entry.path) if stat.S_ISREG(st.st_mode) else ""
    return (kind, size, mtime, 0 if kind == "d" else st.st_ctime_ns, st.st_ino, digest)


def _digest(path: str) -> str:
    """The SHA-256 of a regular file's bytes ("unreadable" when it cannot be read). Opened
    without following a link and without blocking, so a file swapped for a FIFO meanwhile
    cannot hang the kit."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return "unreadable"
    with open(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not a regular file"
        try:
            return hashlib.file_digest(file, "sha256").hexdigest()
        except OSError:
            return "unreadable"


def snapshot(areas: Iterable[Area], skip: Iterable[Path] = ()) -> Snapshot:
    """Every entry under the areas (but the skipped folders), by path; raises TooManyEntries
    for an area past MAX_ENTRIES.

    Folders are recorded by type and inode only: their times move whenever an entry is
    added or removed, which the entries themselves already show.
    """
    skipped = {str(p) for p in skip}
    seen: Snapshot = {}
    for area in areas:
        limit = len(seen) + MAX_ENTRIES
        stack = [str(area.root)]
        while stack:
            folder = stack.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = list(listing)
            except OSError:
                continue
            for entry in entries:
                path = entry.path
                if path in skipped or path in seen:
                    continue
                record = _record(entry)
                if record is None:
                    continue
                seen[path] = (area.name, record)
                if len(seen) > limit:
                    raise TooManyEntries(area, MAX_ENTRIES)
                if record[0] == "d":
                    stack.append(path)
    return seen


def changes(before: Snapshot, after: Snapshot) -> list[Change]:
    """What was created, modified or deleted between two snapshots, in path order."""
    found = [
        Change("modified", Path(path), area, _how(before[path][1], record))
        if path in before
        else Change("created", Path(path), area)
        for path, (area, record) in after.items()
        if before.get(path, (area, None))[1] != record
    ]
    found += [
        Change("deleted", Path(path), area)
        for path, (area, _) in before.items()
        if path not in after
    ]
    return sorted(found, key=lambda c: (str(c.path), c.kind))


def _how(before: Record, after: Record) -> str:
    """What a modification changed: the bytes, or only what the file system keeps of them."""
    if before[0] != after[0]:
        return "its type changed"
    if before[5] != after[5]:
        return "its bytes changed"
    return "its bytes are the same, but its times or inode changed"
