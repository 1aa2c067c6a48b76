"""File-class classification (spec: fengyu-manifest.md#file-parameters), as the host and the
kit both apply it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


FILE = {"type": "string", "format": "fengyu-file"}
DIRECTORY = {"type": "string", "format": "fengyu-directory"}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (FILE, FileClass.READ_FILE),
        ({**DIRECTORY, "x-fengyu-file-access": "read"}, FileClass.READ_DIRECTORY),
        (DIRECTORY, FileClass.READ_DIRECTORY),  # access omitted means read
        ({**DIRECTORY, "x-fengyu-file-access": "read-write"}, FileClass.WRITE_DIRECTORY),
        ({"type": "array", "items": FILE}, FileClass.FILE_LIST),
        # FengYu allows fengyu-file only read: the claim of more does not make it a folder
        ({**FILE, "x-fengyu-file-access": "read-write"}, FileClass.READ_FILE),
        # no host grants a list of folders
        ({"type": "array", "items": DIRECTORY}, None),
        # another format is no marker: the words decide, as for any unmarked parameter
        ({"type": "string", "format": "uri", "description": "A FileRef"}, FileClass.READ_FILE),
        ({"type": "string", "x-fengyu-file-access": "read-write"}, None),
    ],
)
def test_the_marker_gives_the_class(schema: object, expected: FileClass | None) -> None:
    assert classify_parameter(schema) == expected


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({**FILE, "description": "output folder"}, FileClass.READ_FILE),
        ({**FILE, "description": "Writable DirectoryRef for output"}, FileClass.READ_FILE),
        ({**DIRECTORY, "description": "A FileRef to read"}, FileClass.READ_DIRECTORY),
        (
            {**DIRECTORY, "x-fengyu-file-access": "read", "description": "writable output"},
            FileClass.READ_DIRECTORY,
        ),
        (
            {"type": "array", "items": DIRECTORY, "description": "FileRefs"},
            None,
        ),
    ],
)
def test_a_marked_parameter_is_never_second_guessed_by_its_words(
    schema: object, expected: FileClass | None
) -> None:
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


@given(
    marker=st.sampled_from(
        [
            ({"format": "fengyu-file"}, FileClass.READ_FILE),
            ({"format": "fengyu-directory"}, FileClass.READ_DIRECTORY),
            (
                {"format": "fengyu-directory", "x-fengyu-file-access": "read"},
                FileClass.READ_DIRECTORY,
            ),
            (
                {"format": "fengyu-directory", "x-fengyu-file-access": "read-write"},
                FileClass.WRITE_DIRECTORY,
            ),
        ]
    ),
    words=st.lists(
        st.sampled_from(["FileRef", "DirectoryRef", "writable", "output", "folder", "file"])
        | st.text(max_size=12),
        max_size=6,
    ),
)
def test_no_description_changes_a_marked_class(
    marker: tuple[dict[str, str], FileClass], words: list[str]
) -> None:
    keywords, expected = marker
    schema = {"type": "string", **keywords, "description": " ".join(words)}
    assert classify_parameter(schema) == expected
    listed = {"type": "array", "items": {"type": "string", "format": "fengyu-file"}}
    assert classify_parameter({**listed, "description": " ".join(words)}) == FileClass.FILE_LIST
