"""Which parameters look like paths (FY-FILE-004), and which words would make them file-class."""

from __future__ import annotations

import pytest

from conformance.fengyu.path_like import looks_like_path, name_tokens

TEXT = {"type": "string"}


def test_names_split_on_case_underscores_and_hyphens() -> None:
    assert name_tokens("outputDir") == ["output", "dir"]
    assert name_tokens("output_dir") == ["output", "dir"]
    assert name_tokens("input-directory") == ["input", "directory"]


@pytest.mark.parametrize(
    ("name", "schema", "add"),
    [
        ("outputDir", TEXT, "'Writable DirectoryRef'"),
        ("projectDir", TEXT, "'DirectoryRef' in the description (a folder to read)"),
        ("source", {"type": "string", "description": "File to import."}, "'FileRef'"),
        ("doc", {"type": "string", "description": "Absolute path of the report."}, "'FileRef'"),
        ("sourceFile", {"type": "object"}, "'FileRef'"),
        ("attachments", {"type": "array", "items": TEXT, "description": "Files."}, "items"),
        ("target", {"type": "string", "pattern": "^/srv/.+"}, "'FileRef'"),
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
    ],
)
def test_names_and_texts_about_files_are_not_paths(name: str, schema: dict) -> None:
    assert looks_like_path(name, schema) is None
