"""JSON files as the kit reads them: parsed once, with duplicate keys and line numbers kept.

Findings name a file, an RFC 6901 JSON pointer and a line, so a plugin author can jump
straight to the value; this module is where pointers meet lines.

A plugin folder is untrusted input, so reading is bounded (plugin_spec.json_files: only
regular files, at most MAX_FILE_BYTES) and a text nested deeper than MAX_DEPTH is refused
before anything recurses into it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import json_source_map

from conformance.findings import shown
from plugin_spec.json_depth import too_deep
from plugin_spec.json_files import JsonFileError, read_bounded
from plugin_spec.json_types import JsonObject, JsonValue

# Far above any real manifest or tool file, far below where jsonschema's recursion (several
# frames per level) meets Python's recursion limit; System.Text.Json's default is also 64.
MAX_DEPTH = 64


def pointer(*tokens: str | int) -> str:
    """Join tokens into an RFC 6901 JSON pointer ('' is the whole document)."""
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


def strings_in(value: object, at: str = "") -> Iterator[tuple[str, str]]:
    """Every string in a JSON value, object keys too, with the pointer where it sits (below
    at): where a check looks for text that must not be there."""
    if isinstance(value, str):
        yield at, value
    elif isinstance(value, dict):
        for key, item in value.items():
            here = at + pointer(str(key))
            yield here, str(key)
            yield from strings_in(item, here)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from strings_in(item, f"{at}/{index}")


def pointer_tokens(ptr: str) -> list[str]:
    if not ptr:
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in ptr.split("/")[1:]]


class JsonLoadError(Exception):
    """A file that is missing, not UTF-8 or not JSON; carries where it went wrong."""

    def __init__(self, message: str, line: int | None = None, pointer: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.pointer = pointer


@dataclass(frozen=True)
class DuplicateKey:
    pointer: str
    key: str


@dataclass
class JsonDocument:
    """A parsed JSON text with the means to locate any pointer in it."""

    display: str
    text: str
    data: JsonValue
    duplicates: list[DuplicateKey] = field(default_factory=list)

    @cached_property
    def _source_map(self) -> dict[str, Any]:
        source_map: dict[str, Any] = json_source_map.calculate(self.text)  # pointer -> Entry
        return source_map

    def line_of(self, ptr: str) -> int | None:
        """1-based line of the value at ptr, or of its nearest existing ancestor."""
        tokens = pointer_tokens(ptr)
        while True:
            entry = self._source_map.get("".join("/" + t for t in tokens))
            if entry is not None:
                line: int = entry.value_start.line
                return line + 1
            if not tokens:
                return None
            tokens.pop()

    def get(self, ptr: str, default: JsonValue = None) -> JsonValue:
        node = self.data
        for token in pointer_tokens(ptr):
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return default
        return node


def parse_json(text: str, display: str) -> JsonDocument:
    """Parse text, recording every repeated key instead of silently keeping the last value."""
    if (deep := too_deep(text, MAX_DEPTH)) is not None:
        line = text.count("\n", 0, deep.offset) + 1
        raise JsonLoadError(
            f"{display} nests deeper than {MAX_DEPTH} levels (line {line}); "
            "the kit does not check files nested that deeply",
            line,
            pointer(*deep.tokens),
        )
    repeated: dict[int, list[str]] = {}

    def pairs_hook(pairs: Sequence[tuple[str, JsonValue]]) -> JsonObject:
        obj: JsonObject = {}
        for key, value in pairs:
            if key in obj:
                repeated.setdefault(id(obj), []).append(key)
            obj[key] = value
        return obj

    try:
        data: JsonValue = json.loads(text, object_pairs_hook=pairs_hook)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        near = shown(text[max(0, exc.pos - 30) : exc.pos + 30], 80)
        raise JsonLoadError(
            f"{display} is not valid JSON: {exc.msg} ({where}), found {near} there", exc.lineno
        ) from None
    except ValueError as exc:  # a number past Python's int digit limit (sys.int_info)
        raise JsonLoadError(f"{display} is not usable JSON: {str(exc).split(';')[0]}") from None
    except RecursionError:
        raise JsonLoadError(f"{display} nests too deeply to be read") from None
    duplicates = [
        DuplicateKey(pointer_at + pointer(key), key)
        for pointer_at, node in _walk(data, "")
        if isinstance(node, dict)
        for key in repeated.get(id(node), ())
    ]
    return JsonDocument(display=display, text=text, data=data, duplicates=duplicates)


def load_json_file(path: Path, display: str) -> JsonDocument:
    """Read and parse a JSON file; every way it can be unusable is a JsonLoadError."""
    try:
        raw = read_bounded(path, display)
    except JsonFileError as exc:
        raise JsonLoadError(str(exc)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise JsonLoadError(f"{display} is not UTF-8 (byte {exc.start})") from None
    return parse_json(text, display)


def _walk(node: JsonValue, at: str) -> Iterator[tuple[str, JsonValue]]:
    yield at, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, at + pointer(key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, at + pointer(index))
