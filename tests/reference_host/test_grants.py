"""FileRef grants (spec: host.md#fileref-grants): attach, inject (route B), resolve, and every
refusal."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plugin_spec.filerefs import FileClass, FileRefError
from reference_host.grants.grant_store import GrantStore


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    root = tmp_path / "shared"
    (root / "out").mkdir(parents=True)
    (root / "in.xlsx").write_bytes(b"PK")
    (root / "b.xlsx").write_bytes(b"PK")
    return root


@pytest.fixture
def grants(shared: Path) -> GrantStore:
    return GrantStore([shared])


def test_attach_returns_a_fileref(grants: GrantStore, shared: Path) -> None:
    ref = grants.attach("c", "p", shared / "in.xlsx", "read")
    assert ref["id"].startswith("ref_") and ref["kind"] == "file" and ref["size"] == 2
    assert grants.attach("c", "p", shared / "out", "write")["kind"] == "directory"


def test_paths_outside_the_allowed_roots_are_refused(
    grants: GrantStore, shared: Path, tmp_path: Path
) -> None:
    (tmp_path / "outside.txt").write_text("x")
    for path in (shared / ".." / "outside.txt", tmp_path / "outside.txt"):
        with pytest.raises(FileRefError, match="outside the folders"):
            grants.attach("c", "p", path, "read")
    with pytest.raises(FileRefError, match="does not exist"):
        grants.attach("c", "p", shared / "missing.xlsx", "read")
    with pytest.raises(FileRefError, match="access must be one of"):
        grants.attach("c", "p", shared / "in.xlsx", "rw")


def test_symlink_escaping_the_root_is_refused(
    grants: GrantStore, shared: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("x")
    os.symlink(secret, shared / "link.txt")
    with pytest.raises(FileRefError, match="outside the folders"):
        grants.attach("c", "p", shared / "link.txt", "read")


def test_symlink_swapped_in_after_the_grant_is_refused(
    grants: GrantStore, shared: Path, tmp_path: Path
) -> None:
    ref = grants.attach("c", "p", shared / "in.xlsx", "read")
    (shared / "in.xlsx").unlink()
    os.symlink(tmp_path, shared / "in.xlsx")
    with pytest.raises(FileRefError, match="now points elsewhere"):
        grants.hand_over("c", "p", ref)


def test_refusals(grants: GrantStore, shared: Path) -> None:
    ref = grants.attach("c", "p", shared / "in.xlsx", "read")
    assert grants.granted("c", "p", ref).path == shared / "in.xlsx"
    assert grants.hand_over("c", "p", ref) == grants.copy_path("p", ref)
    with pytest.raises(FileRefError, match="not granted to plugin q"):
        grants.hand_over("c", "q", ref)
    with pytest.raises(FileRefError, match="not granted in this conversation"):
        grants.hand_over("other", "p", ref)
    with pytest.raises(FileRefError, match="not granted in this conversation"):
        grants.hand_over("c", "p", {**ref, "id": "ref_forged"})
    with pytest.raises(FileRefError, match="read-only"):
        grants.hand_over("c", "p", ref, write=True)


def test_write_parameter_through_a_read_grant_is_refused(grants: GrantStore, shared: Path) -> None:
    ref = grants.attach("c", "p", shared / "out", "read")
    with pytest.raises(FileRefError, match="read-only"):
        grants.prepare("c", "p", {"outputDir": ref}, {"outputDir": FileClass.WRITE_DIRECTORY})


def test_route_b_injects_the_single_matching_grant(grants: GrantStore, shared: Path) -> None:
    ref = grants.attach("c", "p", shared / "in.xlsx", "read")
    out_ref = grants.attach("c", "p", shared / "out", "read-write")
    grants.attach("c", "other-plugin", shared / "b.xlsx", "read")
    params = grants.prepare("c", "p", {"filePath": "made up"}, {"filePath": FileClass.READ_FILE})
    assert params == {"filePath": grants.copy_path("p", ref)}
    assert Path(params["filePath"]).read_bytes() == b"PK"
    out = grants.prepare("c", "p", {}, {"outputDir": FileClass.WRITE_DIRECTORY})
    assert out == {"outputDir": grants.copy_path("p", out_ref, write=True)}


def test_write_directory_needs_a_writable_grant(grants: GrantStore, shared: Path) -> None:
    grants.attach("c", "p", shared / "out", "read")
    assert grants.inject("c", "p", {}, {"outputDir": FileClass.WRITE_DIRECTORY}) == {}


def test_two_matching_grants_leave_the_choice_to_the_model(
    grants: GrantStore, shared: Path
) -> None:
    grants.attach("c", "p", shared / "in.xlsx", "read")
    grants.attach("c", "p", shared / "b.xlsx", "read")
    assert grants.inject("c", "p", {"filePath": "x"}, {"filePath": FileClass.READ_FILE}) == {
        "filePath": "x"
    }


def test_file_list_gets_every_matching_grant(grants: GrantStore, shared: Path) -> None:
    a = grants.attach("c", "p", shared / "in.xlsx", "read")
    b = grants.attach("c", "p", shared / "b.xlsx", "read")
    injected = grants.inject("c", "p", {}, {"files": FileClass.FILE_LIST})
    assert injected == {"files": [a, b]}


def test_several_file_parameters_mean_route_a(grants: GrantStore, shared: Path) -> None:
    grants.attach("c", "p", shared / "in.xlsx", "read")
    classes = {"a": FileClass.READ_FILE, "b": FileClass.READ_FILE}
    assert grants.inject("c", "p", {}, classes) == {}
    assert "in.xlsx" in grants.system_prompt("c")
    assert grants.system_prompt("nobody") == ""


def test_nested_refs_are_resolved(grants: GrantStore, shared: Path) -> None:
    ref = grants.attach("c", "p", shared / "in.xlsx", "read")
    params = grants.prepare("c", "p", {"jobs": [{"input": ref}], "n": 1}, {})
    assert params == {"jobs": [{"input": grants.copy_path("p", ref)}], "n": 1}


def test_shown_lists_granted_refs_with_their_paths(grants: GrantStore, shared: Path) -> None:
    """What an approval shows: each granted ref, nested ones too, with its resolved path and
    whether the host injected it; refs of another plugin or forged ones are left out."""
    mine = grants.attach("c", "p", shared / "in.xlsx", "read")
    theirs = grants.attach("c", "other", shared / "b.xlsx", "read")
    forged = {**mine, "id": "ref_forged"}
    args = {"source": mine, "jobs": [{"input": mine}, theirs, forged], "n": 1}
    shown = grants.shown("c", "p", args, injected=["source"])
    assert [(s.parameter, s.id, s.path, s.injected) for s in shown] == [
        ("source", mine["id"], str(shared / "in.xlsx"), True),
        ("jobs", mine["id"], str(shared / "in.xlsx"), False),
    ]
    assert grants.shown("other-conversation", "p", args) == []
