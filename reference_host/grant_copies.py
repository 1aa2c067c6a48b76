"""What a worker gets for a grant: host-made copies inside the plugin's own data folder
(spec: host.md#fileref-grants).

A worker is never handed a path in the user's folders, because whatever it opens later
could be a link swapped in after the host's check. Instead:

- a read grant (file or folder) is copied, from descriptors opened without following links,
  to <data>/filerefs/<ref id>/read/<name>, refreshed at every call that hands it over;
- a writable folder grant becomes an empty staging folder <data>/filerefs/<ref id>/write/<name>;
  after every call of that plugin in the conversation, what is new or changed there is
  copied into the granted folder through descriptors (links there are refused).

Copies live as long as their grant, not one call: FengYu plugins keep a path between calls
(the Excel sample analyzes a workbook, then splits it in a later call, or in a background job
that writes after its call returned).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import stat
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from plugin_spec.filerefs import FileRefError
from reference_host import beneath

COPIES = "filerefs"  # the folder in each plugin's data folder that holds its grants' copies
MAX_ENTRIES = 10_000  # files and folders in one copied or committed tree
MAX_BYTES = 1024**3  # bytes in one copied or committed tree
MAX_DEPTH = 64


class Budget:
    """What one tree copy may still take; running out refuses the copy, naming the tree.

    The limits are read when a budget is made, so a test can lower them."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.entries = MAX_ENTRIES
        self.size = MAX_BYTES

    def spend(self, entries: int, size: int = 0) -> None:
        self.entries -= entries
        self.size -= size
        if self.entries < 0 or self.size < 0:
            raise self.refusal()

    def refusal(self) -> FileRefError:
        return FileRefError(
            f"{self.what} is larger than the host copies "
            f"({MAX_ENTRIES} entries, {MAX_BYTES // 1024**2} MiB)"
        )

    def copy_file(self, source_fd: int, dir_fd: int, name: str) -> None:
        """Copy the open file into dir/name, paying for the bytes actually copied: its size
        is checked first, and a file that grows past what is left while it is copied is
        cut off there (beneath.TooLarge) rather than filling the disk."""
        size = os.fstat(source_fd).st_size
        self.spend(1, size)
        try:
            copied = beneath.write_file(source_fd, dir_fd, name, _temporary(), self.size + size)
        except beneath.TooLarge:
            raise self.refusal() from None
        self.spend(0, copied - size)


@dataclass
class Staging:
    """A writable folder grant's staging folder and what was last committed from it."""

    path: Path
    committed: dict[tuple[str, ...], tuple[int, int, int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class GrantCopies:
    """The copies of every grant handed to a worker, under each plugin's data folder."""

    def __init__(self, data_dirs: Callable[[str], Path]) -> None:
        self._data_dirs = data_dirs
        self._staging: dict[tuple[str, str], Staging] = {}  # (conversation, ref id)
        self._made: set[Path] = set()
        self._lock = threading.Lock()
        self._refreshing: dict[Path, threading.Lock] = {}  # one refresh of a copy at a time

    def folder(self, plugin_id: str, ref_id: str, write: bool) -> Path:
        return self._data_dirs(plugin_id) / COPIES / ref_id / ("write" if write else "read")

    def read_copy(self, plugin_id: str, ref_id: str, name: str, source_fd: int) -> str:
        """Refresh the copy of the open file or folder source_fd; returns the worker's path."""
        folder = self.folder(plugin_id, ref_id, write=False)
        with self._lock:
            refreshing = self._refreshing.setdefault(folder, threading.Lock())
        folder_fd = self._open_folder(folder)
        try:
            with refreshing:
                if stat.S_ISDIR(os.fstat(source_fd).st_mode):
                    _replace_tree(source_fd, folder_fd, name)
                else:
                    Budget(f"the file {name}").copy_file(source_fd, folder_fd, name)
        finally:
            os.close(folder_fd)
        return str(folder / name)

    def staging(self, conversation_id: str, plugin_id: str, ref_id: str, name: str) -> str:
        """The staging folder the worker writes into instead of the granted folder."""
        folder = self.folder(plugin_id, ref_id, write=True)
        folder_fd = self._open_folder(folder)
        try:
            os.close(beneath.make_dir(folder_fd, name))
        finally:
            os.close(folder_fd)
        with self._lock:
            self._staging.setdefault((conversation_id, ref_id), Staging(folder / name))
        return str(folder / name)

    def pending(self, conversation_id: str, ref_ids: set[str]) -> list[tuple[str, Staging]]:
        """(ref id, staging) of the given refs that were handed out in this conversation."""
        with self._lock:
            return [
                (ref_id, s)
                for (conversation, ref_id), s in self._staging.items()
                if conversation == conversation_id and ref_id in ref_ids
            ]

    def forget(self, conversation_id: str, plugin_refs: list[tuple[str, str]]) -> None:
        """Delete the copies of these (plugin id, ref id) grants of a forgotten conversation."""
        with self._lock:
            for plugin_id, ref_id in plugin_refs:
                self._staging.pop((conversation_id, ref_id), None)
                self._refreshing.pop(self.folder(plugin_id, ref_id, write=False), None)
        for plugin_id, ref_id in plugin_refs:
            shutil.rmtree(self._data_dirs(plugin_id) / COPIES / ref_id, ignore_errors=True)

    def close(self) -> None:
        """Delete every copy this host made (the grants they belong to live in memory)."""
        with self._lock:
            made, self._made = self._made, set()
            self._staging.clear()
            self._refreshing.clear()
        for path in made:
            shutil.rmtree(path, ignore_errors=True)

    def _open_folder(self, folder: Path) -> int:
        base = folder.parent.parent
        base.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._made.add(base)
        fd = beneath.open_dir(str(base))
        try:
            for part in (folder.parent.name, folder.name):
                child = beneath.make_dir(fd, part)
                os.close(fd)
                fd = child
            return fd
        except BaseException:
            os.close(fd)
            raise


def commit(staging: Staging, target_fd: int, what: str) -> None:
    """Copy what is new or changed in staging into the open granted folder target_fd.

    The whole staging tree is checked first (folders and regular files only, bounded), so a
    refused tree commits nothing; entries are then opened again without following links.
    """
    with staging.lock:
        staging_fd = beneath.open_dir(str(staging.path))
        try:
            plan = list(_walk(staging_fd, (), Budget(f"the output for {what}"), str(staging.path)))
            # the worker may still be writing: what is copied is bounded again, as it is read
            copying = Budget(f"the output for {what}")
            for parts, kind, key in plan:
                if kind == "dir" or staging.committed.get(parts) == key:
                    continue
                _commit_file(staging_fd, target_fd, parts, copying)
                staging.committed[parts] = key
        finally:
            os.close(staging_fd)


def _commit_file(staging_fd: int, target_fd: int, parts: tuple[str, ...], budget: Budget) -> None:
    source = beneath.open_beneath(staging_fd, parts, directory=False)
    folder = os.dup(target_fd)
    try:
        for part in parts[:-1]:
            child = beneath.make_dir(folder, part)
            os.close(folder)
            folder = child
        budget.copy_file(source, folder, parts[-1])
    finally:
        os.close(folder)
        os.close(source)


def _walk(
    dir_fd: int, parts: tuple[str, ...], budget: Budget, shown: str
) -> Iterator[tuple[tuple[str, ...], str, tuple[int, int, int]]]:
    """(parts, kind, (size, mtime_ns, inode)) of every entry under an open staging folder;
    a link or special file refuses the whole tree, naming it."""
    if len(parts) > MAX_DEPTH:
        raise FileRefError(f"{shown}: folders nested deeper than {MAX_DEPTH}")
    # listed up to what the budget allows: a million entries are not all read into memory
    for name, kind in sorted(itertools.islice(beneath.entries(dir_fd), budget.entries + 1)):
        here = (*parts, name)
        if kind == "other":
            raise FileRefError(
                f"{os.path.join(shown, *here)} is a link or a special file; nothing was written"
            )
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        budget.spend(1, info.st_size if kind == "file" else 0)
        yield here, kind, (info.st_size, info.st_mtime_ns, info.st_ino)
        if kind == "dir":
            child = beneath.open_child(dir_fd, name, directory=True)
            try:
                yield from _walk(child, here, budget, shown)
            finally:
                os.close(child)


def _replace_tree(source_fd: int, folder_fd: int, name: str) -> None:
    """folder/name becomes a fresh copy of the open folder source_fd: built aside, then
    renamed into place, so a worker never sees a half-made tree at that path."""
    fresh = _temporary()
    new_fd = beneath.make_dir(folder_fd, fresh)
    try:
        try:
            _copy_tree(source_fd, new_fd, 0, Budget(f"the folder {name}"))
        finally:
            os.close(new_fd)
        old = _temporary()
        with contextlib.suppress(FileNotFoundError):
            os.rename(name, old, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        os.rename(fresh, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        shutil.rmtree(old, ignore_errors=True, dir_fd=folder_fd)
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True, dir_fd=folder_fd)
        raise


def _copy_tree(source_fd: int, target_fd: int, depth: int, budget: Budget) -> None:
    """Regular files and folders only: links, FIFOs and devices in a granted folder are left
    out, never followed or opened."""
    if depth > MAX_DEPTH:
        raise FileRefError(f"{budget.what}: folders nested deeper than {MAX_DEPTH}")
    for name, kind in beneath.entries(source_fd):
        if kind == "other":
            continue
        try:
            child = beneath.open_child(source_fd, name, directory=kind == "dir")
        except (beneath.NotPlain, FileNotFoundError):
            continue  # swapped for a link, or removed, since it was listed: left out
        try:
            if kind == "dir":
                budget.spend(1)
                sub = beneath.make_dir(target_fd, name)
                try:
                    _copy_tree(child, sub, depth + 1, budget)
                finally:
                    os.close(sub)
            else:
                budget.copy_file(child, target_fd, name)
        finally:
            os.close(child)


def _temporary() -> str:
    return f".fy-{uuid.uuid4().hex}.part"
