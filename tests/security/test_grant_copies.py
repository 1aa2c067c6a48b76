"""What a worker gets for a grant (spec: host.md#fileref-grants): copies made through
descriptors, never via links.

These drive the GrantStore directly on a real file system; test_grant_races covers the same
mechanism through the host and real workers.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from plugin_spec.filerefs import FileClass, FileRefError
from reference_host.grants import copies as grant_copies
from reference_host.grants.grant_store import GrantStore
from tests.conftest import MakeHost, file_texts, grant_store

SECRET = "TOP-SECRET"


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    root = tmp_path / "shared"
    (root / "out").mkdir(parents=True)
    (root / "docs" / "sub").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# a\n")
    (root / "docs" / "sub" / "b.md").write_text("# b\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text(SECRET)
    return folder


@pytest.fixture
def store(shared: Path, tmp_path: Path) -> Iterator[GrantStore]:
    yield from grant_store([shared], tmp_path / "data")


def test_a_read_folder_is_copied_without_its_links_and_special_files(
    store: GrantStore, shared: Path, outside: Path
) -> None:
    docs = shared / "docs"
    (docs / "leak.md").symlink_to(outside / "secret.md")
    (docs / "leakdir").symlink_to(outside, target_is_directory=True)
    os.mkfifo(docs / "pipe")
    ref = store.attach("c", "p", docs, "read")
    params = store.prepare("c", "p", {"d": ref}, {"d": FileClass.READ_DIRECTORY})
    copy = Path(params["d"])
    assert copy == Path(store.copy_path("p", ref))
    assert file_texts(copy) == {"a.md": "# a\n", "sub/b.md": "# b\n"}
    assert not any(p.is_symlink() for p in copy.rglob("*"))


def test_a_read_folder_swapped_for_a_link_is_refused(
    store: GrantStore, shared: Path, outside: Path
) -> None:
    ref = store.attach("c", "p", shared / "docs", "read")
    (shared / "docs").rename(shared / "docs-old")
    (shared / "docs").symlink_to(outside, target_is_directory=True)
    with pytest.raises(FileRefError, match="now points elsewhere"):
        store.hand_over("c", "p", ref)


def test_a_read_folder_raced_with_link_swaps_never_copies_outside_content(
    store: GrantStore, shared: Path, outside: Path
) -> None:
    """A bounded race on a granted folder's entries: each file is swapped for a link to the
    outside file and back while the host copies the folder."""
    docs = shared / "docs"
    ref = store.attach("c", "p", docs, "read")
    stop = threading.Event()

    def swap() -> None:
        for index in range(20_000):
            if stop.is_set():
                return
            scratch = docs / ".swap"
            if index % 2:
                scratch.write_text("# a\n")
            else:
                scratch.symlink_to(outside / "secret.md")
            os.replace(scratch, docs / "a.md")

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    leaks = 0
    try:
        for _ in range(300):
            leaks += SECRET in str(file_texts(Path(store.hand_over("c", "p", ref))))
    finally:
        stop.set()
        swapper.join(timeout=60)
    assert leaks == 0


def test_a_link_written_into_staging_is_refused_and_nothing_is_committed(
    store: GrantStore, shared: Path, outside: Path
) -> None:
    ref = store.attach("c", "p", shared / "out", "read-write")
    staging = Path(store.hand_over("c", "p", ref, write=True))
    assert list(staging.iterdir()) == []
    (staging / "a.txt").write_text("mine")
    (staging / "link.txt").symlink_to(outside / "secret.md")
    with pytest.raises(FileRefError, match=r"link\.txt is a link or a special file"):
        store.commit("c", "p")
    assert list((shared / "out").iterdir()) == []
    (staging / "link.txt").unlink()
    store.commit("c", "p")
    assert file_texts(shared / "out") == {"a.txt": "mine"}


def test_output_reaches_the_granted_folder_and_later_writes_follow(
    store: GrantStore, shared: Path
) -> None:
    """The next call handed the same staging: what it writes or changes there follows."""
    ref = store.attach("c", "p", shared / "out", "write")
    staging = Path(store.hand_over("c", "p", ref, write=True))
    (staging / "deep" / "er").mkdir(parents=True)
    (staging / "deep" / "er" / "x.txt").write_text("1")
    store.commit("c", "p")
    assert store.hand_over("c", "p", ref, write=True) == str(staging)
    (staging / "later.txt").write_text("2")
    (staging / "deep" / "er" / "x.txt").write_text("changed")
    store.commit("c", "p")
    assert file_texts(shared / "out") == {"deep/er/x.txt": "changed", "later.txt": "2"}


def test_a_hard_link_in_the_granted_folder_is_replaced_not_written_through(
    store: GrantStore, shared: Path, outside: Path
) -> None:
    os.link(outside / "secret.md", shared / "out" / "report.txt")
    ref = store.attach("c", "p", shared / "out", "read-write")
    staging = Path(store.hand_over("c", "p", ref, write=True))
    (staging / "report.txt").write_text("new report")
    store.commit("c", "p")
    assert (outside / "secret.md").read_text() == SECRET
    assert (shared / "out" / "report.txt").read_text() == "new report"


@pytest.mark.parametrize("where", ["folder", "parent", "entry"])
def test_a_granted_folder_swapped_for_a_link_before_the_commit_gets_nothing(
    store: GrantStore, shared: Path, outside: Path, where: str
) -> None:
    (shared / "deep" / "out").mkdir(parents=True)
    ref = store.attach("c", "p", shared / "deep" / "out", "read-write")
    staging = Path(store.hand_over("c", "p", ref, write=True))
    (staging / "sub").mkdir()
    (staging / "sub" / "r.txt").write_text("result")
    swapped = {
        "folder": shared / "deep" / "out",
        "parent": shared / "deep",
        "entry": shared / "deep" / "out" / "sub",
    }[where]
    if where != "entry":
        swapped.rename(swapped.with_name(swapped.name + "-old"))
    swapped.symlink_to(outside, target_is_directory=True)
    with pytest.raises(FileRefError):
        store.commit("c", "p")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]


def test_copies_are_removed_when_forgotten_and_when_the_store_closes(
    shared: Path, tmp_path: Path
) -> None:
    store = GrantStore([shared], tmp_path / "data")
    kept = store.attach("keep", "p", shared / "docs" / "a.md", "read")
    gone = store.attach("gone", "p", shared / "docs" / "a.md", "read")
    assert Path(store.hand_over("keep", "p", kept)).exists()
    gone_copy = Path(store.hand_over("gone", "p", gone))
    assert gone_copy.exists()
    store.forget("gone")
    assert not gone_copy.exists()
    assert Path(store.copy_path("p", kept)).exists()
    store.close()
    assert list((tmp_path / "data").iterdir()) == []


async def test_a_host_removes_copies_a_previous_run_left(
    shared: Path, tmp_path: Path, make_host: MakeHost
) -> None:
    left = tmp_path / "host" / "plugin-data" / "some.plugin" / "filerefs" / "ref_x" / "read"
    left.mkdir(parents=True)
    (left / "a.md").write_text("stale")
    make_host(allowed_roots=(shared,))  # data_dir: tmp_path / "host"
    assert not left.parent.parent.exists()
    assert (tmp_path / "host" / "plugin-data" / "some.plugin").is_dir()


def test_a_file_grant_in_a_folder_parameter_is_refused(store: GrantStore, shared: Path) -> None:
    ref = store.attach("c", "p", shared / "docs" / "a.md", "read-write")
    with pytest.raises(FileRefError, match="is a file; this parameter takes a folder"):
        store.prepare("c", "p", {"out": ref}, {"out": FileClass.WRITE_DIRECTORY})


def test_a_hard_link_to_an_outside_file_is_never_copied(
    store: GrantStore, shared: Path, outside: Path
) -> None:
    """A hard link reads as the outside file it is: refused at attach, refused when swapped
    in after the grant, and left out of a folder copy, like a symlink."""
    docs = shared / "docs"
    os.link(outside / "secret.md", docs / "linked.md")
    with pytest.raises(FileRefError, match="has other hard links"):
        store.attach("c", "p", docs / "linked.md", "read")
    ref = store.attach("c", "p", docs / "a.md", "read")
    folder = store.attach("c", "p", docs, "read")
    assert SECRET not in str(file_texts(Path(store.hand_over("c", "p", folder))))
    os.replace(docs / "linked.md", docs / "a.md")
    with pytest.raises(FileRefError, match="now points elsewhere"):
        store.hand_over("c", "p", ref)
    copies = Path(store.copy_path("p", ref)).parent
    assert SECRET not in str(file_texts(copies))


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> int:
    """A 1 MiB copy limit, so a file over it is cheap to make (sparse) and to refuse."""
    monkeypatch.setattr(grant_copies, "MAX_BYTES", 1024**2)
    return 1024**2


def sparse(path: Path, size: int) -> None:
    with path.open("wb") as file:
        file.truncate(size)


def largest_file(folder: Path) -> int:
    return max((p.stat().st_size for p in folder.rglob("*") if p.is_file()), default=0)


def test_a_granted_file_swapped_for_a_huge_one_is_refused_not_copied(
    store: GrantStore, shared: Path, small_limit: int
) -> None:
    """A single file grant is bounded as a folder's files are: a 10 GiB sparse file costs
    nothing to make and filled the plugin's data folder with 10 GiB of copy."""
    ref = store.attach("c", "p", shared / "docs" / "a.md", "read")
    assert Path(store.hand_over("c", "p", ref)).read_text() == "# a\n"
    sparse(shared / "huge", 8 * small_limit)
    os.replace(shared / "huge", shared / "docs" / "a.md")
    with pytest.raises(FileRefError, match=r"a\.md is larger than the host copies"):
        store.hand_over("c", "p", ref)
    assert largest_file(Path(store.copy_path("p", ref)).parent) <= small_limit


def test_a_granted_file_swapped_for_a_fifo_is_refused_without_blocking(
    store: GrantStore, shared: Path
) -> None:
    ref = store.attach("c", "p", shared / "docs" / "a.md", "read")
    os.mkfifo(shared / "pipe")
    os.replace(shared / "pipe", shared / "docs" / "a.md")
    outcome: list[BaseException] = []

    def hand_over() -> None:
        try:
            store.hand_over("c", "p", ref)
        except FileRefError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=hand_over, daemon=True)
    worker.start()
    worker.join(timeout=30)  # a hang guard: a blocking open would wait for a writer
    if worker.is_alive():
        with (shared / "docs" / "a.md").open("wb"):
            pass  # unblock it, so the thread ends
        worker.join(timeout=30)
        pytest.fail("handing over a FIFO waited for a writer")
    assert outcome and "now points elsewhere" in str(outcome[0])


def test_output_grown_after_the_commit_checked_it_is_cut_off(
    store: GrantStore, shared: Path, small_limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit checks the staging tree, then copies it; a worker still writing (or one
    swapping a file for a bigger one in between) must not get past the limit by timing."""
    ref = store.attach("c", "p", shared / "out", "write")
    staging = Path(store.hand_over("c", "p", ref, write=True))
    (staging / "r.txt").write_text("small")
    walk = grant_copies._walk

    def walk_then_grow(*args: object) -> Iterator[object]:
        yield from walk(*args)  # type: ignore[arg-type]
        sparse(staging / "big", 8 * small_limit)
        os.replace(staging / "big", staging / "r.txt")

    monkeypatch.setattr(grant_copies, "_walk", walk_then_grow)
    with pytest.raises(FileRefError, match="larger than the host copies"):
        store.commit("c", "p")
    assert largest_file(shared / "out") <= small_limit
