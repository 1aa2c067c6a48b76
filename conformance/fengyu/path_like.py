"""Parameters that look like paths but are not file-class: the silent file mistake.

A parameter counts as file-class only when FengYu's marker (`format: fengyu-file` or
`fengyu-directory`) or, unmarked, its description (FileRef, DirectoryRef) says so
(plugin_spec.filerefs). One without either ("Resolved output directory.") is never filled from
a grant and no file check looks at it; this finds those, and says which marker would class it.
A marked parameter is never looked at here: its words do not count."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plugin_spec.filerefs import is_marked

PATH_WORDS = frozenset(
    {
        "path",
        "paths",
        "file",
        "files",
        "folder",
        "folders",
        "dir",
        "dirs",
        "directory",
        "directories",
    }
)
# A last name token that makes the parameter about a file rather than a path to one.
NOT_A_PATH = frozenset(
    {
        "type",
        "types",
        "format",
        "extension",
        "ext",
        "count",
        "size",
        "mode",
        "encoding",
        "kind",
        "name",
        "names",
        "prefix",
        "suffix",
        "id",
    }
)
# A description is about a path when it says "path" anywhere, or names a file, folder or
# directory among its first words (its subject: "Folder containing the attachments"), not
# in passing ("the column whose values decide the output file").
SUBJECT_WORDS = 5
DIRECTORY_WORDS = frozenset({"folder", "folders", "dir", "dirs", "directory", "directories"})
OUTPUT_WORDS = frozenset({"output", "out", "save", "write", "target", "destination", "dest"})


@dataclass(frozen=True)
class PathLike:
    """Why the parameter looks like a path, and the words that would make it file-class."""

    because: str
    add: str


def name_tokens(name: str) -> list[str]:
    """`outputDir`, `output_dir`, `output-dir` -> ["output", "dir"]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [t.lower() for t in re.split(r"[\s_\-.]+", spaced) if t]


def words(text: str) -> list[str]:
    return [t for w in re.findall(r"[A-Za-z]+", text) for t in name_tokens(w)]


def looks_like_path(name: str, schema: Any) -> PathLike | None:
    """For a parameter that is not file-class: why it looks like a path, or None."""
    if not isinstance(schema, Mapping) or is_marked(schema):
        return None
    is_list = schema.get("type") == "array"
    target = schema.get("items") if is_list else schema
    # A string, or an untyped value or object: authors who expect the FileRef itself
    # (rather than the path the host resolves it to) type it as an object.
    if not isinstance(target, Mapping) or target.get("type", "object") not in ("string", "object"):
        return None
    tokens = name_tokens(name)
    description = schema.get("description")
    described = words(description) if isinstance(description, str) else []
    pattern = target.get("pattern")
    if tokens and tokens[-1] in NOT_A_PATH:
        return None
    if hits := [t for t in tokens if t in PATH_WORDS]:
        because = f"its name says {hits[0]!r}"
    elif hits := [
        t for n, t in enumerate(described) if t in PATH_WORDS and (n < SUBJECT_WORDS or "path" in t)
    ]:
        because = f"its description says {hits[0]!r}"
    elif isinstance(pattern, str) and ("/" in pattern or "\\\\" in pattern):
        because = f"its pattern {pattern!r} matches paths"
    else:
        return None
    every = set(tokens) | set(described)
    return PathLike(because, _words_to_add(every, is_list))


def _words_to_add(every: set[str], is_list: bool) -> str:
    """FengYu's file marker for what the words suggest (fengyu-manifest.md)."""
    if is_list:
        return '"items": {"type": "string", "format": "fengyu-file"} (a list of granted files)'
    if every & DIRECTORY_WORDS:
        if every & OUTPUT_WORDS:
            return (
                '"type": "string", "format": "fengyu-directory", "x-fengyu-file-access": '
                '"read-write" (a folder the tool writes into; declare files.write)'
            )
        return '"type": "string", "format": "fengyu-directory" (a folder to read)'
    return '"type": "string", "format": "fengyu-file" (a granted file)'
