"""File-class parameters (spec: fengyu-manifest.md#file-parameters): which tool inputs take a
granted FileRef.

The host classifies a parameter to decide whether it can inject a grant itself (route B) or
must list the refs for the model (route A). FengYu's explicit marker (`format: fengyu-file` or
`fengyu-directory`, with `x-fengyu-file-access`) decides first and is never second-guessed by
the words around it; only an unmarked parameter is classed by its description, the older way.
The kit reports the same classification, so plugin authors see what the host will do with
each parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Literal, TypedDict

from plugin_spec.json_types import JsonMapping, ReadOnlyJson

FileKind = Literal["file", "directory"]


class Access(StrEnum):
    """What a grant lets the plugin do with its file or folder (spec: host.md#fileref-grants);
    `read-write` is also the value of FengYu's `x-fengyu-file-access` for a folder to write."""

    READ = "read"
    WRITE = "write"
    READ_WRITE = "read-write"

    @property
    def writes(self) -> bool:
        return self is not Access.READ


class FileRef(TypedDict):
    """A granted file or folder as the host lists it to the model and the model passes it back
    in a call's arguments (spec: host.md#fileref-grants); FengYu knows one by its id, ref_...

    A FileRef that arrives in arguments is only a Mapping until it is looked up by its id
    (is_file_ref): the host trusts the grant it names, never the other members it carries."""

    id: str
    name: str
    kind: FileKind
    access: Access
    size: int  # bytes of a file; 0 for a folder


class FileClass(StrEnum):
    READ_FILE = "read-file"
    READ_DIRECTORY = "read-directory"
    WRITE_DIRECTORY = "write-directory"
    FILE_LIST = "file-list"

    @property
    def kind(self) -> FileKind:
        """The FileRef kind a grant must have to fill this parameter."""
        directories = (FileClass.READ_DIRECTORY, FileClass.WRITE_DIRECTORY)
        return "directory" if self in directories else "file"

    @property
    def writes(self) -> bool:
        return self is FileClass.WRITE_DIRECTORY


FILE_FORMAT = "fengyu-file"
DIRECTORY_FORMAT = "fengyu-directory"
MARKER_FORMATS = (FILE_FORMAT, DIRECTORY_FORMAT)
FILE_ACCESS = "x-fengyu-file-access"


def marked_class(schema: ReadOnlyJson) -> FileClass | None:
    """The file class FengYu's marker gives a property schema, or None when it is unmarked.

    `fengyu-file` is a file to read whatever access it claims (FengYu allows it only read);
    `fengyu-directory` is a folder to write into with access `read-write`, otherwise (access
    `read` or omitted, which FengYu reads as read) a folder to read. An array whose items are
    marked `fengyu-file` is a file list; no host grants a list of folders, so an array of
    `fengyu-directory` items has no file class.
    """
    if not isinstance(schema, Mapping):
        return None
    marker = schema.get("format")
    if marker == FILE_FORMAT:
        return FileClass.READ_FILE
    if marker == DIRECTORY_FORMAT:
        writes = schema.get(FILE_ACCESS) == Access.READ_WRITE
        return FileClass.WRITE_DIRECTORY if writes else FileClass.READ_DIRECTORY
    items = schema.get("items")
    if isinstance(items, Mapping) and items.get("format") == FILE_FORMAT:
        return FileClass.FILE_LIST
    return None


def is_marked(schema: ReadOnlyJson) -> bool:
    """Whether the property (or its items) carries FengYu's file marker: its words are then
    never read to class it, by the host or by the kit's path-like warning."""
    if not isinstance(schema, Mapping):
        return False
    items = schema.get("items")
    return schema.get("format") in MARKER_FORMATS or (
        isinstance(items, Mapping) and items.get("format") in MARKER_FORMATS
    )


def classify_parameter(schema: ReadOnlyJson) -> FileClass | None:
    """The file class of one property schema, or None for an ordinary parameter.

    The marker decides when there is one (marked_class); the description is read only for an
    unmarked parameter. There, an array whose items are FileRefs is a file list even when the
    array's own description mentions FileRefs too, so that check comes first.
    """
    if not isinstance(schema, Mapping):
        return None
    if is_marked(schema):
        return marked_class(schema)
    items = schema.get("items")
    if schema.get("type") == "array" and "fileref" in _description(items):
        return FileClass.FILE_LIST
    text = _description(schema)
    if "directoryref" in text:
        writable = "writable" in text or "output" in text
        return FileClass.WRITE_DIRECTORY if writable else FileClass.READ_DIRECTORY
    if "fileref" in text:
        return FileClass.READ_FILE
    return None


def classify_parameters(input_schema: ReadOnlyJson) -> dict[str, FileClass]:
    """File-class parameters of a tool's input schema, by property name."""
    properties = input_schema.get("properties") if isinstance(input_schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return {}
    classes = {name: classify_parameter(schema) for name, schema in properties.items()}
    return {name: cls for name, cls in classes.items() if cls is not None}


def _description(schema: ReadOnlyJson) -> str:
    description = schema.get("description") if isinstance(schema, Mapping) else None
    return description.lower() if isinstance(description, str) else ""


class FileRefError(Exception):
    """A FileRef in a call's params that is not granted to the called plugin."""


def is_file_ref(value: object) -> bool:
    """FengYu's test for a FileRef: an object whose id starts with ref_
    (spec: host.md#fileref-grants)."""
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("id"), str)
        and value["id"].startswith("ref_")
    )


HandOver = Callable[[JsonMapping], str]
"""What a caller gives the worker for one FileRef: its path, or FileRefError."""


def resolve_refs(value: ReadOnlyJson, hand_over: HandOver) -> ReadOnlyJson:
    """value with every FileRef object replaced by the path hand_over gives for it
    (spec: host.md#fileref-grants).

    The one walk over maps and lists, shared by the host (whose grant store hands over copies)
    and the kit (which hands over its own fixture files); it returns a new structure.
    """
    if isinstance(value, Mapping) and is_file_ref(value):
        return hand_over(value)
    if isinstance(value, Mapping):
        return {key: resolve_refs(item, hand_over) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve_refs(item, hand_over) for item in value]
    return value


def by_id(paths: Mapping[str, Path], plugin_id: str) -> HandOver:
    """A hand-over from paths granted by ref id; a ref it does not know fails the call."""

    def hand_over(ref: JsonMapping) -> str:
        ref_id = ref["id"]
        path = paths.get(ref_id) if isinstance(ref_id, str) else None
        if path is None:
            raise FileRefError(f"FileRef {ref['id']} is not granted to plugin {plugin_id}")
        return str(Path(path).resolve())

    return hand_over
