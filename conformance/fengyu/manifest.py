"""A FengYu plugin folder, loaded once into the model every FengYu check reads.

Both manifest versions load into the same shape: a list of AiTool with parsed input and
output schemas. In v2 those live on rpc.methods; in v1 they are escaped JSON strings on the
tool, whose inner pointers are written `outer#inner` (e.g. /aiTools/0/inputSchema#/properties).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from conformance.fengyu.code_first import BASE_MANIFEST, CodeFirst, read_sidecars, unbuilt_reason
from conformance.findings import Finding, shown
from conformance.sources import (
    DuplicateKey,
    JsonDocument,
    JsonLoadError,
    load_json_file,
    parse_json,
    pointer,
)
from plugin_spec.json_types import JsonArray, JsonObject, JsonValue

MANIFEST = "manifest.json"
FENGYU_V2 = "fengyu-v2"
FENGYU_V1 = "fengyu-v1"
SCHEMA_FILES = {
    FENGYU_V2: "fengyu-manifest-v2.schema.json",
    FENGYU_V1: "fengyu-manifest-v1.schema.json",
}


@dataclass(frozen=True)
class SchemaSite:
    """A method's input or output schema and the pointer it is written at."""

    pointer: str
    data: JsonValue


@dataclass(frozen=True)
class AiTool:
    """One aiTools[] entry, with the schemas of the method it calls."""

    pointer: str
    entry: JsonObject
    input_schema: SchemaSite | None
    output_schema: SchemaSite | None

    @property
    def name(self) -> JsonValue:
        return self.entry.get("name")

    @property
    def method(self) -> JsonValue:
        return self.entry.get("method")

    @property
    def effect(self) -> JsonValue:
        return self.entry.get("effect")


@dataclass(eq=False)
class FengYuPlugin:
    """A plugin folder of the FengYu profile, as far as it could be read (hashable by identity)."""

    root: Path
    profile: str = FENGYU_V2
    load_requirement: str = "FY-MAN-001"
    document: JsonDocument | None = None
    load_error: JsonLoadError | None = None
    tools: list[AiTool] = field(default_factory=list)
    schemas: list[SchemaSite] = field(default_factory=list)
    embedded_errors: list[tuple[str, str]] = field(default_factory=list)
    duplicates: list[DuplicateKey] = field(default_factory=list)
    source_file: str = MANIFEST  # the authoring file: manifest.json, or the base if code-first
    code_first: CodeFirst | None = None  # the manifest/ sidecars of a code-first folder

    @property
    def data(self) -> JsonObject:
        data = self.document.data if self.document else None
        return data if isinstance(data, dict) else {}  # load_fengyu_plugin keeps only objects

    @property
    def label(self) -> str:
        """How test ids name the plugin: its id when it has one, else its folder."""
        plugin_id = self.data.get("id")
        return plugin_id if isinstance(plugin_id, str) and plugin_id.strip() else self.root.name

    def unbuilt_reason(self, requirement_id: str) -> str | None:
        """Why a requirement waits for the build on a code-first folder (None: judge it)."""
        return unbuilt_reason(requirement_id) if self.code_first is not None else None

    def tool_names(self) -> set[str]:
        """The names this plugin offers to the model."""
        return {tool.name for tool in self.tools if isinstance(tool.name, str)}

    def finding(self, requirement: str, at: str, message: str, fix: str = "") -> Finding:
        """A finding in the authoring file (manifest.json, or manifest.base.json when
        code-first); `outer#inner` pointers get the line of the outer value."""
        line = self.document.line_of(at.split("#", 1)[0]) if self.document else None
        return Finding(requirement, message, self.source_file, at, line, fix)


def load_fengyu_plugin(root: Path) -> FengYuPlugin:
    """Read root/manifest.json, or root/manifest.base.json and its sidecars when only that
    exists (code-first); never raises, a load failure is kept on the result."""
    plugin = FengYuPlugin(root=root)
    if not (root / MANIFEST).exists() and (root / BASE_MANIFEST).exists():
        plugin.source_file = BASE_MANIFEST
        plugin.code_first = read_sidecars(root)
    try:
        document = load_json_file(root / plugin.source_file, plugin.source_file)
    except JsonLoadError as exc:
        plugin.load_error = exc
        if plugin.code_first is None and not (root / MANIFEST).exists():
            plugin.load_error = JsonLoadError(
                f"{MANIFEST} not found, nor {BASE_MANIFEST} (the source of a code-first plugin)"
            )
        return plugin
    if not isinstance(document.data, dict):
        plugin.load_error = JsonLoadError(
            f"{plugin.source_file} must hold a JSON object, found {shown(document.data)}", 1
        )
        return plugin
    plugin.document = document
    plugin.duplicates = list(document.duplicates)
    if document.data.get("schemaVersion") == 1:
        plugin.profile = FENGYU_V1
        _read_v1_tools(plugin)
    else:
        _read_v2_tools(plugin)
    return plugin


def _read_v2_tools(plugin: FengYuPlugin) -> None:
    rpc = plugin.data.get("rpc")
    methods = rpc.get("methods") if isinstance(rpc, dict) else None
    methods = methods if isinstance(methods, dict) else {}
    sites: dict[tuple[str, str], SchemaSite] = {}
    for name, method in methods.items():
        if not isinstance(method, dict):
            continue
        for key in ("inputSchema", "outputSchema"):
            if key in method:
                sites[name, key] = SchemaSite(pointer("rpc", "methods", name, key), method[key])
    plugin.schemas = list(sites.values())
    for index, entry in enumerate(_tool_entries(plugin)):
        if isinstance(entry, dict):
            method = entry.get("method")
            key = method if isinstance(method, str) else ""
            plugin.tools.append(
                AiTool(
                    pointer("aiTools", index),
                    entry,
                    sites.get((key, "inputSchema")),
                    sites.get((key, "outputSchema")),
                )
            )


def _read_v1_tools(plugin: FengYuPlugin) -> None:
    for index, entry in enumerate(_tool_entries(plugin)):
        if not isinstance(entry, dict):
            continue
        parsed: dict[str, SchemaSite | None] = {}
        for key in ("inputSchema", "outputSchema"):
            parsed[key] = _parse_embedded(plugin, pointer("aiTools", index, key), entry.get(key))
        plugin.tools.append(
            AiTool(pointer("aiTools", index), entry, parsed["inputSchema"], parsed["outputSchema"])
        )
        plugin.schemas.extend(site for site in parsed.values() if site is not None)


def _parse_embedded(plugin: FengYuPlugin, at: str, text: JsonValue) -> SchemaSite | None:
    """Parse a v1 escaped-JSON schema string; its problems are kept for FY-LEG-002/FY-MAN-002."""
    if not isinstance(text, str):
        return None
    try:
        inner = parse_json(text, f"{MANIFEST} {at}")
    except JsonLoadError as exc:
        plugin.embedded_errors.append((at, exc.message))
        return None
    plugin.duplicates.extend(DuplicateKey(f"{at}#{d.pointer}", d.key) for d in inner.duplicates)
    return SchemaSite(at + "#", inner.data)


def _tool_entries(plugin: FengYuPlugin) -> JsonArray:
    tools = plugin.data.get("aiTools")
    return tools if isinstance(tools, list) else []
