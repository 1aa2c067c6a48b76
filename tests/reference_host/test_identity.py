"""The sandbox identity's ACL entry on a folder the user hands a server (identity.open_tree):
what it gives, and that giving it again changes nothing."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from reference_host.process import identity
from reference_host.process.identity import GROUP_OBJ, MASK, USER, _entries, open_tree

SANDBOX = 65534


@pytest.fixture
def as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hand-overs happen only where the sandbox runs as another id (the host runs as root)."""
    monkeypatch.setattr(identity, "dropped_id", lambda: SANDBOX)


def acl(path: Path) -> list[tuple[int, int, int]]:
    return _entries(os.getxattr(path, identity.ACL_ACCESS))


def test_a_second_hand_over_keeps_the_group_as_it_was(tmp_path: Path, as_root: None) -> None:
    """The mode shows the ACL's mask once there is one: reading the group from it made every
    handed file group-writable at the second hand-over (and rewrote the ACL at each start)."""
    folder = tmp_path / "repo"
    folder.mkdir(mode=0o755)
    (folder / "index").write_bytes(b"x")
    (folder / "index").chmod(0o644)
    try:
        assert open_tree(folder) is None
    except OSError:
        pytest.skip("no ACLs on this file system")
    first = {p: acl(p) for p in (folder, folder / "index")}
    changed = os.stat(folder / "index").st_ctime_ns
    assert open_tree(folder) is None
    assert {p: acl(p) for p in first} == first
    assert os.stat(folder / "index").st_ctime_ns == changed  # left alone
    for path, entries in first.items():
        group = next(perm for tag, perm, _ in entries if tag == GROUP_OBJ)
        assert group == 0o5 if stat.S_ISDIR(path.stat().st_mode) else group == 0o4
        assert (USER, 0o7 if path == folder else 0o6, SANDBOX) in entries
        assert next(perm for tag, perm, _ in entries if tag == MASK) == (
            0o7 if path == folder else 0o6
        )
