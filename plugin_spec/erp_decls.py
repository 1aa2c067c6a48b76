"""An ERP plugin's tool files as declarations (spec: erp.md): what each tool is and where it goes.

The model sees each tool under its toolCode with dots turned into underscores; HIGH risk counts
as a write.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from plugin_spec.json_files import read_json_object
from plugin_spec.json_types import JsonObject, JsonValue
from plugin_spec.rest_handler import RestHandler
from plugin_spec.tool_definition import Effect, ToolDefinition

TOOLS_DIR = Path("metadata") / "tool"


def is_erp_folder(root: Path) -> bool:
    return (root / TOOLS_DIR).is_dir() and not (root / "manifest.json").exists()


def read_erp_manifest(root: Path) -> JsonObject:
    """An ERP plugin as the host stores it: its id and every tool file's content."""
    tools = [read_json_object(path) for path in sorted((root / TOOLS_DIR).glob("*.json"))]
    codes = {t.get("applicationCode") for t in tools}
    (app,) = codes if len(codes) == 1 else (None,)
    plugin_id = app if isinstance(app, str) and app else root.name
    return {"id": plugin_id, "name": plugin_id, "version": "", "erpTools": [*tools]}


@dataclass(frozen=True)
class ErpToolDecl:
    code: str
    definition: ToolDefinition
    handler: RestHandler
    permission: str
    risk: str
    strict: bool
    application: str

    @property
    def effect(self) -> Effect:
        return Effect.WRITE if self.risk == "HIGH" else Effect.READ


def erp_decls(manifest: JsonObject) -> list[ErpToolDecl]:
    """Every tool file of a stored ERP plugin; a ValueError names a tool the host cannot use
    (install refuses such a plugin, so a stored one always loads)."""
    tools = manifest.get("erpTools") or []
    if not isinstance(tools, list):
        raise ValueError("erpTools is not a list of tool files")
    return [_decl(tool) for tool in tools]


def _decl(tool: JsonValue) -> ErpToolDecl:
    code = tool.get("toolCode") if isinstance(tool, dict) else None
    if not isinstance(tool, dict) or not isinstance(code, str) or not code:
        raise ValueError(f"a tool file has no toolCode string: {str(tool)[:80]}")
    try:
        handler = RestHandler.from_config(tool.get("handlerConfig"))
    except ValueError as exc:
        raise ValueError(f"{code}: unusable handlerConfig: {exc}") from None
    schema = tool.get("inputSchema")
    return ErpToolDecl(
        code=code,
        definition=ToolDefinition(
            code.replace(".", "_"),
            str(tool.get("description", "")),
            schema if isinstance(schema, dict) else {},
        ),
        handler=handler,
        permission=str(tool.get("requiredPermission", "")),
        risk=str(tool.get("riskLevel", "LOW")),
        strict=tool.get("strictPermissionCheck") is True,
        application=str(tool.get("applicationCode", "")),
    )
