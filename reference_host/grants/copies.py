"""What a worker gets for a grant: host-made copies in a folder the host owns, one per
conversation and plugin (spec: host.md#fileref-grants).

A worker is never handed a path in the user's folders, because whatever it opens later
could be a link swapped in after the host's check. Instead, under <host data>/grants/
<plugin>/<conversation>/:

- a read grant (file or folder) is copied, from descriptors opened without following links,
  to read/<ref id>/<name>, refreshed at every call that hands it over, bounded per copy and,
  over the whole host, by the read-copy quota (quota.py);
- a writable folder grant becomes an empty staging folder write/<ref id>/<name>; after a call
  that handed it over, what changed there during that call is copied into the granted folder
  through descriptors (links there are refused).

Why not in the plugin's data folder, as before: a worker writes there freely, in every
conversation, so a read tool called in one conversation could fill another conversation's
staging and have that conversation's next call commit it. Here each conversation's folders
can be the only grant folders its worker reaches (GrantStore.roots, for the sandbox), and a
commit takes only what changed while a call of its own conversation held the staging.

Copies live as long as their grant, not one call: FengYu plugins keep a path between calls
(the Excel sample analyzes a workbook, then splits it in a later call).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import re
import shutil
import stat
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from plugin_spec.filerefs import FileRefError
from reference_host.grants.quota import CopyQuota, Draw, size_text
from reference_host.process.identity import hand_over
from reference_host.support import beneath

HOST_FOLDER = "grants"  # in the host's data folder: every grant's copies and staging
COPIES = "filerefs"  # in each plugin's data folder, where earlier hosts made copies (swept)
MAX_ENTRIES = 10_000  # files and folders in one copied or committed tree
MAX_BYTES = 1024**3  # bytes in one copied or committed tree, unless the host sets another
MAX_DEPTH = 64
PLAIN_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.:-]{0,127}")

Key = tuple[int, int, int]  # (size, mtime_ns, inode) of a staged file
Parts = tuple[str, ...]


class Budget:
    """What one tree copy may still take; running out refuses the copy, naming the tree.

    The per-copy limit is read when a budget is made (a test can lower MAX_BYTES); a read
    copy also draws every byte from the host's quota (pool), which may refuse first."""

    def __init__(self, what: str, max_bytes: int | None = None, pool: Draw | None = None) -> None:
        self.what = what
        self.max_entries = MAX_ENTRIES
        self.max_bytes = MAX_BYTES if max_bytes is None else max_bytes
        self.entries = self.max_entries
        self.size = self.max_bytes
        self.pool = pool

    def spend(self, entries: int, size: int = 0) -> None:
        self.entries -= entries
        self.size -= size
        if self.entries < 0 or self.size < 0:
            raise self.refusal()
        if self.pool is not None:
            self.pool.draw(size)

    def refusal(self) -> FileRefError:
        return FileRefError(
            f"{self.what} is larger than the host copies "
            f"({self.max_entries} entries, {size_text(self.max_bytes)})"
        )

    def copy_file(self, source_fd: int, dir_fd: int, name: str) -> None:
        """Copy the open file into dir/name, paying for the bytes actually copied: its size
        is checked first, and a file that grows past what is left while it is copied is
        cut off there (beneath.TooLarge) rather than filling the disk."""
        size = os.fstat(source_fd).st_size
        self.spend(1, size)
        pooled = size + self.pool.room() if self.pool is not None else None
        own = self.size + size
        limit = own if pooled is None else min(own, pooled)
        try:
            copied = beneath.write_file(source_fd, dir_fd, name, _temporary(), limit)
        except beneath.TooLarge:
            if self.pool is not None and limit < own:
                raise self.pool.refusal() from None
            raise self.refusal() from None
        self.spend(0, copied - size)


@dataclass
class Staging:
    """A writable folder grant's staging folder, and the state of it no call of its
    conversation is answerable for: what it held when a call was handed it, updated with
    what each commit copied. Only entries that differ from that are committed."""

    base: Path  # the host's grants folder
    parts: Parts  # the staging folder below it
    seen: dict[Parts, Key] = field(default_factory=dict)
    handed: bool = False  # handed to a call whose commit has not succeeded yet
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def path(self) -> Path:
        return self.base.joinpath(*self.parts)

    def open(self) -> int:
        """The staging folder's descriptor, reached from base without following a link."""
        base_fd = beneath.open_dir(str(self.base))
        try:
            return beneath.open_beneath(base_fd, self.parts, directory=True)
        finally:
            os.close(base_fd)

    def hand_out(self) -> bool:
        """A call gets this staging: what is there now is not its doing. False when a call
        already holds it (that call's changes since then stay pending)."""
        with self.lock:
            if self.handed:
                return False
            self.seen = _snapshot(self)
            self.handed = True
            return True

    def withdraw(self) -> None:
        """The call that was handed it never reached the worker."""
        with self.lock:
            self.handed = False


class GrantCopies:
    """The copies and staging folders of every grant handed to a worker, under one folder
    the host owns, by plugin and conversation."""

    def __init__(
        self, base: Path, quota: CopyQuota | None = None, max_bytes: int | None = None
    ) -> None:
        self.base = base
        self.quota = quota
        self.max_bytes = max_bytes
        self._staging: dict[tuple[str, str], Staging] = {}  # (conversation, ref id)
        self._made: set[Path] = set()
        self._lock = threading.Lock()
        self._refreshing: dict[Path, threading.Lock] = {}  # one refresh of a copy at a time

    def plugin_root(self, plugin_id: str) -> Path:
        """The folder holding every conversation's copies for one plugin, made if missing."""
        folder = self.base / _folder_name(plugin_id)
        os.close(self._open_folder(folder))
        return folder

    def root(self, conversation_id: str, plugin_id: str, write: bool) -> Path:
        """The folder holding a conversation's read copies (or staging) for one plugin."""
        return (
            self.base
            / _folder_name(plugin_id)
            / _folder_name(conversation_id)
            / ("write" if write else "read")
        )

    def folder(self, conversation_id: str, plugin_id: str, ref_id: str, write: bool) -> Path:
        return self.root(conversation_id, plugin_id, write) / _folder_name(ref_id)

    def make_root(self, conversation_id: str, plugin_id: str, write: bool) -> Path:
        """root(), made if missing (through descriptors: no link in it is followed)."""
        folder = self.root(conversation_id, plugin_id, write)
        os.close(self._open_folder(folder))
        return folder

    def read_copy(
        self, conversation_id: str, plugin_id: str, ref_id: str, name: str, source_fd: int
    ) -> str:
        """Refresh the copy of the open file or folder source_fd; returns the worker's path."""
        folder = self.folder(conversation_id, plugin_id, ref_id, write=False)
        with self._lock:
            refreshing = self._refreshing.setdefault(folder, threading.Lock())
        folder_fd = self._open_folder(folder)
        try:
            with refreshing, self._account(ref_id, name) as pool:
                if stat.S_ISDIR(os.fstat(source_fd).st_mode):
                    budget = Budget(f"the folder {name}", self.max_bytes, pool)
                    _replace_tree(source_fd, folder_fd, name, budget)
                else:
                    budget = Budget(f"the file {name}", self.max_bytes, pool)
                    budget.copy_file(source_fd, folder_fd, name)
        finally:
            os.close(folder_fd)
        return str(folder / name)

    def staging(self, conversation_id: str, plugin_id: str, ref_id: str, name: str) -> Staging:
        """The staging folder the worker writes into instead of the granted folder."""
        folder = self.folder(conversation_id, plugin_id, ref_id, write=True)
        folder_fd = self._open_folder(folder)
        try:
            staging_fd = beneath.make_dir(folder_fd, name)
            try:
                hand_over(staging_fd)
            finally:
                os.close(staging_fd)
        finally:
            os.close(folder_fd)
        parts = (folder / name).relative_to(self.base).parts
        with self._lock:
            return self._staging.setdefault((conversation_id, ref_id), Staging(self.base, parts))

    def pending(self, conversation_id: str, ref_ids: set[str]) -> list[tuple[str, Staging]]:
        """(ref id, staging) of the given refs handed to a call of this conversation whose
        commit is still to come."""
        with self._lock:
            return [
                (ref_id, s)
                for (conversation, ref_id), s in self._staging.items()
                if conversation == conversation_id and ref_id in ref_ids and s.handed
            ]

    def remove(self, conversation_id: str, plugin_id: str, ref_id: str) -> None:
        """Delete one grant's copy and staging (revoked); its quota returns."""
        with self._lock:
            self._staging.pop((conversation_id, ref_id), None)
            for write in (False, True):
                self._refreshing.pop(self.folder(conversation_id, plugin_id, ref_id, write), None)
        if self.quota is not None:
            self.quota.release(ref_id)
        for write in (False, True):
            folder = self.folder(conversation_id, plugin_id, ref_id, write)
            _remove(self.base, folder.relative_to(self.base).parts)

    def forget(self, conversation_id: str, ref_ids: list[str]) -> None:
        """Delete every copy of a forgotten conversation; the quota of its refs returns."""
        name = _folder_name(conversation_id)
        with self._lock:
            for ref_id in ref_ids:
                self._staging.pop((conversation_id, ref_id), None)
            self._refreshing = {
                path: lock
                for path, lock in self._refreshing.items()
                if path.relative_to(self.base).parts[1] != name
            }
        if self.quota is not None:
            for ref_id in ref_ids:
                self.quota.release(ref_id)
        with contextlib.suppress(OSError):
            base_fd = beneath.open_dir(str(self.base))
            try:
                plugins = [entry for entry, kind in beneath.entries(base_fd) if kind == "dir"]
            finally:
                os.close(base_fd)
            for plugin in plugins:
                _remove(self.base, (plugin, name))

    def close(self) -> None:
        """Delete every copy this host made (the grants they belong to live in memory)."""
        with self._lock:
            made, self._made = self._made, set()
            self._staging.clear()
            self._refreshing.clear()
        for path in made:
            _remove(self.base, path.relative_to(self.base).parts)

    @contextlib.contextmanager
    def _account(self, ref_id: str, name: str) -> Iterator[Draw | None]:
        if self.quota is None:
            yield None
            return
        with self.quota.refresh(ref_id, f"the copy of {name}") as pool:
            yield pool

    def _open_folder(self, folder: Path) -> int:
        """folder, made if missing below base, each part opened without following links (a
        worker without a sandbox can write here and might plant one)."""
        self.base.mkdir(parents=True, exist_ok=True)
        parts = folder.relative_to(self.base).parts
        with self._lock:
            self._made.add(self.base / parts[0])
        fd = beneath.open_dir(str(self.base))
        try:
            for part in parts:
                child = beneath.make_dir(fd, part)
                os.close(fd)
                fd = child
            return fd
        except BaseException:
            os.close(fd)
            raise


def commit(staging: Staging, target_fd: int, what: str, max_bytes: int | None = None) -> None:
    """Copy into the open granted folder target_fd what changed in staging since it was
    handed to a call (nothing when no call holds it).

    The whole staging tree is checked first (folders and regular files only, bounded), so a
    refused tree commits nothing; entries are then opened again without following links. A
    refused commit leaves the staging handed, so the next commit tries again.
    """
    with staging.lock:
        if not staging.handed:
            return
        staging_fd = staging.open()
        try:
            budget = Budget(f"the output for {what}", max_bytes)
            plan = list(_walk(staging_fd, (), budget, str(staging.path)))
            # the worker may still be writing: what is copied is bounded again, as it is read
            copying = Budget(f"the output for {what}", max_bytes)
            for parts, kind, key in plan:
                if kind == "dir" or staging.seen.get(parts) == key:
                    continue
                _commit_file(staging_fd, target_fd, parts, copying)
                staging.seen[parts] = key
            staging.handed = False
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


def _replace_tree(source_fd: int, folder_fd: int, name: str, budget: Budget) -> None:
    """folder/name becomes a fresh copy of the open folder source_fd: built aside, then
    renamed into place, so a worker never sees a half-made tree at that path, and a refused
    copy leaves nothing of itself."""
    fresh = _temporary()
    new_fd = beneath.make_dir(folder_fd, fresh)
    try:
        try:
            _copy_tree(source_fd, new_fd, 0, budget)
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


def _snapshot(staging: Staging) -> dict[Parts, Key]:
    """The files in a staging folder now, by (size, mtime_ns, inode): links and special
    files are left out (the commit refuses them), and so is what lies past the bounds."""
    seen: dict[Parts, Key] = {}
    try:
        pending: list[tuple[int, Parts]] = [(staging.open(), ())]
    except OSError:
        return seen
    try:
        while pending:
            dir_fd, parts = pending.pop()
            try:
                _list_into(seen, pending, dir_fd, parts)
            finally:
                os.close(dir_fd)
    finally:
        for dir_fd, _ in pending:
            os.close(dir_fd)
    return seen


def _list_into(
    seen: dict[Parts, Key], pending: list[tuple[int, Parts]], dir_fd: int, parts: Parts
) -> None:
    """One folder of a snapshot: its files into seen, its subfolders (opened) into pending."""
    with contextlib.suppress(OSError):
        for name, kind in itertools.islice(beneath.entries(dir_fd), MAX_ENTRIES + 1):
            here = (*parts, name)
            if len(seen) > MAX_ENTRIES:
                return
            with contextlib.suppress(OSError):
                if kind == "file":
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    seen[here] = (info.st_size, info.st_mtime_ns, info.st_ino)
                elif kind == "dir" and len(here) <= MAX_DEPTH:
                    pending.append((beneath.open_child(dir_fd, name, directory=True), here))


def _remove(base: Path, parts: Parts) -> None:
    """Delete the folder base/parts, reached without following links (a worker without a
    sandbox may have swapped one in, pointing into the user's files); gone already is fine."""
    try:
        base_fd = beneath.open_dir(str(base))
    except OSError:
        return
    try:
        parent = beneath.open_beneath(base_fd, parts[:-1], directory=True)
    except OSError:
        return
    finally:
        os.close(base_fd)
    try:
        shutil.rmtree(parts[-1], dir_fd=parent, ignore_errors=True)
    finally:
        os.close(parent)


def _folder_name(name: str) -> str:
    """A conversation, plugin or ref id as one folder name: as it is when it is a plain name,
    else a digest (an id such as ".." or "a/b" must never name another folder)."""
    if PLAIN_NAME.fullmatch(name):
        return name
    return "~" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


def _temporary() -> str:
    return f".fy-{uuid.uuid4().hex}.part"
