"""What a call did to the files handed to it: a stat snapshot, before and after.

A snapshot records each entry's type, size, modification time, change time and inode. The
change time moves on every write, truncation, chmod or link and cannot be set back by an
unprivileged process, so a file whose record is unchanged holds the same bytes: the kit need
not read or hash anything (a walk costs about 15 us per entry, twice per call).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

Record = tuple[str, int, int, int, int]  # type, size, mtime_ns, ctime_ns, inode
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

    def describe(self) -> str:
        return f"{self.kind} {self.path} ({self.area})"


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
    return (kind, size, mtime, 0 if kind == "d" else st.st_ctime_ns, st.st_ino)


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
        Change("created" if path not in before else "modified", Path(path), area)
        for path, (area, record) in after.items()
        if before.get(path, (area, None))[1] != record
    ]
    found += [
        Change("deleted", Path(path), area)
        for path, (area, _) in before.items()
        if path not in after
    ]
    return sorted(found, key=lambda c: (str(c.path), c.kind))
