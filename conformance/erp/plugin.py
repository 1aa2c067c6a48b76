"""An ERP plugin folder, loaded once: its tool files, parsed, with their problems kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from conformance.findings import Finding, shown
from conformance.sources import JsonDocument, JsonLoadError, load_json_file
from plugin_spec.json_types import JsonObject, JsonValue

ERP = "erp"
TOOLS_DIR = Path("metadata") / "tool"
LOAD_REQUIREMENT = "ERP-TOOL-001"
MUTATING = ("POST", "PUT", "PATCH", "DELETE")


def model_name(tool_code: str) -> str:
    """The name the model sees: dots are not allowed in tool names, so they become '_'."""
    return tool_code.replace(".", "_")


@dataclass(frozen=True)
class ErpTool:
    """One tool file that parsed as a JSON object."""

    file: str
    document: JsonDocument

    @property
    def data(self) -> JsonObject:
        data = self.document.data
        return data if isinstance(data, dict) else {}  # load_erp_plugin keeps only objects

    @property
    def code(self) -> JsonValue:
        return self.data.get("toolCode")

    @property
    def name(self) -> str | None:
        """The tool's identity in test ids and the baseline: its toolCode."""
        return self.code if isinstance(self.code, str) else None

    @property
    def handler(self) -> JsonObject:
        config = self.data.get("handlerConfig")
        return config if isinstance(config, dict) else {}

    def finding(self, requirement: str, at: str, message: str, fix: str = "") -> Finding:
        return Finding(requirement, message, self.file, at, self.document.line_of(at), fix)


@dataclass(eq=False)
class ErpPlugin:
    root: Path
    profile: str = ERP
    load_requirement: str = LOAD_REQUIREMENT
    tools: list[ErpTool] = field(default_factory=list)
    file_errors: list[Finding] = field(default_factory=list)
    load_error: JsonLoadError | None = None

    @property
    def label(self) -> str:
        """How test ids name the plugin: the applicationCode all its tools share, else its
        folder. Compared by equality, not in a set: a code may be a list or an object."""
        codes = [t.data.get("applicationCode") for t in self.tools]
        code = codes[0] if codes else None
        if isinstance(code, str) and code.strip() and all(c == code for c in codes):
            return code
        return self.root.name

    def tool_names(self) -> set[str]:
        return {model_name(t.code) for t in self.tools if isinstance(t.code, str)}


def load_erp_plugin(root: Path) -> ErpPlugin:
    """Read every metadata/tool/*.json; a file that does not load is kept as a finding."""
    plugin = ErpPlugin(root)
    files = sorted((root / TOOLS_DIR).glob("*.json"))
    if not files:
        plugin.load_error = JsonLoadError(f"{TOOLS_DIR}/ holds no *.json tool file")
        return plugin
    for path in files:
        display = str(path.relative_to(root))
        try:
            document = load_json_file(path, display)
        except JsonLoadError as exc:
            plugin.file_errors.append(
                Finding(LOAD_REQUIREMENT, exc.message, display, exc.pointer, exc.line)
            )
            continue
        if not isinstance(document.data, dict):
            plugin.file_errors.append(
                Finding(
                    LOAD_REQUIREMENT,
                    f"{display} must hold a JSON object, found {shown(document.data)}",
                    display,
                    "",
                    1,
                )
            )
            continue
        plugin.tools.append(ErpTool(display, document))
    return plugin
