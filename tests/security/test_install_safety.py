"""What installing a hostile plugin folder can do to the host (found while fuzzing).

A bug found here and not yet fixed is pinned as a strict xfail: the assertion is what the
host should do; the reason names the cause. Each comes with a control test that passes
today, so the xfail fails for the stated reason and not for a broken setup.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

import reference_host.plugins.lifecycle
from conformance.install_validation import kit_validator
from reference_host.agent.models import ModelTurn, ScriptedModel
from reference_host.host import Host
from reference_host.http.app import create_app
from reference_host.plugins.lifecycle import PluginError
from tests.conftest import MakeHost
from tests.security.conftest import (
    EXCEL,
    MARKDOWN,
    SAMPLES,
    SEC_PLUGIN,
    copy_sample,
    erp_tool,
    run_chat,
    write_erp_plugin,
)


@pytest.fixture
def host(tmp_path: Path, make_host: MakeHost) -> Host:
    (tmp_path / "files").mkdir()
    return make_host(
        data_dir=tmp_path / "data" / "host",
        allowed_roots=(tmp_path / "files",),
        validator=kit_validator,
    )


def inside(path: Path | str, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def everything_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


# --------------------------------------------------------------------------- traversal


async def test_a_plain_install_stays_in_the_plugins_folder(host: Host, tmp_path: Path) -> None:
    info = await host.install(copy_sample(MARKDOWN, tmp_path))
    assert inside(info.root, host.config.data_dir / "plugins")


async def test_a_version_cannot_move_the_install_folder(host: Host, tmp_path: Path) -> None:
    source = copy_sample(MARKDOWN, tmp_path)
    manifest = json.loads((source / "manifest.json").read_text())
    manifest["version"] = "1.0.0-x/../../../../../escaped"
    (source / "manifest.json").write_text(json.dumps(manifest))
    before = everything_under(tmp_path)
    try:
        info = await host.install(source)
    except PluginError:
        return  # refused: fine
    finally:
        written = everything_under(tmp_path) - before
        assert all(inside(p, host.config.data_dir) for p in written), sorted(written)[:3]
    assert inside(info.root, host.config.data_dir / "plugins")


@pytest.mark.parametrize("code", ["../../../escaped", "/ABSOLUTE"])
async def test_an_application_code_cannot_move_the_install_folder(
    host: Host, tmp_path: Path, code: str
) -> None:
    code = code.replace("/ABSOLUTE", str(tmp_path / "absolute"))
    root = write_erp_plugin(
        tmp_path / "plugin", erp_tool(f"{SEC_PLUGIN}.item.get", "/api/v1/plugins/x/items")
    )
    tool_file = root / "metadata" / "tool" / f"{SEC_PLUGIN}.item.get.json"
    tool_file.write_text(json.dumps({**json.loads(tool_file.read_text()), "applicationCode": code}))
    before = everything_under(tmp_path)
    try:
        await host.install(root)
    except PluginError:
        return  # refused: fine
    finally:
        written = everything_under(tmp_path) - before
        assert all(inside(p, host.config.data_dir) for p in written), sorted(written)[:3]


# --------------------------------------------------------------------------- copying


async def test_a_symlink_even_to_a_file_inside_the_plugin_is_refused(
    host: Host, tmp_path: Path
) -> None:
    """The copy never follows a link (issue 10, item 2), so a plugin folder holds none."""
    source = copy_sample(MARKDOWN, tmp_path)
    (source / "ui" / "alias.html").symlink_to(source / "ui" / "index.html")
    with pytest.raises(PluginError, match=r"ui/alias\.html is a symbolic link"):
        await host.install(source)
    assert list((host.config.data_dir / "plugins").iterdir()) == []


async def test_a_hard_link_to_a_file_outside_the_plugin_is_refused(
    host: Host, tmp_path: Path
) -> None:
    """A hard link is the outside file under a name inside the folder: copying it would
    bring the outside content in, as a followed symlink did (issue 10, item 2)."""
    source = copy_sample(MARKDOWN, tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    os.link(secret, source / "ui" / "secret.html")
    with pytest.raises(PluginError, match=r"ui/secret\.html has other hard links"):
        await host.install(source)
    assert list((host.config.data_dir / "plugins").iterdir()) == []


async def test_a_symlink_loop_is_refused_cleanly(host: Host, tmp_path: Path) -> None:
    source = copy_sample(MARKDOWN, tmp_path)
    os.symlink(".", source / "loop")
    with pytest.raises(PluginError):
        await host.install(source)
    assert list((host.config.data_dir / "plugins").iterdir()) == []


# --------------------------------------------------------------------------- one bad plugin


HELLO_PATH = "/api/v1/plugins/hello-plugin/greeting"
UNUSABLE_PATHS = {
    "empty-placeholder": (f"{HELLO_PATH}/{{}}", ()),
    "unbalanced-brace": (f"{HELLO_PATH}/{{id", ()),
    "stray-closing-brace": (f"{HELLO_PATH}/id}}", ()),
    "repeated-placeholder": (f"{HELLO_PATH}/{{id}}/{{id}}", ("id",)),
    "doubled-braces": (f"{HELLO_PATH}/{{{{id}}}}", ("id",)),
}


async def test_a_valid_erp_plugin_leaves_chats_working(host: Host, tmp_path: Path) -> None:
    await host.install(copy_sample(SAMPLES / "hello-plugin", tmp_path))
    await host.install(copy_sample(MARKDOWN, tmp_path))
    events = await run_chat(host, ModelTurn(text="hi"))
    assert events[-1].type == "done"


@pytest.mark.parametrize(("path", "params"), UNUSABLE_PATHS.values(), ids=UNUSABLE_PATHS.keys())
async def test_one_unusable_tool_file_cannot_take_the_host_down(
    host: Host, tmp_path: Path, path: str, params: tuple[str, ...]
) -> None:
    await host.install(copy_sample(MARKDOWN, tmp_path))
    tool = erp_tool(f"{SEC_PLUGIN}.item.get", path, path_params=params)
    try:
        await host.install(write_erp_plugin(tmp_path / "bad", tool))
    except PluginError:
        return  # refused at install: fine
    events = await run_chat(host, ModelTurn(text="hi"))
    assert events[-1].type == "done", events[-1]
    app = create_app(host, lambda: ScriptedModel([ModelTurn(text="ok")]))
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        tools = await client.get("/api/tools")
        found = await client.get(
            "/api/v1/agents/metadata/tools", headers={"X-Tenant-Id": "t", "X-Actor": "a"}
        )
    assert (tools.status_code, found.status_code) == (200, 200)
    assert "markdown_render" in [t["name"] for t in tools.json()]


@pytest.mark.parametrize(("path", "params"), UNUSABLE_PATHS.values(), ids=UNUSABLE_PATHS.keys())
async def test_without_the_kit_an_unusable_tool_file_is_refused_at_install(
    tmp_path: Path, path: str, params: tuple[str, ...], make_host: MakeHost
) -> None:
    """A host that installs without the kit's validation still never stores a plugin whose
    tools it cannot build: that would fail every later snapshot and discovery."""
    host = make_host(data_dir=tmp_path / "data", validator=None)
    await host.install(copy_sample(MARKDOWN, tmp_path))
    tool = erp_tool(f"{SEC_PLUGIN}.item.get", path, path_params=params)
    with pytest.raises(PluginError, match=r"its tools cannot be loaded: .*handlerConfig"):
        await host.install(write_erp_plugin(tmp_path / "bad", tool))
    assert [row.id for row in host.plugins.list()] == ["fan.summer.markdown"]
    assert host.discover("t", "a") == []
    events = await run_chat(host, ModelTurn(text="hi"))
    assert events[-1].type == "done", events[-1]


# --------------------------------------------------------------------------- unusable paths


@pytest.fixture
async def api(host: Host, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    await host.install(copy_sample(MARKDOWN, tmp_path))
    app = create_app(host, lambda: ScriptedModel([]))
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


def as_json(body: dict) -> dict:
    """The body as JSON text with \\u escapes (a lone surrogate cannot be UTF-8 encoded)."""
    return {"content": json.dumps(body), "headers": {"Content-Type": "application/json"}}


async def test_odd_but_encodable_paths_are_a_400(api: httpx.AsyncClient, tmp_path: Path) -> None:
    """The controls: a missing path, and one with a lone surrogate (os accepts it)."""
    for name in ("nope", "\ud800.md"):
        body = {
            "pluginId": "fan.summer.markdown",
            "path": f"{tmp_path}/files/{name}",
            "access": "read",
        }
        response = await api.post("/api/conversations/c/grants", **as_json(body))
        assert response.status_code == 400
        response = await api.post("/api/plugins", **as_json({"path": f"{tmp_path}/{name}"}))
        assert response.status_code == 400


async def test_a_missing_path_is_a_400(api: httpx.AsyncClient, tmp_path: Path) -> None:
    body = {
        "pluginId": "fan.summer.markdown",
        "path": str(tmp_path / "files/nope"),
        "access": "read",
    }
    assert (await api.post("/api/conversations/c/grants", json=body)).status_code == 400
    assert (
        await api.post("/api/plugins", json={"path": str(tmp_path / "nope")})
    ).status_code == 400


async def test_a_grant_path_with_a_nul_byte_is_a_400(
    api: httpx.AsyncClient, tmp_path: Path
) -> None:
    body = {
        "pluginId": "fan.summer.markdown",
        "path": f"{tmp_path}/files/doc\x00.md",
        "access": "read",
    }
    response = await api.post("/api/conversations/c/grants", **as_json(body))
    assert response.status_code == 400, response.text


async def test_an_install_path_with_a_nul_byte_is_a_400(
    api: httpx.AsyncClient, tmp_path: Path
) -> None:
    response = await api.post("/api/plugins", **as_json({"path": f"{tmp_path}/plugin\x00"}))
    assert response.status_code == 400, response.text


# --------------------------------------------------------------------------- without the kit


@pytest.fixture
def bare_host(tmp_path: Path, make_host: MakeHost) -> Host:
    """A host installing without the kit's validation: its own reading must hold up."""
    return make_host(data_dir=tmp_path / "bare", validator=None)


def unblock_after(fifo: Path, seconds: float) -> threading.Timer:
    """Should a regression open the FIFO for reading, a writer arrives and the test fails
    instead of hanging."""

    def write() -> None:
        with contextlib.suppress(OSError), open(fifo, "wb"):
            pass

    timer = threading.Timer(seconds, write)
    timer.daemon = True
    timer.start()
    return timer


async def test_a_fifo_manifest_is_refused_not_waited_on(bare_host: Host, tmp_path: Path) -> None:
    source = copy_sample(MARKDOWN, tmp_path)
    (source / "manifest.json").unlink()
    os.mkfifo(source / "manifest.json")
    timer = unblock_after(source / "manifest.json", 10)
    try:
        with pytest.raises(PluginError, match=r"manifest\.json is not a regular file"):
            await bare_host.install(source)
    finally:
        timer.cancel()
    assert bare_host.plugins.list() == []


async def test_a_deeply_nested_manifest_is_a_clear_error(bare_host: Host, tmp_path: Path) -> None:
    source = copy_sample(MARKDOWN, tmp_path)
    (source / "manifest.json").write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    with pytest.raises(PluginError, match=r"manifest\.json: maximum recursion depth"):
        await bare_host.install(source)


async def test_a_manifest_with_a_bom_installs_as_the_kit_reads_it(
    bare_host: Host, tmp_path: Path
) -> None:
    source = copy_sample(MARKDOWN, tmp_path)
    manifest = source / "manifest.json"
    manifest.write_bytes(b"\xef\xbb\xbf" + manifest.read_bytes())
    info = await bare_host.install(source)
    assert info.id == "fan.summer.markdown"


# --------------------------------------------------------------------------- copy races

SECRET = b"TOP-SECRET outside every plugin folder"
RACE_ROUNDS = 20
RACE_FILES = 1500


class LinkPlanter(threading.Thread):
    """Once the host's staging copy has begun, renames links to an outside file over the
    plugin's files, last files first (those the copy reaches last). Stops by itself."""

    def __init__(self, plugins_dir: Path, files: list[Path], secret: Path) -> None:
        super().__init__(daemon=True)
        self.plugins_dir, self.files, self.secret = plugins_dir, files, secret
        self.planted = 0

    def run(self) -> None:
        deadline = time.monotonic() + 30
        while not any(self.plugins_dir.glob(".staging-*")):
            if time.monotonic() > deadline:
                return
            time.sleep(0.0005)
        for path in reversed(self.files):
            scratch = path.with_name(f".{path.name}.link")
            scratch.symlink_to(self.secret)
            os.replace(scratch, path)
            self.planted += 1


async def test_links_planted_during_the_install_copy_never_bring_outside_content_in(
    bare_host: Host, tmp_path: Path
) -> None:
    """Without the kit (its checks would only slow the race down): links planted after every
    check, while the staging copy runs, must refuse the install, never be copied as their
    targets; a refused install stores nothing."""
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_bytes(SECRET)
    plugins_dir = bare_host.config.data_dir / "plugins"
    escapes = refused = planted = 0
    for round_ in range(RACE_ROUNDS):
        source = copy_sample(MARKDOWN, tmp_path / f"round-{round_}")
        assets = source / "ui" / "assets"
        assets.mkdir()
        files = []
        for index in range(RACE_FILES):
            (assets / f"a{index:04}.txt").write_bytes(b"plain asset")
            files.append(assets / f"a{index:04}.txt")
        planter = LinkPlanter(plugins_dir, files, secret)
        planter.start()
        try:
            info = await bare_host.install(source)
        except PluginError as exc:
            assert "link" in exc.message or "replaced" in exc.message, exc.message
            refused += 1
            assert bare_host.plugins.list() == []
            assert list(plugins_dir.iterdir()) == [], list(plugins_dir.iterdir())
        else:
            installed = Path(info.root)
            escapes += any(p.is_file() and SECRET in p.read_bytes() for p in installed.rglob("*"))
            assert not any(p.is_symlink() for p in installed.rglob("*"))
            await bare_host.uninstall(info.id)
        finally:
            planter.join(timeout=60)
            assert not planter.is_alive()
        planted += planter.planted
    print(f"\n{escapes} of {RACE_ROUNDS} installs copied the outside file; {refused} refused")
    assert planted > 0, "the race did not run"
    assert escapes == 0


async def test_a_fifo_inside_the_plugin_is_refused_naming_it(
    bare_host: Host, tmp_path: Path
) -> None:
    source = copy_sample(MARKDOWN, tmp_path)
    os.mkfifo(source / "ui" / "pipe")
    timer = unblock_after(source / "ui" / "pipe", 10)
    try:
        with pytest.raises(PluginError, match=r"ui/pipe is not a folder or a regular file"):
            await bare_host.install(source)
    finally:
        timer.cancel()
    assert list((bare_host.config.data_dir / "plugins").iterdir()) == []


async def test_the_copy_keeps_modes_so_the_worker_stays_executable(
    bare_host: Host, tmp_path: Path
) -> None:
    """The excel sample keeps FengYu's legacy launch (an executable backend/worker, no
    runtime): nothing but the kept mode makes its installed copy startable."""
    source = copy_sample(EXCEL, tmp_path)
    assert os.access(source / "backend" / "worker", os.X_OK)
    info = await bare_host.install(source)
    assert os.access(Path(info.root) / "backend" / "worker", os.X_OK)
    events = await run_chat(bare_host, ModelTurn(text="hi"))
    assert events[-1].type == "done"


async def test_a_manifest_changed_during_the_copy_is_refused(
    bare_host: Host, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What gets committed is what was checked: the staged manifest must be the one read."""
    copy = reference_host.plugins.lifecycle.copy_plain_tree

    def copy_then_change(source: Path, target: Path) -> None:
        copy(source, target)
        manifest = json.loads((target / "manifest.json").read_text())
        (target / "manifest.json").write_text(json.dumps({**manifest, "version": "6.6.6"}))

    monkeypatch.setattr(reference_host.plugins.lifecycle, "copy_plain_tree", copy_then_change)
    with pytest.raises(PluginError, match="its manifest changed while it was copied"):
        await bare_host.install(copy_sample(MARKDOWN, tmp_path))
    assert list((bare_host.config.data_dir / "plugins").iterdir()) == []
    assert bare_host.plugins.list() == []
