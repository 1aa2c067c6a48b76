"""--allow-root at start-up: a link is judged by what it points to, and a root that goes away
after the start shares nothing from where it was (its descriptor, opened at start, is used)."""

from __future__ import annotations

from pathlib import Path

import pytest

from plugin_spec.filerefs import FileRefError
from reference_host.__main__ import root_problem
from reference_host.grants.grant_store import GrantStore


def test_links_are_judged_by_their_target(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    for name, target in [("to-folder", "folder"), ("to-file", "file"), ("dangling", "gone")]:
        (tmp_path / name).symlink_to(tmp_path / target)
    assert root_problem([tmp_path / "to-folder"]) is None
    assert "is not a folder" in (root_problem([tmp_path / "to-file"]) or "")
    assert "does not exist" in (root_problem([tmp_path / "dangling"]) or "")


def test_a_root_removed_and_remade_after_the_start_shares_nothing(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    store = GrantStore([root])
    try:
        root.rmdir()
        root.mkdir()  # a new folder by the old name
        (root / "secret.txt").write_text("x")
        ref = store.attach("c1", "p", root / "secret.txt", "read")
        with pytest.raises(FileRefError):
            store.hand_over("c1", "p", ref)
    finally:
        store.close()
