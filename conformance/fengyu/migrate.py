"""Turn a legacy v1 manifest into its v2 equivalent, as a migration aid
(spec: fengyu-manifest.md#legacy-version-1-manifests).

v1 tools carry their schemas as escaped strings; v2 declares each method once under
rpc.methods and lets aiTools point at it. backend.command/protocol are gone in v2 (the host
fixes the launch), and a tool without effect becomes "external", which is how hosts treat it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.sources import JsonLoadError, parse_json
from plugin_spec.json_types import JsonObject, JsonValue

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
    manifest: JsonObject
    notes: list[str] = field(default_factory=list)


def migrate_v1(v1: JsonObject) -> Migration:
    if v1.get("schemaVersion") != 1:
        raise MigrationError("not a v1 manifest (schemaVersion is not 1)")
    notes: list[str] = []
    v2: JsonObject = {"schemaVersion": 2}
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
    methods, tools = _migrate_tools(v1, notes)
    if methods:
        v2["rpc"] = {"methods": methods}
    if "aiTools" in v1:
        v2["aiTools"] = list(tools)
    if "i18n" in v1:
        v2["i18n"] = v1["i18n"]
    ordered = {key: v2[key] for key in V2_TOP_LEVEL if key in v2}
    return Migration(ordered, notes)


def _migrate_tools(v1: JsonObject, notes: list[str]) -> tuple[JsonObject, list[JsonObject]]:
    """The v2 rpc.methods and aiTools of a v1 manifest's aiTools entries.

    The kit's reports migrate any v1 manifest, also one that fails its checks, so an entry
    of the wrong shape is a MigrationError naming it, never a TypeError.
    """
    entries = v1.get("aiTools") or []
    if not isinstance(entries, list):
        raise MigrationError("/aiTools is not an array")
    methods: JsonObject = {}
    tools: list[JsonObject] = []
    for index, tool in enumerate(entries):
        if not isinstance(tool, dict):
            raise MigrationError(f"/aiTools/{index} is not an object")
        method_name = tool.get("method") or tool.get("name")
        if not isinstance(method_name, str):
            raise MigrationError(f"/aiTools/{index}: neither method nor name is a string")
        method: JsonObject = {"description": tool.get("description", "")}
        for key in ("inputSchema", "outputSchema"):
            if key in tool:
                method[key] = _parse_schema(tool[key], f"/aiTools/{index}/{key}")
        if method_name in methods and methods[method_name] != method:
            raise MigrationError(
                f"/aiTools/{index}: method {method_name!r} is declared twice with different schemas"
            )
        methods[method_name] = method
        entry: JsonObject = {
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
    return methods, tools


def _parse_schema(value: JsonValue, at: str) -> JsonValue:
    """A v1 escaped schema string parsed as the kit reads files (nesting bounded)."""
    if not isinstance(value, str):
        return value
    try:
        return parse_json(value, at).data
    except JsonLoadError as exc:
        raise MigrationError(exc.message) from None
