"""FileRef grants (SPEC F8, F9): what a conversation may hand to which plugin, and injection.

Grants live in memory, as in FengYu. A grant's path is resolved (symlinks included) when it
is attached and must lie under one of the host's allowed roots; at dispatch the path is
resolved again and must be unchanged, so a symlink swapped in later cannot escape.
"""

from __future__ import annotations

import json
import stat
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reference_host.filerefs import FileClass, FileRefError, is_file_ref

ACCESS = ("read", "write", "read-write")


@dataclass(frozen=True)
class Grant:
    conversation_id: str
    plugin_id: str
    ref: dict[str, Any]
    path: Path

    @property
    def kind(self) -> str:
        return self.ref["kind"]

    @property
    def writable(self) -> bool:
        return self.ref["access"] in ("write", "read-write")

    def fits(self, file_class: FileClass) -> bool:
        return self.kind == file_class.kind and (self.writable or not file_class.writes)


class GrantStore:
    """Attach, list and resolve FileRefs per conversation and plugin."""

    def __init__(self, allowed_roots: list[Path]) -> None:
        self.allowed_roots = [root.resolve() for root in allowed_roots]
        self._grants: dict[str, Grant] = {}
        self._lock = threading.Lock()

    def attach(
        self, conversation_id: str, plugin_id: str, path: Path | str, access: str
    ) -> dict[str, Any]:
        """Grant path to plugin for one conversation; returns the FileRef object."""
        if access not in ACCESS:
            raise FileRefError(f"access must be one of {', '.join(ACCESS)}, not {access!r}")
        try:
            # ValueError: a path the OS cannot take (a NUL byte) is a bad request too
            real = Path(path).resolve(strict=True)
            status = real.stat()
        except (OSError, RuntimeError, ValueError):
            raise FileRefError(f"{str(path)!r} does not exist") from None
        if not any(real == root or root in real.parents for root in self.allowed_roots):
            raise FileRefError(f"{path} is outside the folders this host may share")
        kind = "directory" if stat.S_ISDIR(status.st_mode) else "file"
        ref = {
            "id": f"ref_{uuid.uuid4()}",
            "name": real.name,
            "kind": kind,
            "access": access,
            "size": status.st_size if kind == "file" else 0,
        }
        with self._lock:
            self._grants[ref["id"]] = Grant(conversation_id, plugin_id, ref, real)
        return dict(ref)

    def grants(self, conversation_id: str, plugin_id: str | None = None) -> list[Grant]:
        with self._lock:
            return [
                g
                for g in self._grants.values()
                if g.conversation_id == conversation_id
                and (plugin_id is None or g.plugin_id == plugin_id)
            ]

    def forget(self, conversation_id: str) -> None:
        with self._lock:
            self._grants = {
                k: g for k, g in self._grants.items() if g.conversation_id != conversation_id
            }

    def resolve(self, conversation_id: str, plugin_id: str, ref: Any, write: bool = False) -> str:
        """The absolute path of a FileRef granted to plugin in this conversation."""
        ref_id = ref.get("id") if isinstance(ref, Mapping) else None
        with self._lock:
            grant = self._grants.get(ref_id) if isinstance(ref_id, str) else None
        if grant is None or grant.conversation_id != conversation_id:
            raise FileRefError(f"FileRef {ref_id} is not granted in this conversation")
        if grant.plugin_id != plugin_id:
            raise FileRefError(f"FileRef {ref_id} is not granted to plugin {plugin_id}")
        if write and not grant.writable:
            raise FileRefError(f"FileRef {ref_id} is read-only; this parameter writes")
        try:
            now = grant.path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise FileRefError(f"FileRef {ref_id}: {grant.path} is gone") from None
        if now != grant.path:
            raise FileRefError(f"FileRef {ref_id}: {grant.path} now points elsewhere")
        return str(now)

    def prepare(
        self,
        conversation_id: str,
        plugin_id: str,
        args: dict[str, Any],
        file_classes: Mapping[str, FileClass],
    ) -> dict[str, Any]:
        """Route B injection, then resolution of every FileRef to its path (F8, F9).

        A file-class parameter accepts only granted FileRefs: a path the model wrote itself
        would let it reach any file the worker can read, so it is refused.
        """
        args = self.inject(conversation_id, plugin_id, args, file_classes)
        for name, file_class in file_classes.items():
            if name in args and not _only_refs(args[name], file_class):
                raise FileRefError(
                    f"parameter {name!r} takes a FileRef granted in this conversation, not a path"
                )
        return {
            name: self._resolve_tree(
                conversation_id,
                plugin_id,
                value,
                file_classes.get(name) is FileClass.WRITE_DIRECTORY,
            )
            for name, value in args.items()
        }

    def inject(
        self,
        conversation_id: str,
        plugin_id: str,
        args: dict[str, Any],
        file_classes: Mapping[str, FileClass],
    ) -> dict[str, Any]:
        """With exactly one file-class parameter and matching grants, fill it from them.

        A single-file parameter needs exactly one matching grant (several would be a guess,
        so the model chooses: route A); a file list gets every matching grant.
        """
        if len(file_classes) != 1:
            return args
        ((name, file_class),) = file_classes.items()
        matching = [g.ref for g in self.grants(conversation_id, plugin_id) if g.fits(file_class)]
        if file_class is FileClass.FILE_LIST and matching:
            return {**args, name: [dict(r) for r in matching]}
        if len(matching) == 1:
            return {**args, name: dict(matching[0])}
        return args

    def system_prompt(self, conversation_id: str) -> str:
        """Route A: the refs the model may pass, per plugin (empty when there are none)."""
        grants = self.grants(conversation_id)
        if not grants:
            return ""
        listed = [{"plugin": g.plugin_id, **g.ref} for g in grants]
        return (
            "Files the user attached; pass one as the whole FileRef object where a tool "
            "parameter asks for a FileRef or DirectoryRef:\n"
            + json.dumps(listed, ensure_ascii=False, indent=1)
        )

    def _resolve_tree(self, conversation_id: str, plugin_id: str, value: Any, write: bool) -> Any:
        if is_file_ref(value):
            return self.resolve(conversation_id, plugin_id, value, write)
        if isinstance(value, Mapping):
            return {
                k: self._resolve_tree(conversation_id, plugin_id, v, write)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self._resolve_tree(conversation_id, plugin_id, v, write) for v in value]
        return value


def _only_refs(value: Any, file_class: FileClass) -> bool:
    if file_class is FileClass.FILE_LIST:
        return isinstance(value, list) and all(is_file_ref(v) for v in value)
    return is_file_ref(value)
