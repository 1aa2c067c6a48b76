"""Who may use which ERP tool (spec: erp.md#risk-levels-and-permissions): actors, their
tenants and permissions, from a file.

    {"actors": {"alice": {"tenants": ["acme"], "permissions": ["HELLO_PLUGIN_DEMO"]}}}

The directory re-reads its file when it changes, so a permission revoked on disk is seen by
the next strict call without a restart.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class DirectoryError(Exception):
    """The actor file is unreadable or malformed; the message names the file and pointer."""


@dataclass(frozen=True)
class Actor:
    name: str
    tenants: frozenset[str]
    permissions: frozenset[str]


class ActorDirectory:
    def __init__(self, path: Path | None = None, actors: dict[str, Actor] | None = None) -> None:
        self._path = path
        self._actors = dict(actors or {})
        self._stamp: float | None = None
        self._lock = threading.Lock()

    @classmethod
    def of(cls, entries: dict[str, dict[str, Any]]) -> ActorDirectory:
        return cls(actors=_parse({"actors": entries}, "<memory>"))

    def set(self, actor: Actor) -> None:
        with self._lock:
            self._actors[actor.name] = actor

    def actor(self, tenant: str, name: str) -> Actor | None:
        """The actor, if known and a member of tenant (else None: no access at all)."""
        self._reload()
        with self._lock:
            actor = self._actors.get(name)
        return actor if actor is not None and tenant in actor.tenants else None

    def permits(self, tenant: str, name: str, permission: str) -> bool:
        actor = self.actor(tenant, name)
        return actor is not None and permission in actor.permissions

    def _reload(self) -> None:
        if self._path is None:
            return
        try:
            stamp = self._path.stat().st_mtime
        except OSError as exc:
            raise DirectoryError(f"{self._path}: {exc.strerror}") from None
        if stamp == self._stamp:
            return
        try:
            data = json.loads(self._path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise DirectoryError(f"{self._path}: {exc}") from None
        actors = _parse(data, str(self._path))
        with self._lock:
            self._actors, self._stamp = actors, stamp


def _parse(data: Any, where: str) -> dict[str, Actor]:
    entries = data.get("actors") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise DirectoryError(f"{where} /actors: expected an object of actors")
    actors = {}
    for name, entry in entries.items():
        tenants = entry.get("tenants") if isinstance(entry, dict) else None
        permissions = entry.get("permissions") if isinstance(entry, dict) else None
        if not (isinstance(tenants, list) and isinstance(permissions, list)):
            raise DirectoryError(f"{where} /actors/{name}: expected tenants and permissions lists")
        actors[name] = Actor(name, frozenset(map(str, tenants)), frozenset(map(str, permissions)))
    return actors
