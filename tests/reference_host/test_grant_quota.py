"""Read copies of grants are bounded per host, in count and bytes (spec:
host.md#fileref-grants): before, 60 conversations granting a 20 MB file made 1.2 GB of
copies in 5 s. An attach past the limit is a 409 naming the limit and the use; a copy past
it is refused and leaves nothing half-made; a revoke gives its room back. Small limits here.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from plugin_spec.filerefs import FileRefError
from reference_host.__main__ import build_parser
from reference_host.agent.models import ModelTurn, ScriptedModel
from reference_host.grants.grant_store import GrantStore
from reference_host.grants.quota import CopyLimits, QuotaError
from reference_host.http.app import create_app
from tests.conftest import REPO, MakeHost
from tests.reference_host.served_cli import STARTED, api_headers

KB = 1000


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    root = tmp_path / "shared"
    (root / "docs").mkdir(parents=True)
    (root / "out").mkdir()
    for name in ("a", "b", "c"):
        (root / f"{name}.bin").write_bytes(b"x" * (4 * KB))
    return root


@pytest.fixture
def store(shared: Path, tmp_path: Path) -> Iterator[GrantStore]:
    grants = GrantStore([shared], tmp_path / "grants", CopyLimits(copies=2, total_bytes=10 * KB))
    yield grants
    grants.close()


def on_disk(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_an_attach_past_the_copy_count_is_refused_until_one_is_revoked(
    store: GrantStore, shared: Path
) -> None:
    first = store.attach("c1", "p", shared / "a.bin", "read")
    store.attach("c2", "p", shared / "b.bin", "read")
    with pytest.raises(QuotaError, match=r"2 of 2 copies and 7\.8 KiB of 9\.8 KiB in use"):
        store.attach("c3", "p", shared / "c.bin", "read")
    # a writable folder is staged, never copied: it takes no slot
    store.attach("c3", "p", shared / "out", "write")
    assert store.revoke("c1", first["id"])
    store.attach("c3", "p", shared / "c.bin", "read")
    assert store.quota.usage() == (2, 8 * KB)


def test_an_attach_past_the_bytes_is_refused_naming_what_it_needs(
    shared: Path, tmp_path: Path
) -> None:
    store = GrantStore([shared], tmp_path / "g", CopyLimits(copies=10, total_bytes=10 * KB))
    try:
        store.attach("c1", "p", shared / "a.bin", "read")
        store.attach("c1", "p", shared / "b.bin", "read")
        with pytest.raises(
            QuotaError,
            match=r"c\.bin needs 3\.9 KiB, more than the host's read copies have room for: "
            r"2 of 10 copies and 7\.8 KiB of 9\.8 KiB in use; revoke a grant",
        ):
            store.attach("c1", "p", shared / "c.bin", "read")
        assert store.grants("c1") and len(store.grants("c1")) == 2
    finally:
        store.close()


def test_a_folder_copy_past_the_quota_is_refused_and_leaves_nothing(
    store: GrantStore, shared: Path, tmp_path: Path
) -> None:
    """A folder's size is known only when it is copied: the copy draws as it writes."""
    for index in range(3):
        (shared / "docs" / f"{index}.bin").write_bytes(b"y" * (4 * KB))
    ref = store.attach("c1", "p", shared / "docs", "read")
    with pytest.raises(
        QuotaError, match=r"docs needs 3\.9 KiB, .*: 1 of 2 copies and 7\.8 KiB of 9\.8 KiB in use"
    ):
        store.hand_over("c1", "p", ref)
    assert on_disk(tmp_path / "grants") == []
    assert store.quota.usage() == (1, 0)
    (shared / "docs" / "2.bin").unlink()
    assert on_disk(Path(store.hand_over("c1", "p", ref))) == ["0.bin", "1.bin"]
    assert store.quota.usage() == (1, 8 * KB)


def test_a_file_grown_past_the_quota_keeps_its_old_copy_and_its_old_use(
    store: GrantStore, shared: Path
) -> None:
    ref = store.attach("c1", "p", shared / "a.bin", "read")
    copy = Path(store.hand_over("c1", "p", ref))
    (shared / "big.bin").write_bytes(b"z" * (20 * KB))
    (shared / "big.bin").replace(shared / "a.bin")
    with pytest.raises(QuotaError, match=r"a\.bin needs 19\.5 KiB, more than"):
        store.hand_over("c1", "p", ref)
    assert on_disk(copy.parent) == ["a.bin"] and copy.read_bytes() == b"x" * (4 * KB)
    assert store.quota.usage() == (1, 4 * KB)


def test_a_read_copy_of_a_writable_folder_takes_a_slot_when_it_is_made(
    store: GrantStore, shared: Path
) -> None:
    store.attach("c1", "p", shared / "a.bin", "read")
    store.attach("c1", "p", shared / "b.bin", "read")
    folder = store.attach("c1", "p", shared / "docs", "read-write")
    with pytest.raises(QuotaError, match="2 of 2 copies"):
        store.hand_over("c1", "p", folder)  # a read parameter: it would be copied
    assert store.hand_over("c1", "p", folder, write=True)  # staging: no copy, no slot


def test_the_per_copy_limit_is_the_hosts_setting(shared: Path, tmp_path: Path) -> None:
    store = GrantStore([shared], tmp_path / "g", CopyLimits(copy_bytes=3 * KB))
    try:
        ref = store.attach("c1", "p", shared / "a.bin", "read")
        with pytest.raises(FileRefError, match=r"a\.bin is larger than the host copies"):
            store.hand_over("c1", "p", ref)
    finally:
        store.close()


@pytest.fixture
async def client(make_host: MakeHost, shared: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The HTTP API of a host whose read copies are limited to 1, and a plugin to grant to."""
    host = make_host(allowed_roots=(shared,), max_read_copies=1, max_read_copy_bytes=10 * KB)
    await host.install(REPO / "sample_plugins" / "fan.summer.markdown")
    app = create_app(host, lambda: ScriptedModel([ModelTurn(text="hi")]))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765"
    ) as api:
        yield api


def body(path: Path, access: str = "read") -> dict[str, str]:
    return {"pluginId": "fan.summer.markdown", "path": str(path), "access": access}


async def test_over_http_an_attach_past_the_limit_is_a_409_with_the_limit_and_the_use(
    client: httpx.AsyncClient, shared: Path
) -> None:
    url = "/api/conversations/c1/grants"
    first = await client.post(url, json=body(shared / "a.bin"))
    assert first.status_code == 201
    refused = await client.post("/api/conversations/c2/grants", json=body(shared / "b.bin"))
    assert refused.status_code == 409
    assert refused.json()["error"] == (
        f"granting {shared / 'b.bin'}: the host's read copies are at their limit: 1 of 1 "
        "copies and 3.9 KiB of 9.8 KiB in use; revoke a grant to make room"
    )
    assert (await client.get("/api/conversations/c2/grants")).json() == []
    revoked = await client.delete(f"{url}/{first.json()['id']}")
    assert revoked.status_code == 204
    assert (await client.post(url, json=body(shared / "b.bin"))).status_code == 201


def test_the_limits_are_command_line_options_with_documented_defaults() -> None:
    args = build_parser().parse_args(["serve"])
    assert (args.max_read_copies, args.max_read_copy_bytes, args.max_copy_bytes) == (
        200,
        2 * 1024**3,
        1024**3,
    )
    for flag in ("--max-read-copies", "--max-read-copy-bytes", "--max-copy-bytes"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["serve", flag, "0"])


def test_the_served_host_applies_max_read_copies(tmp_path: Path, shared: Path) -> None:
    command = [sys.executable, "-m", "reference_host", "serve", "--port", "0"]
    command += ["--data-dir", str(tmp_path / "data"), "--allow-root", str(shared)]
    command += ["--plugins", str(REPO / "sample_plugins" / "fan.summer.markdown")]
    command += ["--max-read-copies", "1", "--log-level", "warning"]
    server = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        while line.startswith("installed "):
            line = server.stdout.readline()
        found = STARTED.match(line)
        assert found, line
        url = found.group(1) + "api/conversations/c1/grants"
        headers = api_headers(tmp_path / "data")
        granted = httpx.post(url, json=body(shared / "a.bin"), headers=headers, timeout=10)
        assert granted.status_code == 201
        refused = httpx.post(url, json=body(shared / "b.bin"), headers=headers, timeout=10)
        assert refused.status_code == 409 and "1 of 1 copies" in refused.json()["error"]
    finally:
        server.terminate()
        server.wait(timeout=30)
