"""The file-class parameters of a FengYu plugin's tools, and those that only look like paths:
what the host will fill from grants (spec: fengyu-manifest.md#file-parameters), read by the
FY-FILE checks and shown in every run's summary."""

from __future__ import annotations

from dataclasses import dataclass

from conformance.fengyu.manifest import AiTool, FengYuPlugin
from conformance.fengyu.path_like import looks_like_path
from conformance.sources import pointer
from plugin_spec.filerefs import FileClass, classify_parameters, is_marked
from plugin_spec.json_types import JsonValue, as_object


@dataclass(frozen=True)
class FileParameter:
    """One file-class parameter of one tool, and the injection route the host will take."""

    tool: str
    parameter: str
    file_class: FileClass
    schema_pointer: str
    schema: JsonValue
    route: str

    @property
    def by(self) -> str:
        """What classed it: FengYu's marker, or (unmarked) the words of its description."""
        return "marker" if is_marked(self.schema) else "description"

    def to_json(self) -> dict[str, str]:
        return {
            "tool": self.tool,
            "parameter": self.parameter,
            "class": self.file_class.value,
            "route": self.route,
            "by": self.by,
        }


def file_parameters(plugin: FengYuPlugin) -> list[FileParameter]:
    """Every file-class parameter of every tool; route B needs exactly one per tool
    (spec: host.md#route-b-injection)."""
    found = []
    for tool in plugin.tools:
        site = tool.input_schema
        if site is None:
            continue  # no schema, no file-class parameters
        classes = file_classes(tool)
        route = "B (host injects a matching grant)" if len(classes) == 1 else "A (model fills it)"
        for name, file_class in classes.items():
            at = site.pointer + pointer("properties", name)
            schema = as_object(as_object(site.data).get("properties"))[name]
            found.append(FileParameter(str(tool.name), name, file_class, at, schema, route))
    return found


@dataclass(frozen=True)
class PathLikeParameter:
    """A parameter that looks like a path but that the host will not treat as a file."""

    tool: str
    parameter: str
    schema_pointer: str
    because: str
    add: str

    def to_json(self) -> dict[str, str]:
        return {
            "tool": self.tool,
            "parameter": self.parameter,
            "because": self.because,
            "add": self.add,
        }


def path_like_parameters(plugin: FengYuPlugin) -> list[PathLikeParameter]:
    """Every top-level parameter that is not file-class but looks like a path."""
    found = []
    for tool in plugin.tools:
        site = tool.input_schema
        data = site.data if site is not None else None
        properties = data.get("properties") if isinstance(data, dict) else None
        if site is None or not isinstance(properties, dict):
            continue
        classes = file_classes(tool)
        for name, schema in properties.items():
            if name in classes or (seen := looks_like_path(name, schema)) is None:
                continue
            at = site.pointer + pointer("properties", name)
            found.append(PathLikeParameter(str(tool.name), name, at, seen.because, seen.add))
    return found


def file_classes(tool: AiTool) -> dict[str, FileClass]:
    return classify_parameters(tool.input_schema.data) if tool.input_schema else {}
