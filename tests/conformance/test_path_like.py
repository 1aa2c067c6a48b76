"""Which parameters look like paths (FY-FILE-004), and which words would make them file-class."""

from __future__ import annotations

import pytest

from conformance.fengyu.path_like import looks_like_path, name_tokens

TEXT = {"type": "string"}
FILE = '"format": "fengyu-file"'
READ_WRITE = '"format": "fengyu-directory", "x-fengyu-file-access": "read-write"'


def test_names_split_on_case_underscores_and_hyphens() -> None:
    assert name_tokens("outputDir") == ["output", "dir"]
    assert name_tokens("output_dir") == ["output", "dir"]
    assert name_tokens("input-directory") == ["input", "directory"]


@pytest.mark.parametrize(
    ("name", "schema", "add"),
    [
        ("outputDir", TEXT, READ_WRITE),
        ("projectDir", TEXT, '"format": "fengyu-directory" (a folder to read)'),
        ("source", {"type": "string", "description": "File to import."}, FILE),
        ("doc", {"type": "string", "description": "Absolute path of the report."}, FILE),
        ("sourceFile", {"type": "object"}, '"type": "string", "format": "fengyu-file"'),
        ("attachments", {"type": "array", "items": TEXT, "description": "Files."}, '"items"'),
        ("target", {"type": "string", "pattern": "^/srv/.+"}, FILE),
    ],
)
def test_path_like_parameters_get_the_words_to_add(name: str, schema: dict, add: str) -> None:
    found = looks_like_path(name, schema)
    assert found is not None and add in found.add


@pytest.mark.parametrize(
    ("name", "schema"),
    [
        ("fileName", TEXT),
        ("filePrefix", TEXT),
        ("fileCount", {"type": "integer"}),
        ("profile", TEXT),
        ("splitColumn", {"type": "string", "description": "Column whose values decide the file."}),
        ("limit", {"type": "integer", "description": "Number of files."}),
        ("sheet", TEXT),
        # marked: its words are never read (spec: fengyu-manifest.md#file-parameters)
        ("outputFolder", {"type": "string", "format": "fengyu-file"}),
        ("folders", {"type": "array", "items": {"type": "string", "format": "fengyu-directory"}}),
    ],
)
def test_names_and_texts_about_files_are_not_paths(name: str, schema: dict) -> None:
    assert looks_like_path(name, schema) is None
