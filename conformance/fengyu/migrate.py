"""Turn a legacy v1 manifest into its v2 equivalent (SPEC F4), as a migration aid.

v1 tools carry their schemas as escaped strings; v2 declares each method once under
rpc.methods and lets aiTools point at it. backend.command/protocol are gone in v2 (the host
fixes the launch), and a tool without effect becomes "external", which is how hosts treat it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

V2_TOP_LEVEL = (
    "schemaVersion",
    "id",
    "name",
    "description",
    "version",
    "author",
    "icon",
    "category",
    "homepage",
    "official",
    "ui",
    "backend",
    "permissions",
    "rpc",
    "aiTools",
    "i18n",
    "flowNodes",
)


class MigrationError(Exception):
    """The v1 manifest cannot be migrated as it is (e.g. a schema string is not JSON)."""


@dataclass
class Migration:
    manifest: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def migrate_v1(v1: dict[str, Any]) -> Migration:
    if v1.get("schemaVersion") != 1:
        raise MigrationError("not a v1 manifest (schemaVersion is not 1)")
    notes: list[str] = []
    v2: dict[str, Any] = {"schemaVersion": 2}
    for key, value in v1.items():
        if key in ("schemaVersion", "aiTools", "backend", "i18n"):
            continue
        if key in V2_TOP_LEVEL:
            v2[key] = value
        else:
            notes.append(f"dropped /{key}: v2 has no such field")
    for key in ("description", "author", "icon", "category"):
        if not v2.get(key):
            v2[key] = v2.get("name", "") if key == "description" else "other"
            notes.append(f"set /{key} to {v2[key]!r}: v2 requires a non-empty value")
    backend = v1.get("backend")
    if isinstance(backend, dict):
        v2["backend"] = {k: v for k, v in backend.items() if k == "callTimeoutSeconds"}
        dropped = sorted(set(backend) - {"callTimeoutSeconds"})
        if dropped:
            notes.append(
                f"dropped backend.{', backend.'.join(dropped)}: v2 hosts launch "
                "backend/worker.jar and speak JSON-RPC 2.0 unconditionally"
            )
    methods: dict[str, Any] = {}
    tools: list[dict[str, Any]] = []
    for index, tool in enumerate(v1.get("aiTools") or []):
        method_name = tool.get("method") or tool.get("name")
        method = {"description": tool.get("description", "")}
        for key in ("inputSchema", "outputSchema"):
            if key in tool:
                method[key] = _parse_schema(tool[key], f"/aiTools/{index}/{key}")
        if method_name in methods and methods[method_name] != method:
            raise MigrationError(
                f"/aiTools/{index}: method {method_name!r} is declared twice with different schemas"
            )
        methods[method_name] = method
        entry = {
            "name": tool.get("name"),
            "description": tool.get("description", ""),
            "method": method_name,
            "effect": tool.get("effect", "external"),
        }
        if "effect" not in tool:
            notes.append(f"set /aiTools/{index}/effect to 'external': v1 left it out")
        if "timeoutSeconds" in tool:
            entry["timeoutSeconds"] = tool["timeoutSeconds"]
        tools.append(entry)
    if methods:
        v2["rpc"] = {"methods": methods}
    if "aiTools" in v1:
        v2["aiTools"] = tools
    if "i18n" in v1:
        v2["i18n"] = v1["i18n"]
    ordered = {key: v2[key] for key in V2_TOP_LEVEL if key in v2}
    return Migration(ordered, notes)


def _parse_schema(value: Any, at: str) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise MigrationError(f"{at} is not valid JSON: {exc.msg}") from None
