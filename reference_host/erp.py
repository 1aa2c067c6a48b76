"""ERP plugins in the host (SPEC E1-E5): tool files as REST-backed tool callbacks.

The model sees each tool under its toolCode with dots turned into underscores. HIGH risk
counts as a write (approval first); a strict tool re-checks the actor's permission when it is
called, not only when the snapshot was filtered; the namespace rule is checked again before
every dispatch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from reference_host.actors import ActorDirectory
from reference_host.namespace import namespace_problem
from reference_host.rest import RestHandler, dispatch
from reference_host.sources_json import read_json_object
from reference_host.tools import (
    CallContext,
    Effect,
    ToolDefinition,
    failure,
    parse_arguments,
    unavailable,
)

TOOLS_DIR = Path("metadata") / "tool"


def is_erp_folder(root: Path) -> bool:
    return (root / TOOLS_DIR).is_dir() and not (root / "manifest.json").exists()


def read_erp_manifest(root: Path) -> dict[str, Any]:
    """An ERP plugin as the host stores it: its id and every tool file's content."""
    tools = [read_json_object(path) for path in sorted((root / TOOLS_DIR).glob("*.json"))]
    codes = {t.get("applicationCode") for t in tools}
    (app,) = codes if len(codes) == 1 else (None,)
    plugin_id = app if isinstance(app, str) and app else root.name
    return {"id": plugin_id, "name": plugin_id, "version": "", "erpTools": tools}


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


def erp_decls(manifest: dict[str, Any]) -> list[ErpToolDecl]:
    """Every tool file of a stored ERP plugin; a ValueError names a tool the host cannot use
    (install refuses such a plugin, so a stored one always loads)."""
    return [_decl(tool) for tool in manifest.get("erpTools") or []]


def _decl(tool: Any) -> ErpToolDecl:
    code = tool.get("toolCode") if isinstance(tool, dict) else None
    if not isinstance(code, str) or not code:
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


class RestToolCallback:
    """Calls one ERP tool's endpoint on the ERP backend over httpx."""

    def __init__(
        self,
        plugin_id: str,
        decl: ErpToolDecl,
        client: httpx.AsyncClient,
        base_url: str,
        directory: ActorDirectory,
        available: Callable[[str], bool],
    ) -> None:
        self.owner = plugin_id
        self.definition = decl.definition
        self.effect = decl.effect
        self.required_permission = decl.permission
        self.decl = decl
        self._client = client
        self._base_url = base_url
        self._directory = directory
        self._available = available

    async def call(self, input_json: str, context: CallContext) -> str:
        if not self._available(self.owner):
            return unavailable(self.owner)
        permission = self.decl.permission
        if self.decl.strict and not self._directory.permits(
            context.tenant, context.actor, permission
        ):
            return failure(
                f"{context.actor or 'the caller'} lacks permission {permission} "
                f"for {self.decl.code}"
            )
        if problem := namespace_problem(self.decl.handler.path):
            return failure(f"{self.decl.code}: handler path {problem}")
        try:
            arguments = parse_arguments(input_json)
        except ValueError as exc:
            return failure(str(exc))
        return await dispatch(
            self._client,
            self._base_url,
            self.decl.handler,
            arguments,
            tenant=context.tenant,
            actor=context.actor,
        )
