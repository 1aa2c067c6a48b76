"""Saved workflows (spec: host.md#saved-workflows) in the host's own SQLite database.

The table lives next to the plugin tables, in the same file, and every access goes through
the Store's `transaction()` (its lock and its connection), so a workflow is written whole or
not at all, like every other piece of host state. A workflow is kept as its JSON definition;
`name` and `updated_at` are copied out for listing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from reference_host.storage.database import Store

SCHEMA = """
CREATE TABLE IF NOT EXISTS workflows (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    definition TEXT NOT NULL,
    updated_at TEXT NOT NULL
)
"""


class WorkflowStore:
    """Workflows by id: `{"id", "name", "nodes": [...]}` as JSON objects."""

    def __init__(self, store: Store) -> None:
        self._store = store
        with store.transaction() as db:
            db.execute(SCHEMA)

    def put(self, workflow: dict[str, Any]) -> bool:
        """Insert or replace a workflow; True when it is new."""
        definition = json.dumps(workflow, ensure_ascii=False, sort_keys=True)
        with self._store.transaction() as db:
            known = db.execute("SELECT 1 FROM workflows WHERE id = ?", (workflow["id"],)).fetchone()
            db.execute(
                "INSERT INTO workflows VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
                "name=excluded.name, definition=excluded.definition, "
                "updated_at=excluded.updated_at",
                (
                    workflow["id"],
                    str(workflow.get("name", "")),
                    definition,
                    datetime.now(UTC).isoformat(),
                ),
            )
        return known is None

    def get(self, workflow_id: str) -> dict[str, Any] | None:
        with self._store.transaction() as db:
            row = db.execute(
                "SELECT definition FROM workflows WHERE id = ?", (workflow_id,)
            ).fetchone()
        return json.loads(row[0]) if row else None

    def update(
        self,
        workflow_id: str,
        change: Callable[[dict[str, Any]], dict[str, Any] | None],
    ) -> dict[str, Any] | None:
        """Read, change and write one workflow in a single transaction.

        change gets the stored workflow and returns the new one (or None to leave it as it
        is); the result is what is stored afterwards, None when there is no such workflow.
        """
        with self._store.transaction() as db:
            row = db.execute(
                "SELECT definition FROM workflows WHERE id = ?", (workflow_id,)
            ).fetchone()
            if row is None:
                return None
            workflow: dict[str, Any] = json.loads(row[0])
            changed = change(workflow)
            if changed is None:
                return workflow
            db.execute(
                "UPDATE workflows SET name = ?, definition = ?, updated_at = ? WHERE id = ?",
                (
                    str(changed.get("name", "")),
                    json.dumps(changed, ensure_ascii=False, sort_keys=True),
                    datetime.now(UTC).isoformat(),
                    workflow_id,
                ),
            )
        return changed

    def list(self) -> list[dict[str, Any]]:
        """Every workflow's id, name and last change, by id."""
        with self._store.transaction() as db:
            rows = db.execute("SELECT id, name, updated_at FROM workflows ORDER BY id").fetchall()
        return [{"id": i, "name": n, "updatedAt": u} for i, n, u in rows]

    def delete(self, workflow_id: str) -> bool:
        with self._store.transaction() as db:
            cursor = db.execute("DELETE FROM workflows WHERE id = ?", (workflow_id,))
        return cursor.rowcount > 0
