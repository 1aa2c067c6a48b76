"""FileRef grants (spec: host.md#fileref-grants): what a conversation may hand to which plugin,
and injection.

Grants live in memory, as in FengYu. A grant's path is resolved (symlinks included) when it
is attached and must lie under one of the host's allowed roots. At dispatch the target is
opened again beneath that root's descriptor (opened once, when the store is made) without
following any link, and the worker gets a copy made from what was opened (copies.py): a
link swapped in anywhere on the path refuses the call instead of being followed. Copies are
kept per plugin and conversation in a folder the host owns, bounded by the host's read-copy
quota (quota.py), and a grant can be revoked, which deletes them.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from plugin_spec.filerefs import (
    Access,
    FileClass,
    FileKind,
    FileRef,
    FileRefError,
    is_file_ref,
    resolve_refs,
)
from plugin_spec.json_types import JsonMapping, ReadOnlyJson
from reference_host.grants.copies import GrantCopies, Staging, commit
from reference_host.grants.quota import CopyLimits, CopyQuota
from reference_host.support import beneath
from reference_host.tools.callbacks import Arguments, CallPlan, FileShown

REVOKED_KEPT = 10_000  # revoked ref ids remembered, to say so when one is used again
UNKNOWN = "Unknown or unauthorized file reference"  # FengYu's words for a ref it cannot use


@dataclass(frozen=True)
class Grant:
    conversation_id: str
    plugin_id: str
    ref: FileRef
    path: Path
    root: Path  # the allowed root it lies under, the deepest one
    parts: tuple[str, ...]  # path relative to root, component by component

    @property
    def kind(self) -> FileKind:
        return self.ref["kind"]

    @property
    def writable(self) -> bool:
        return self.ref["access"].writes

    @property
    def stages(self) -> bool:
        """A writable folder, which a write parameter gets as a staging folder: it takes no
        read-copy slot when attached (every other grant does)."""
        return self.writable and self.kind == "directory"

    def fits(self, file_class: FileClass) -> bool:
        return self.kind == file_class.kind and (self.writable or not file_class.writes)


class GrantStore:
    """Attach, list, hand over and revoke FileRefs per conversation and plugin.

    folder is where the copies and staging folders workers get are made (the host's
    <data>/grants, never a plugin's data folder, which its worker may write); without it they
    go to a private temporary folder removed by close(). limits bound the read copies.
    """

    def __init__(
        self,
        allowed_roots: list[Path],
        folder: Path | None = None,
        limits: CopyLimits | None = None,
    ) -> None:
        self.allowed_roots = [root.resolve() for root in allowed_roots]
        self._grants: dict[str, Grant] = {}
        self._revoked: OrderedDict[str, str] = OrderedDict()  # ref id -> its conversation
        self._lock = threading.Lock()
        self._root_fds: dict[Path, int] = {}
        # a store dropped without close() (tests make many) still closes its descriptors
        self._close_fds = weakref.finalize(self, _close_all, self._root_fds)
        if beneath.supported():
            for root in self.allowed_roots:
                self._root_fd(root)
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        if folder is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="grant-copies-")
            folder = Path(self._scratch.name)
        self.limits = limits or CopyLimits()
        self.quota = CopyQuota(self.limits)
        self.copies = GrantCopies(folder, self.quota, self.limits.copy_bytes)

    def close(self) -> None:
        """Delete the copies made for workers and close the allowed roots' descriptors."""
        self.copies.close()
        with self._lock:
            self._close_fds()
        if self._scratch is not None:
            self._scratch.cleanup()

    def attach(
        self, conversation_id: str, plugin_id: str, path: Path | str, access: Access | str
    ) -> FileRef:
        """Grant path to plugin for one conversation; returns the FileRef object."""
        try:
            access = Access(access)
        except ValueError:
            raise FileRefError(
                f"access must be one of {', '.join(Access)}, not {access!r}"
            ) from None
        try:
            # ValueError: a path the OS cannot take (a NUL byte) is a bad request too
            real = Path(path).resolve(strict=True)
            status = real.stat()
        except (OSError, RuntimeError, ValueError):
            raise FileRefError(f"{str(path)!r} does not exist") from None
        roots = [r for r in self.allowed_roots if real == r or r in real.parents]
        if not roots:
            raise FileRefError(f"{path} is outside the folders this host may share")
        root = max(roots, key=lambda r: len(r.parts))
        if not beneath.supported():
            raise FileRefError("this platform cannot open files without following links")
        if self._root_fd(root) is None:
            raise FileRefError(f"{path}: the allowed folder {root} cannot be opened")
        kind: FileKind = "directory" if stat.S_ISDIR(status.st_mode) else "file"
        if kind == "file" and status.st_nlink > 1:
            raise FileRefError(
                f"{path} has other hard links, which may lie outside the folders this host "
                "may share; only a file with one name can be granted"
            )
        ref_id = f"ref_{uuid.uuid4()}"
        size = status.st_size if kind == "file" else 0
        ref = FileRef(id=ref_id, name=real.name, kind=kind, access=access, size=size)
        grant = Grant(conversation_id, plugin_id, ref, real, root, real.relative_to(root).parts)
        if not grant.stages:  # it will be copied: its slot and size are taken now (QuotaError)
            self.quota.reserve(ref_id, size, f"granting {path}")
        with self._lock:
            self._grants[ref_id] = grant
        return ref.copy()

    def revoke(self, conversation_id: str, ref_id: str) -> bool:
        """Withdraw a grant of this conversation: its copy and staging are deleted (their
        quota returns) and a call naming it is refused. False when there is no such grant."""
        with self._lock:
            grant = self._grants.get(ref_id)
            if grant is None or grant.conversation_id != conversation_id:
                return False
            del self._grants[ref_id]
            self._revoked[ref_id] = conversation_id
            while len(self._revoked) > REVOKED_KEPT:
                self._revoked.popitem(last=False)
        self.copies.remove(conversation_id, grant.plugin_id, ref_id)
        return True

    def roots(
        self, conversation_id: str, plugin_id: str
    ) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
        """(writable, readable): the grant folders the worker serving a call of this
        conversation must reach, and the only ones it should (the sandbox binds these,
        process/). Writable holds the staging of the conversation's writable folder grants
        to plugin, readable the read copies of its grants; another conversation's folders
        are never among them. Both are made if missing, also before the conversation grants
        anything, so they can be bound before the call and stay the same as grants are added:
        the worker restarts when the conversation changes, not with each new grant (a
        worker's state lives as long as its conversation's).
        """
        writable = self.copies.make_root(conversation_id, plugin_id, write=True)
        readable = self.copies.make_root(conversation_id, plugin_id, write=False)
        return (writable,), (readable,)

    def grants(self, conversation_id: str, plugin_id: str | None = None) -> list[Grant]:
        with self._lock:
            return [
                g
                for g in self._grants.values()
                if g.conversation_id == conversation_id
                and (plugin_id is None or g.plugin_id == plugin_id)
            ]

    def forget(self, conversation_id: str) -> None:
        """Drop every grant of a conversation, with its copies and staging."""
        with self._lock:
            gone = [g for g in self._grants.values() if g.conversation_id == conversation_id]
            self._grants = {
                k: g for k, g in self._grants.items() if g.conversation_id != conversation_id
            }
            self._revoked = OrderedDict(
                (k, c) for k, c in self._revoked.items() if c != conversation_id
            )
        self.copies.forget(conversation_id, [g.ref["id"] for g in gone])

    def granted(
        self, conversation_id: str, plugin_id: str, ref: object, write: bool = False
    ) -> Grant:
        """The grant of a FileRef to plugin in this conversation, or FileRefError."""
        ref_id = ref.get("id") if isinstance(ref, Mapping) else None
        with self._lock:
            grant = self._grants.get(ref_id) if isinstance(ref_id, str) else None
            revoked = isinstance(ref_id, str) and self._revoked.get(ref_id) == conversation_id
        if revoked:
            raise FileRefError(f"{UNKNOWN}: FileRef {ref_id} was revoked in this conversation")
        if grant is None or grant.conversation_id != conversation_id:
            raise FileRefError(f"FileRef {ref_id} is not granted in this conversation")
        if grant.plugin_id != plugin_id:
            raise FileRefError(f"FileRef {ref_id} is not granted to plugin {plugin_id}")
        if write and not grant.writable:
            raise FileRefError(f"FileRef {ref_id} is read-only; this parameter writes")
        return grant

    def hand_over(
        self,
        conversation_id: str,
        plugin_id: str,
        ref: object,
        write: bool = False,
        handed: list[Staging] | None = None,
    ) -> str:
        """The path the worker gets for a granted FileRef: a fresh copy of a read grant, or
        the staging folder of a writable folder (see copies), now held by this call
        (added to handed when this hand-over is the one that took it)."""
        grant = self.granted(conversation_id, plugin_id, ref, write)
        if write and grant.kind != "directory":
            raise FileRefError(
                f"FileRef {grant.ref['id']} is a file; this parameter takes a folder"
            )
        ref_id, name = grant.ref["id"], _name(grant.ref)
        fd = self._open(grant, directory=grant.kind == "directory")
        try:
            if write:
                staging = self.copies.staging(conversation_id, plugin_id, ref_id, name)
                if staging.hand_out() and handed is not None:
                    handed.append(staging)
                path = str(staging.path)
            else:
                path = self.copies.read_copy(conversation_id, plugin_id, ref_id, name, fd)
        except OSError as exc:
            raise FileRefError(f"FileRef {grant.ref['id']}: cannot copy it: {exc}") from None
        finally:
            os.close(fd)
        with self._lock:
            still = self._grants.get(ref_id) is grant
        if not still:  # revoked while it was copied: nothing of it may stay
            self.copies.remove(conversation_id, plugin_id, ref_id)
            raise FileRefError(f"{UNKNOWN}: FileRef {ref_id} was revoked in this conversation")
        return path

    def copy_path(self, plugin_id: str, ref: Mapping[str, object], write: bool = False) -> str:
        """Where hand_over puts a granted ref's copy (write: its staging folder) for the
        worker; FileRefError for a ref not granted to plugin."""
        with self._lock:
            grant = self._grants.get(str(ref.get("id")))
        if grant is None or grant.plugin_id != plugin_id:
            raise FileRefError(f"FileRef {ref.get('id')} is not granted to plugin {plugin_id}")
        folder = self.copies.folder(grant.conversation_id, plugin_id, grant.ref["id"], write)
        return str(folder / _name(grant.ref))

    def commit(self, conversation_id: str, plugin_id: str) -> None:
        """After a call: what changed in the staging folders the call was handed, while it
        held them, goes into the granted folders, reached without following links
        (spec: host.md#fileref-grants). What appeared there between calls (a worker serving
        another conversation could write it) is never copied."""
        writable = {g.ref["id"]: g for g in self.grants(conversation_id, plugin_id) if g.writable}
        problems = []
        for ref_id, staging in self.copies.pending(conversation_id, set(writable)):
            grant = writable[ref_id]
            try:
                target = self._open(grant, directory=True)
            except FileRefError as exc:
                problems.append(f"{exc}; its output was not written")
                continue
            try:
                commit(staging, target, f"FileRef {ref_id}", self.limits.copy_bytes)
            except FileRefError as exc:
                problems.append(str(exc))
            except OSError as exc:
                problems.append(f"FileRef {ref_id}: its output cannot be written: {exc}")
            finally:
                os.close(target)
        if problems:
            raise FileRefError("; ".join(problems))

    def _open(self, grant: Grant, directory: bool) -> int:
        ref_id = grant.ref["id"]
        root_fd = self._root_fd(grant.root)
        if root_fd is None:
            raise FileRefError(f"FileRef {ref_id}: {grant.path} is gone")
        try:
            return beneath.open_beneath(root_fd, grant.parts, directory=directory)
        except beneath.NotPlain:
            raise FileRefError(f"FileRef {ref_id}: {grant.path} now points elsewhere") from None
        except OSError:
            raise FileRefError(f"FileRef {ref_id}: {grant.path} is gone") from None

    def _root_fd(self, root: Path) -> int | None:
        """The root's descriptor, opened once (a root missing at start is opened when a
        grant under it is first attached)."""
        with self._lock:
            if root not in self._root_fds:
                try:
                    self._root_fds[root] = beneath.open_dir(str(root))
                except OSError:
                    return None
            return self._root_fds[root]

    def prepare(
        self,
        conversation_id: str,
        plugin_id: str,
        args: dict[str, Any],
        file_classes: Mapping[str, FileClass],
        *,
        inject: bool = True,
    ) -> dict[str, Any]:
        """Route B injection (unless the arguments come from a plan that did it), then every
        FileRef handed over as a path (spec: host.md).

        A file-class parameter accepts only granted FileRefs: a path the model wrote itself
        would let it reach any file the worker can read, so it is refused. When the call is
        refused here, the staging folders it took are not held for it any more.
        """
        if inject:
            args = self.inject(conversation_id, plugin_id, args, file_classes)
        for name, file_class in file_classes.items():
            if name in args and not _only_refs(args[name], file_class):
                raise FileRefError(
                    f"parameter {name!r} takes a FileRef granted in this conversation, not a path"
                )
        handed: list[Staging] = []
        try:
            return {
                name: resolve_refs(
                    value,
                    partial(
                        self.hand_over,
                        conversation_id,
                        plugin_id,
                        write=file_classes.get(name) is FileClass.WRITE_DIRECTORY,
                        handed=handed,
                    ),
                )
                for name, value in args.items()
            }
        except BaseException:
            for staging in handed:
                staging.withdraw()
            raise

    def plan(
        self,
        conversation_id: str,
        plugin_id: str,
        arguments: Arguments,
        file_classes: Mapping[str, FileClass],
    ) -> CallPlan:
        """A call's plan: its arguments with route B filled in, and the granted FileRefs they
        hold with their paths (what an approval shows)."""
        filled = self.injection(conversation_id, plugin_id, file_classes)
        args: dict[str, Any] = {**arguments.values, **filled}
        shown = self.shown(conversation_id, plugin_id, args, filled)
        return CallPlan(Arguments.of(args) if filled else arguments, tuple(filled), tuple(shown))

    def open_call(
        self,
        conversation_id: str,
        plugin_id: str,
        args: dict[str, Any],
        file_classes: Mapping[str, FileClass],
    ) -> tuple[dict[str, Any], tuple[tuple[Path, ...], tuple[Path, ...]]]:
        """A planned call's params with every FileRef handed over (prepare, route B done in
        the plan), and the grant folders its worker must reach (roots): all the store does
        before the worker is called, in one step."""
        params = self.prepare(conversation_id, plugin_id, args, file_classes, inject=False)
        return params, self.roots(conversation_id, plugin_id)

    def inject(
        self,
        conversation_id: str,
        plugin_id: str,
        args: dict[str, Any],
        file_classes: Mapping[str, FileClass],
    ) -> dict[str, Any]:
        """args with route B's parameter filled in, replacing what the model sent."""
        return {**args, **self.injection(conversation_id, plugin_id, file_classes)}

    def injection(
        self, conversation_id: str, plugin_id: str, file_classes: Mapping[str, FileClass]
    ) -> dict[str, FileRef | list[FileRef]]:
        """Route B: with exactly one file-class parameter and matching grants, that parameter
        and the FileRef (or list) the host puts there; otherwise nothing.

        A single-file parameter needs exactly one matching grant (several would be a guess,
        so the model chooses: route A); a file list gets every matching grant.
        """
        if len(file_classes) != 1:
            return {}
        ((name, file_class),) = file_classes.items()
        matching = [g.ref for g in self.grants(conversation_id, plugin_id) if g.fits(file_class)]
        if file_class is FileClass.FILE_LIST and matching:
            return {name: [ref.copy() for ref in matching]}
        if len(matching) == 1:
            return {name: matching[0].copy()}
        return {}

    def shown(
        self,
        conversation_id: str,
        plugin_id: str,
        args: JsonMapping,
        injected: Iterable[str] = (),
    ) -> list[FileShown]:
        """The FileRefs in args granted to plugin in this conversation, by parameter, with the
        paths they stand for; what an approval shows. A ref that is not granted is left out:
        the call itself refuses it."""
        filled = set(injected)
        shown = []
        for parameter, value in args.items():
            for ref in _refs_in(value):
                try:
                    grant = self.granted(conversation_id, plugin_id, ref)
                except FileRefError:
                    continue
                shown.append(
                    FileShown(
                        parameter=parameter,
                        id=grant.ref["id"],
                        name=grant.ref["name"],
                        kind=grant.kind,
                        access=grant.ref["access"],
                        path=str(grant.path),
                        injected=parameter in filled,
                    )
                )
        return shown

    def system_prompt(self, conversation_id: str) -> str:
        """Route A: the refs the model may pass, per plugin (empty when there are none)."""
        grants = self.grants(conversation_id)
        if not grants:
            return ""
        listed = [{"plugin": g.plugin_id, **g.ref} for g in grants]
        return (
            "Files the user attached; pass one as the whole FileRef object where a tool "
            "parameter takes a file or folder (format fengyu-file or fengyu-directory, or a "
            "description asking for a FileRef or DirectoryRef):\n"
            + json.dumps(listed, ensure_ascii=False, indent=1)
        )


def _name(ref: FileRef) -> str:
    """The name a grant's copy has for the worker: the granted file's or folder's own."""
    return ref["name"] or "root"


def _close_all(fds: dict[Path, int]) -> None:
    for fd in fds.values():
        os.close(fd)
    fds.clear()


def _only_refs(value: object, file_class: FileClass) -> bool:
    if file_class is FileClass.FILE_LIST:
        return isinstance(value, list) and all(is_file_ref(v) for v in value)
    return is_file_ref(value)


def _refs_in(value: ReadOnlyJson) -> list[JsonMapping]:
    """Every FileRef object in value, found by the walk that hands them over (resolve_refs),
    so an approval lists exactly the refs a call would hand over."""
    found: list[JsonMapping] = []

    def note(ref: JsonMapping) -> str:
        found.append(ref)
        return ""

    resolve_refs(value, note)
    return found
