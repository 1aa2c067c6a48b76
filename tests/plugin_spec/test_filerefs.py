"""File-class classification (spec: fengyu-manifest.md#file-parameters), as the host and the
kit both apply it."""

from __future__ import annotations

from pathlib import Path

import pytest

from plugin_spec.filerefs import (
    FileClass,
    FileRefError,
    by_id,
    classify_parameter,
    classify_parameters,
    resolve_refs,
)


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string", "description": "A readable FengYu FileRef"}, FileClass.READ_FILE),
        ({"type": "string", "description": "A DirectoryRef to scan"}, FileClass.READ_DIRECTORY),
        ({"type": "string", "description": "A writable DirectoryRef"}, FileClass.WRITE_DIRECTORY),
        ({"type": "string", "description": "DirectoryRef for output"}, FileClass.WRITE_DIRECTORY),
        (
            {"type": "array", "description": "FileRefs", "items": {"description": "a FileRef"}},
            FileClass.FILE_LIST,
        ),
        ({"type": "array", "items": {"type": "string"}}, None),
        ({"type": "string", "description": "a file name"}, None),
        ({"type": "string"}, None),
        ("not a schema", None),
    ],
)
def test_classify_parameter(schema: object, expected: FileClass | None) -> None:
    assert classify_parameter(schema) == expected


def test_classify_parameters_keeps_only_file_class() -> None:
    schema = {
        "type": "object",
        "properties": {
            "input": {"type": "string", "description": "FileRef of the workbook"},
            "mode": {"type": "string"},
        },
    }
    assert classify_parameters(schema) == {"input": FileClass.READ_FILE}
    assert classify_parameters({"type": "object"}) == {}


def test_kinds_and_writes() -> None:
    assert FileClass.WRITE_DIRECTORY.kind == "directory" and FileClass.WRITE_DIRECTORY.writes
    assert FileClass.FILE_LIST.kind == "file" and not FileClass.READ_FILE.writes


def test_refs_are_resolved_by_the_hand_over(tmp_path: Path) -> None:
    granted = tmp_path / "in.xlsx"
    granted.write_bytes(b"")
    ref = {"id": "ref_1", "name": "in.xlsx", "kind": "file", "access": "read", "size": 0}
    hand_over = by_id({"ref_1": granted}, "fan.summer.fake")
    assert resolve_refs({"files": [ref], "x": 1}, hand_over) == {"files": [str(granted)], "x": 1}
    with pytest.raises(FileRefError, match=r"ref_2 is not granted to plugin fan\.summer\.fake"):
        resolve_refs({"f": {**ref, "id": "ref_2"}}, hand_over)
