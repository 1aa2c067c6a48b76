"""What the host reads from an installed FengYu manifest: its tools and how to call them.

Manifests are validated by the kit before install, so this reader trusts their structure;
it still reads v1 (escaped-string schemas) and v2 (schemas on rpc.methods) alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from plugin_spec.filerefs import FileClass, classify_parameters
from plugin_spec.tool_definition import Effect, ToolDefinition


@dataclass(frozen=True)
class ToolDecl:
    """One aiTool: its definition for the model and what the host needs to run it."""

    definition: ToolDefinition
    method: str
    effect: Effect
    timeout: float | None
    output_schema: dict[str, Any] | None = None
    file_classes: dict[str, FileClass] = field(default_factory=dict)


def call_timeout(manifest: dict[str, Any]) -> float | None:
    backend = manifest.get("backend")
    value = backend.get("callTimeoutSeconds") if isinstance(backend, dict) else None
    return value if isinstance(value, int | float) else None


def tool_decls(manifest: dict[str, Any]) -> list[ToolDecl]:
    """Every aiTool of a manifest, in declaration order."""
    v1 = manifest.get("schemaVersion") == 1
    methods = (manifest.get("rpc") or {}).get("methods") or {}
    decls = []
    for tool in manifest.get("aiTools") or []:
        method = tool.get("method") or tool.get("name")
        source = tool if v1 else methods.get(method, {})
        input_schema = _schema(source.get("inputSchema")) or {"type": "object"}
        timeout = tool.get("timeoutSeconds", source.get("timeoutSeconds") if not v1 else None)
        decls.append(
            ToolDecl(
                definition=ToolDefinition(tool["name"], tool.get("description", ""), input_schema),
                method=method,
                effect=Effect.parse(tool.get("effect")),
                timeout=timeout,
                output_schema=_schema(source.get("outputSchema")),
                file_classes=classify_parameters(input_schema),
            )
        )
    return decls


def _schema(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, dict) else None


def model_tool_names(manifest: dict[str, Any]) -> list[str]:
    """The names a plugin's tools have for the model, whatever its profile."""
    if "erpTools" in manifest:
        return [str(t.get("toolCode", "")).replace(".", "_") for t in manifest["erpTools"]]
    return [str(t.get("name")) for t in manifest.get("aiTools") or []]
