"""The JSON answers of the routes, declared once as pydantic models: the routes name them as
their response_model, so /openapi.json shows each answer's fields (and schemathesis checks
the answers against them). Keys are the camelCase ones the API has always sent; a
`dict[str, Any]` field is a JSON Schema or a value the plugin chose, passed on as it is."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from plugin_spec.filerefs import Access, FileKind
from plugin_spec.tool_definition import Effect


class Answer(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class PluginAnswer(Answer):
    """An installed plugin (spec: host.md#installing-a-plugin)."""

    id: str
    name: str
    version: str
    profile: Literal["fengyu-v1", "fengyu-v2", "erp"]
    enabled: bool
    supports_ai: bool = Field(alias="supportsAi")
    tools: list[str]


class ListedPlugin(PluginAnswer):
    """An entry of the plugin list: an installed plugin, or a mounted MCP server
    (--mcp-config) with id `mcp:<server>` (the owner of its tools in /api/tools), name
    the server's, profile "mcp", its era ("modern": it adopted server/discover;
    "legacy": the initialize handshake) and the protocolVersion it speaks; the two fields
    are left out of installed plugins' entries."""

    profile: Literal["fengyu-v1", "fengyu-v2", "erp", "mcp"]  # type: ignore[assignment]
    era: Literal["modern", "legacy"] | None = None
    protocol_version: str | None = Field(default=None, alias="protocolVersion")


class ToolAnswer(Answer):
    """A tool of the current snapshot, as the model sees it."""

    name: str
    description: str
    input_schema: dict[str, Any] = Field(alias="inputSchema")
    effect: Effect
    owner: str


class ProviderVerdict(Answer):
    """Whether one model provider takes the snapshot in one request, and what stands in the
    way: lines about the request as a whole (set) and, per tool, its own (rejected)."""

    fits: bool
    mode: str
    set: list[str]
    rejected: dict[str, list[str]]


class ProviderFit(Answer):
    tools: int
    providers: dict[str, ProviderVerdict]


class FileRefAnswer(Answer):
    """A granted file or folder as the model sees it (plugin_spec.filerefs.FileRef)."""

    id: str
    name: str
    kind: FileKind
    access: Access
    size: int


class GrantAnswer(Answer):
    plugin_id: str = Field(alias="pluginId")
    ref: FileRefAnswer
    path: str


class ApprovalAnswer(Answer):
    id: str
    approved: bool


class DiscoveredTool(Answer):
    """An ERP tool the actor may use (spec: erp.md#ownership-and-discovery)."""

    tool_code: str = Field(alias="toolCode")
    name: str
    description: str
    plugin: str
    application_code: str = Field(alias="applicationCode")
    risk_level: str = Field(alias="riskLevel")
    required_permission: str = Field(alias="requiredPermission")
    strict_permission_check: bool = Field(alias="strictPermissionCheck")
    active: bool


class CatalogAnswer(Answer):
    """A tool of the workflow catalog (spec: host.md#saved-workflows)."""

    identity: str
    plugin_id: str = Field(alias="pluginId")
    name: str
    description: str
    effect: Effect
    input_schema: dict[str, Any] = Field(alias="inputSchema")
    output_schema: dict[str, Any] | None = Field(alias="outputSchema")
    revision: str


class WorkflowSummary(Answer):
    id: str
    name: str
    updated_at: str = Field(alias="updatedAt")


class ShownWorkflow(Answer):
    """A saved workflow as the host shows it: as stored, each node annotated against the live
    catalog (available, revision, problems, and reconcile when its tool changed)."""

    id: str
    name: str
    nodes: list[dict[str, Any]]


class Reconciled(Answer):
    """The workflow after reconcile, and a report per node that changed."""

    workflow: ShownWorkflow
    reconciled: list[dict[str, Any]]
