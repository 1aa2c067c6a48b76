"""The host's state in SQLite: installed plugins, their enabled flag and revision.

Every change is one transaction, so a crash leaves the old state or the new one, never half.
`revision` grows with every change of a plugin, which lets the registry rebuild only what
changed; `generation` grows with every change at all.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from plugin_spec.json_types import JsonObject

SCHEMA = """
CREATE TABLE IF NOT EXISTS plugins (
    id TEXT PRIMARY KEY,
    profile TEXT NOT NULL,
    version TEXT NOT NULL,
    root TEXT NOT NULL,
    manifest TEXT NOT NULL,
    enabled INTEGER NOT NULL DEFAULT 1,
    revision INTEGER NOT NULL,
    installed_at TEXT NOT NULL
);
-- Covers revisions(): a snapshot after a change lists (id, revision) of the enabled plugins
-- without touching the rows, whose manifest text sits before those columns.
CREATE INDEX IF NOT EXISTS plugins_by_revision ON plugins (enabled, id, revision);
CREATE TABLE IF NOT EXISTS tool_codes (
    code TEXT PRIMARY KEY,
    owner TEXT,
    active INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO counters VALUES ('generation', 0);
"""


@dataclass(frozen=True)
class PluginRow:
    id: str
    profile: str
    version: str
    root: Path
    manifest: JsonObject
    enabled: bool
    revision: int
    installed_at: str


class Store:
    """A thread-safe handle on the host's SQLite database (a file, or ':memory:')."""

    def __init__(self, path: Path | str) -> None:
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._lock = threading.RLock()
        with self._lock:
            self._db.executescript(f"BEGIN IMMEDIATE;{SCHEMA}COMMIT;")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def generation(self) -> int:
        with self._lock:
            return _generation(self._db)

    def plugins(self, *, enabled_only: bool = False) -> list[PluginRow]:
        query = "SELECT * FROM plugins" + (" WHERE enabled = 1" if enabled_only else "")
        with self._lock:
            rows = self._db.execute(query + " ORDER BY id").fetchall()
        return [_row(r) for r in rows]

    def revisions(self, *, enabled_only: bool = False) -> list[tuple[str, int]]:
        """(id, revision) of each plugin, without reading manifests: what changed is cheap."""
        query = "SELECT id, revision FROM plugins" + (" WHERE enabled = 1" if enabled_only else "")
        with self._lock:
            return self._db.execute(query + " ORDER BY id").fetchall()

    def plugin(self, plugin_id: str) -> PluginRow | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM plugins WHERE id = ?", (plugin_id,)).fetchone()
        return _row(row) if row else None

    def put_plugin(
        self,
        db: sqlite3.Connection,
        *,
        plugin_id: str,
        profile: str,
        version: str,
        root: Path,
        manifest: JsonObject,
        enabled: bool,
    ) -> None:
        """Insert or replace a plugin inside an open transaction, bumping its revision."""
        revision = _bump(db)
        db.execute(
            "INSERT INTO plugins VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            "profile=excluded.profile, version=excluded.version, root=excluded.root, "
            "manifest=excluded.manifest, enabled=excluded.enabled, revision=excluded.revision",
            (
                plugin_id,
                profile,
                version,
                str(root),
                json.dumps(manifest),
                int(enabled),
                revision,
                datetime.now(UTC).isoformat(),
            ),
        )

    def set_enabled(self, db: sqlite3.Connection, plugin_id: str, enabled: bool) -> None:
        db.execute(
            "UPDATE plugins SET enabled = ?, revision = ? WHERE id = ?",
            (int(enabled), _bump(db), plugin_id),
        )

    def delete_plugin(self, db: sqlite3.Connection, plugin_id: str) -> None:
        _bump(db)
        db.execute("DELETE FROM plugins WHERE id = ?", (plugin_id,))

    def tool_owner(self, code: str) -> tuple[str | None, bool] | None:
        """(owning plugin or None for a manual tool, active) of an ERP toolCode, if known."""
        with self._lock:
            row = self._db.execute(
                "SELECT owner, active FROM tool_codes WHERE code = ?", (code,)
            ).fetchone()
        return (row[0], bool(row[1])) if row else None

    def tool_codes(self) -> dict[str, tuple[str | None, bool]]:
        with self._lock:
            rows = self._db.execute("SELECT code, owner, active FROM tool_codes").fetchall()
        return {code: (owner, bool(active)) for code, owner, active in rows}

    def own_tools(self, db: sqlite3.Connection, owner: str | None, codes: list[str]) -> None:
        """Register codes for owner (None: created manually), active, inside a transaction."""
        db.executemany(
            "INSERT INTO tool_codes VALUES (?, ?, 1) ON CONFLICT(code) DO UPDATE SET active = 1",
            [(code, owner) for code in codes],
        )

    def set_tools_active(self, db: sqlite3.Connection, owner: str, active: bool) -> None:
        db.execute("UPDATE tool_codes SET active = ? WHERE owner = ?", (int(active), owner))
        _bump(db)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _bump(db: sqlite3.Connection) -> int:
    db.execute("UPDATE counters SET value = value + 1 WHERE name = 'generation'")
    return _generation(db)


def _generation(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT value FROM counters WHERE name = 'generation'").fetchone()[0])


def _row(row: tuple[Any, ...]) -> PluginRow:
    return PluginRow(
        row[0], row[1], row[2], Path(row[3]), json.loads(row[4]), bool(row[5]), row[6], row[7]
    )
