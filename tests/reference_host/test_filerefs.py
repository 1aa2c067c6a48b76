"""File-class classification (SPEC F9), as the host and the kit both apply it."""

from __future__ import annotations

import pytest

from plugin_spec.filerefs import FileClass, classify_parameter, classify_parameters


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
