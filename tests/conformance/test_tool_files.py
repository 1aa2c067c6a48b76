"""Example inputs a plugin ships for its file parameters, as the kit's tool checks use them."""

from __future__ import annotations

import os
from pathlib import Path

from conformance.fengyu.tool_files import EXAMPLES, ToolFiles


def test_examples_are_copied_and_special_entries_left_out(tmp_path: Path) -> None:
    examples = tmp_path / "plugin" / EXAMPLES / "outline"
    (examples / "nested").mkdir(parents=True)
    (examples / "a.md").write_text("# a\n")
    (examples / "nested" / "b.md").write_text("# b\n")
    os.mkfifo(examples / "pipe")  # copying it would wait for a writer
    os.symlink(tmp_path / "missing", examples / "broken")
    files = ToolFiles(tmp_path / "plugin", "outline", tmp_path / "work")
    assert [p.relative_to(files.inputs).as_posix() for p in files.files] == ["a.md", "nested/b.md"]


def test_without_examples_the_kit_writes_a_file(tmp_path: Path) -> None:
    files = ToolFiles(tmp_path / "plugin", "outline", tmp_path / "work")
    assert [p.name for p in files.files] == ["input.txt"]
    assert files.source is None
