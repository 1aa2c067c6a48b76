"""What the host reads from an installed FengYu manifest: its tools and how to call them.

Manifests are validated by the kit before install, so this reader trusts their structure;
it still reads v1 (escaped-string schemas) and v2 (schemas on rpc.methods) alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from plugin_spec.filerefs import FileClass, classify_parameters
from plugin_spec.json_types import JsonObject, JsonValue, as_array, as_object
from plugin_spec.tool_definition import Effect, ToolDefinition


@dataclass(frozen=True)
class ToolDecl:
    """One aiTool: its definition for the model and what the host needs to run it.

    timeout is the tool's own timeoutSeconds, method_timeout its method's (precedence:
    reference_host/process/timeouts.py). idempotent (FengYu: a write or external tool whose
    repetition duplicates nothing, so workflows may retry it) is recorded; FengYu's retry
    policy is not known, so nothing here retries.
    """

    definition: ToolDefinition
    method: str
    effect: Effect
    timeout: float | None
    output_schema: JsonObject | None = None
    file_classes: dict[str, FileClass] = field(default_factory=dict)
    method_timeout: float | None = None
    idempotent: bool = False


@dataclass(frozen=True)
class ResourceLimits:
    """backend.resources: what the worker's whole process tree may use (None: not set)."""

    memory_mb: int | None = None
    max_processes: int | None = None

    def __bool__(self) -> bool:
        return self.memory_mb is not None or self.max_processes is not None


def call_timeout(manifest: JsonObject) -> float | None:
    backend = manifest.get("backend")
    value = backend.get("callTimeoutSeconds") if isinstance(backend, dict) else None
    return _seconds(value)


def resource_limits(manifest: JsonObject) -> ResourceLimits:
    """The declared backend.resources; a missing, zero or non-integer value is not set
    (FengYu reads 0 as "no limit")."""
    backend = manifest.get("backend")
    resources = backend.get("resources") if isinstance(backend, dict) else None
    if not isinstance(resources, dict):
        return ResourceLimits()
    return ResourceLimits(
        _positive(resources.get("memoryMb")), _positive(resources.get("maxProcesses"))
    )


def _positive(value: JsonValue) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _seconds(value: JsonValue) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return None


def tool_decls(manifest: JsonObject) -> list[ToolDecl]:
    """Every aiTool of a manifest, in declaration order; a ValueError names a part the tools
    cannot be built from (a missing name is a KeyError)."""
    v1 = manifest.get("schemaVersion") == 1
    methods = _object(_object(manifest.get("rpc") or {}, "rpc").get("methods") or {}, "methods")
    tools = manifest.get("aiTools") or []
    if not isinstance(tools, list):
        raise ValueError("aiTools is not a list")
    decls = []
    for tool in tools:
        tool = _object(tool, "an aiTools entry")
        name, method = tool["name"], tool.get("method") or tool.get("name")
        if not isinstance(name, str) or not isinstance(method, str):
            raise ValueError(f"tool {str(name)[:80]}: its name and method must be strings")
        source = tool if v1 else _object(methods.get(method, {}), f"rpc.methods.{method}")
        input_schema = _schema(source.get("inputSchema")) or {"type": "object"}
        method_timeout = None if v1 else _seconds(source.get("timeoutSeconds"))
        description = tool.get("description", "")
        decls.append(
            ToolDecl(
                definition=ToolDefinition(
                    name, description if isinstance(description, str) else "", input_schema
                ),
                method=method,
                effect=Effect.parse(tool.get("effect")),
                timeout=_seconds(tool.get("timeoutSeconds")),
                output_schema=_schema(source.get("outputSchema")),
                file_classes=classify_parameters(input_schema),
                method_timeout=method_timeout,
                idempotent=tool.get("idempotent") is True,
            )
        )
    return decls


def _object(value: JsonValue, what: str) -> JsonObject:
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not an object: {str(value)[:80]}")
    return value


def _schema(value: JsonValue) -> JsonObject | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, dict) else None


def model_tool_names(manifest: JsonObject) -> list[str]:
    """The names a plugin's tools have for the model, whatever its profile."""
    if "erpTools" in manifest:
        erp_tools = [as_object(t) for t in as_array(manifest["erpTools"])]
        return [str(t.get("toolCode", "")).replace(".", "_") for t in erp_tools]
    return [str(as_object(t).get("name")) for t in as_array(manifest.get("aiTools"))]
