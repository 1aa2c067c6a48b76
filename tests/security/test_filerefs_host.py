"""FileRef attacks through the real Host and a real worker (spec: host.md#fileref-grants).

The markdown sample's `markdown_outline` takes `filePath` (a read-file parameter) and its
worker really opens the path it is given; the Excel sample's `excel_execute` takes
`outputDir` (a write-directory parameter). Every test records what the process manager
dispatched to workers and asserts that the forbidden path never went out, and that the model
got the failure envelope instead.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_spec.filerefs import FileClass
from reference_host.agent.models import ModelTurn, ScriptedModel
from reference_host.grants.grant_store import GrantStore
from reference_host.host import Host
from reference_host.http.app import create_app
from tests.conftest import MakeHost
from tests.security.conftest import (
    EXCEL,
    MARKDOWN,
    Dispatched,
    copy_sample,
    results,
    run_chat,
    the_failure,
    turn,
    watched_host,
)

MD = "fan.summer.markdown"
XL = "fan.summer.excel"


@dataclass
class Setup:
    host: Host
    files: Path  # the only allowed root
    outside: Path  # a folder the host may not share
    doc: Path  # files/doc.md
    secret: Path  # outside/secret.md
    sent: Dispatched

    def grant(self, path: Path, conversation: str = "c1", plugin: str = MD, access: str = "read"):
        return self.host.grants.attach(conversation, plugin, path, access)

    def copy(self, ref: dict[str, Any], plugin: str = MD) -> str:
        """The path a worker gets for a read grant: the host's copy in its grants folder,
        never in the plugin's data folder (spec: host.md#fileref-grants)."""
        path = self.host.grants.copy_path(plugin, ref)
        assert Path(path).is_relative_to(self.host.config.data_dir / "grants")
        assert not Path(path).is_relative_to(self.host.plugin_data(plugin))
        return path


@pytest.fixture
async def setup(tmp_path: Path, make_host: MakeHost) -> Setup:
    files = tmp_path / "files"
    outside = tmp_path / "outside"
    (files / "out").mkdir(parents=True)
    outside.mkdir()
    doc = files / "doc.md"
    doc.write_text("# Public\n", "utf-8")
    secret = outside / "secret.md"
    secret.write_text("# TOP-SECRET\n", "utf-8")
    host, sent = watched_host(make_host, files)
    await host.install(copy_sample(MARKDOWN, tmp_path))
    await host.install(copy_sample(EXCEL, tmp_path))
    return Setup(host, files, outside, doc, secret, sent)


def outline(arguments: Any) -> ModelTurn:
    return turn("markdown_outline", arguments)


def assert_clean(setup: Setup) -> None:
    """Nothing outside the allowed root, and nothing secret, ever reached a worker."""
    setup.sent.assert_never_sent(str(setup.outside), "secret")


# --------------------------------------------------------------------------- the baseline


async def test_a_granted_ref_reaches_the_worker(setup: Setup) -> None:
    """The positive case, so that "never sent" below is not vacuous."""
    ref = setup.grant(setup.doc)
    events = await run_chat(setup.host, outline({"filePath": ref}))
    (output,) = results(events)
    assert output["success"] is True and output["headings"] == [{"level": 1, "text": "Public"}]
    assert setup.sent.calls == [(MD, "outline", {"filePath": setup.copy(ref)})]


# --------------------------------------------------------------------------- attach


@pytest.fixture
async def api(setup: Setup) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(setup.host, lambda: ScriptedModel([]))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


@pytest.mark.parametrize(
    "where",
    [
        "files/../outside/secret.md",
        "files/./../outside/secret.md",
        "files/out/../../outside/secret.md",
        "outside/secret.md",
        "outside",
        "files/..",
        "files-sibling/secret.md",  # a folder whose name starts with the root's name
        "/etc/passwd",
        "/",
        "secret.md",  # relative: resolved against the host's working folder, not the root
    ],
)
async def test_attach_outside_the_allowed_root_is_refused_over_http(
    setup: Setup, api: httpx.AsyncClient, tmp_path: Path, where: str
) -> None:
    sibling = tmp_path / "files-sibling"
    sibling.mkdir(exist_ok=True)
    (sibling / "secret.md").write_text("# TOP-SECRET\n")
    path = where if where.startswith("/") or where == "secret.md" else str(tmp_path / where)
    body = {"pluginId": MD, "path": path, "access": "read"}
    response = await api.post("/api/conversations/c1/grants", json=body)
    assert response.status_code == 400, response.text
    assert (await api.get("/api/conversations/c1/grants")).json() == []
    assert setup.host.grants.system_prompt("c1") == ""


async def test_symlink_out_of_the_root_cannot_be_attached(setup: Setup) -> None:
    (setup.files / "link.md").symlink_to(setup.secret)
    (setup.files / "linkdir").symlink_to(setup.outside, target_is_directory=True)
    (setup.files / "chain.md").symlink_to(setup.files / "link.md")
    for path in ("link.md", "linkdir", "linkdir/secret.md", "chain.md"):
        with pytest.raises(Exception, match="outside the folders"):
            setup.grant(setup.files / path)
    assert setup.host.grants.grants("c1") == []


async def test_symlink_inside_the_root_grants_its_target(setup: Setup) -> None:
    """A link that stays inside the root is fine; the grant is the target's real path."""
    (setup.files / "alias.md").symlink_to(setup.doc)
    ref = setup.grant(setup.files / "alias.md")
    assert ref["name"] == "doc.md"
    (output,) = results(await run_chat(setup.host, outline({"filePath": ref})))
    assert output["headings"] == [{"level": 1, "text": "Public"}]
    assert setup.sent.calls == [(MD, "outline", {"filePath": setup.copy(ref)})]


# --------------------------------------------------------------------------- swapped links


@pytest.mark.parametrize("route", ["A", "B"])
async def test_file_swapped_for_a_symlink_after_the_grant(setup: Setup, route: str) -> None:
    ref = setup.grant(setup.doc)
    setup.doc.unlink()
    setup.doc.symlink_to(setup.secret)
    arguments = {"filePath": ref} if route == "A" else {"filePath": "anything"}
    error = the_failure(await run_chat(setup.host, outline(arguments)))
    assert error == f"FileRef {ref['id']}: {setup.files.resolve() / 'doc.md'} now points elsewhere"
    assert setup.sent.calls == []


async def test_parent_folder_swapped_for_a_symlink_after_the_grant(setup: Setup) -> None:
    folder = setup.files / "docs"
    folder.mkdir()
    (folder / "secret.md").write_text("# mine\n")
    ref = setup.grant(folder / "secret.md")
    folder.rename(setup.files / "docs-old")
    folder.symlink_to(setup.outside, target_is_directory=True)  # outside/secret.md exists
    assert "now points elsewhere" in the_failure(
        await run_chat(setup.host, outline({"filePath": ref}))
    )
    assert setup.sent.calls == []


async def test_granted_file_deleted_is_gone(setup: Setup) -> None:
    ref = setup.grant(setup.doc)
    setup.doc.unlink()
    assert "is gone" in the_failure(await run_chat(setup.host, outline({"filePath": ref})))
    assert setup.sent.calls == []


# --------------------------------------------------------------------------- foreign refs


async def test_ref_of_another_plugin_is_refused(setup: Setup) -> None:
    secret_in_root = setup.files / "excel-only.md"
    secret_in_root.write_text("# for excel only\n")
    foreign = setup.grant(secret_in_root, plugin=XL)
    error = the_failure(await run_chat(setup.host, outline({"filePath": foreign})))
    assert error == f"FileRef {foreign['id']} is not granted to plugin {MD}"
    setup.sent.assert_never_sent(str(secret_in_root.resolve()))
    assert setup.sent.calls == []


async def test_ref_of_another_conversation_is_refused(setup: Setup) -> None:
    foreign = setup.grant(setup.doc, conversation="someone-else")
    error = the_failure(await run_chat(setup.host, outline({"filePath": foreign})))
    assert error == f"FileRef {foreign['id']} is not granted in this conversation"
    assert setup.sent.calls == []


async def test_route_b_never_injects_a_grant_of_another_plugin_or_conversation(
    setup: Setup,
) -> None:
    """Only foreign grants exist: nothing may be injected into filePath, so the call stays
    what the model sent (here nothing), and the host's inputSchema check refuses it for the
    missing filePath before any worker is called."""
    setup.grant(setup.doc, plugin=XL)
    setup.grant(setup.doc, conversation="someone-else")
    setup.grant(setup.files / "out", access="read-write")  # a directory: does not fit
    error = the_failure(await run_chat(setup.host, outline({})))
    assert error == (
        "the arguments do not match the inputSchema of outline at /: "
        "'filePath' is a required property"
    )
    assert setup.sent.calls == []


async def test_route_b_injects_only_the_callers_grant(setup: Setup) -> None:
    mine = setup.files / "mine.md"
    mine.write_text("# Mine\n")
    setup.grant(setup.doc, plugin=XL)
    setup.grant(setup.doc, conversation="someone-else")
    ref = setup.grant(mine)
    foreign = setup.grant(setup.doc, plugin=XL)
    await run_chat(setup.host, outline({"filePath": foreign}))  # overwritten by route B
    assert setup.sent.calls == [(MD, "outline", {"filePath": setup.copy(ref)})]


@settings(max_examples=150, deadline=None)
@given(
    grants=st.lists(
        st.tuples(
            st.sampled_from(["c1", "c2"]),
            st.sampled_from(["p", "q"]),
            st.sampled_from(["f1", "f2", "d1"]),
            st.sampled_from(["read", "write", "read-write"]),
        ),
        max_size=6,
    ),
    file_class=st.sampled_from(list(FileClass)),
)
def test_injection_only_ever_uses_the_callers_grants(
    tmp_path_factory: pytest.TempPathFactory, grants: list, file_class: FileClass
) -> None:
    """Route B, for any mix of grants: what is injected belongs to (c1, p) and fits."""
    root = tmp_path_factory.mktemp("inject")
    (root / "f1").write_text("1")
    (root / "f2").write_text("2")
    (root / "d1").mkdir()
    store = GrantStore([root])
    mine = set()
    for conversation, plugin, name, access in grants:
        ref = store.attach(conversation, plugin, root / name, access)
        if (conversation, plugin) == ("c1", "p"):
            mine.add(ref["id"])
    injected = store.inject("c1", "p", {"x": "model"}, {"x": file_class})["x"]
    chosen = injected if isinstance(injected, list) else [injected]
    for ref in chosen:
        if ref == "model":
            continue
        assert ref["id"] in mine
        assert ref["kind"] == file_class.kind
        assert not file_class.writes or ref["access"] in ("write", "read-write")


# --------------------------------------------------------------------------- forged refs


def forged(**fields: Any) -> dict[str, Any]:
    return {"name": "secret.md", "kind": "file", "access": "read", "size": 1, **fields}


@pytest.mark.parametrize(
    "value",
    [
        forged(id=f"ref_{uuid.uuid4()}"),
        forged(id="ref_"),
        forged(id="ref_../../outside/secret.md"),
        forged(id="ref_*"),
    ],
    ids=["random-uuid", "empty-suffix", "path-in-id", "wildcard"],
)
async def test_forged_ref_ids_are_refused(setup: Setup, value: dict[str, Any]) -> None:
    setup.grant(setup.files / "out", access="read")  # a real grant exists, of another kind
    error = the_failure(await run_chat(setup.host, outline({"filePath": value})))
    assert error == f"FileRef {value['id']} is not granted in this conversation"
    assert setup.sent.calls == []


async def test_ids_of_forgotten_grants_are_refused(setup: Setup) -> None:
    ref = setup.grant(setup.doc)
    setup.host.grants.forget("c1")
    error = the_failure(await run_chat(setup.host, outline({"filePath": ref})))
    assert error == f"FileRef {ref['id']} is not granted in this conversation"
    assert setup.sent.calls == []


async def test_a_ref_id_altered_by_one_character_is_refused(setup: Setup) -> None:
    ref = setup.grant(setup.doc)
    setup.grant(setup.doc)  # two matching grants: route A, the model's value stays
    for changed in (ref["id"].upper().replace("REF_", "ref_"), ref["id"] + " ", ref["id"][:-1]):
        if changed == ref["id"]:
            continue
        error = the_failure(
            await run_chat(setup.host, outline({"filePath": {**ref, "id": changed}}))
        )
        assert "is not granted" in error
    assert setup.sent.calls == []


async def test_extra_fields_of_a_ref_are_ignored(setup: Setup) -> None:
    """A granted id with a path, name or kind of the model's choosing resolves to the
    granted file only."""
    ref = setup.grant(setup.doc)
    tampered = {**ref, "path": str(setup.secret), "name": "../outside/secret.md"}
    await run_chat(setup.host, outline({"filePath": tampered}))
    assert setup.sent.calls == [(MD, "outline", {"filePath": setup.copy(ref)})]


@pytest.mark.parametrize(
    "value",
    [
        {"id": 5, "path": "SECRET"},
        {"id": None},
        {"id": ["ref_x"]},
        {"id": {"name": "ref_x"}},
        {"id": True},
        {"ID": "ref_x"},
        {"id": "REF_x"},
        {"id": " ref_x"},
    ],
    ids=["int", "null", "list", "object", "bool", "upper-key", "upper-prefix", "space"],
)
async def test_ref_lookalikes_with_non_ref_ids_never_become_paths(
    setup: Setup, value: dict[str, Any]
) -> None:
    """Not FileRefs (FengYu's test: a string id starting with ref_), so never resolved: a
    file-class parameter takes only granted refs, and the host refuses the call
    (spec: host.md#fileref-grants)."""
    setup.grant(setup.doc)
    setup.grant(setup.doc)  # two matching grants: route A, the model's value stays
    error = the_failure(await run_chat(setup.host, outline({"filePath": value})))
    assert error == "parameter 'filePath' takes a FileRef granted in this conversation, not a path"
    assert setup.sent.calls == []


# --------------------------------------------------------------------------- nesting


async def test_a_foreign_ref_nested_anywhere_fails_the_whole_call(setup: Setup) -> None:
    mine = setup.grant(setup.doc)
    foreign = setup.grant(setup.doc, plugin=XL)
    for extra in (
        [foreign],
        {"deep": {"deeper": [1, {"ref": foreign}]}},
        [[[[[[[[[[foreign]]]]]]]]]],
        {"refs": [mine, mine, foreign]},
    ):
        error = the_failure(await run_chat(setup.host, outline({"filePath": mine, "extra": extra})))
        assert error == f"FileRef {foreign['id']} is not granted to plugin {MD}"
    assert setup.sent.calls == []


async def test_a_forged_ref_nested_deep_fails_the_whole_call(setup: Setup) -> None:
    mine = setup.grant(setup.doc)
    fake = forged(id=f"ref_{uuid.uuid4()}")
    nested: Any = fake
    for _ in range(200):
        nested = {"n": [nested]}
    error = the_failure(await run_chat(setup.host, outline({"filePath": mine, "x": nested})))
    assert error == f"FileRef {fake['id']} is not granted in this conversation"
    assert setup.sent.calls == []


async def test_absurdly_deep_arguments_are_a_failure_not_a_crash(setup: Setup) -> None:
    depth = 50_000
    arguments = '{"filePath": ' + '{"a": [' * depth + "1" + "]}" * depth + "}"
    error = the_failure(await run_chat(setup.host, outline(arguments)))
    assert error
    assert setup.sent.calls == []


async def test_nested_granted_refs_resolve_to_their_own_paths(setup: Setup) -> None:
    ref = setup.grant(setup.doc)
    await run_chat(setup.host, outline({"filePath": ref, "extra": {"copies": [ref, [ref]]}}))
    real = setup.copy(ref)
    assert setup.sent.calls == [
        (MD, "outline", {"filePath": real, "extra": {"copies": [real, [real]]}})
    ]


# --------------------------------------------------------------------------- write access


async def test_write_directory_through_a_read_grant_is_refused(setup: Setup) -> None:
    """Route B needs a writable grant, so the read grant is not injected either."""
    out = setup.grant(setup.files / "out", plugin=XL, access="read")
    for arguments in ({"outputDir": out}, {"outputDir": "x"}, {}):
        events = await run_chat(setup.host, turn("excel_execute", arguments))
        if arguments == {"outputDir": out}:
            assert the_failure(events) == f"FileRef {out['id']} is read-only; this parameter writes"
    setup.sent.assert_never_sent(str((setup.files / "out").resolve()))


async def test_a_read_grant_nested_under_the_write_parameter_is_refused(setup: Setup) -> None:
    out = setup.grant(setup.files / "out", plugin=XL, access="read")
    events = await run_chat(setup.host, turn("excel_execute", {"outputDir": [{"dir": out}]}))
    assert the_failure(events) == (
        "parameter 'outputDir' takes a FileRef granted in this conversation, not a path"
    )
    assert setup.sent.calls == []


async def test_write_grant_of_another_conversation_is_not_injected(setup: Setup) -> None:
    setup.grant(setup.files / "out", plugin=XL, access="read-write", conversation="other")
    setup.grant(setup.files / "out", plugin=MD, access="read-write")
    await run_chat(setup.host, turn("excel_execute", {"filePrefix": "x"}))
    setup.sent.assert_never_sent(str((setup.files / "out").resolve()))


# --------------------------------------------------------------------------- raw paths


@pytest.mark.parametrize("grants", [0, 2])
async def test_a_raw_path_in_a_file_parameter_never_reaches_the_worker(
    setup: Setup, grants: int
) -> None:
    """The model writes a path itself instead of passing a FileRef. The host classified
    filePath as a read-file parameter, so only a granted ref may fill it; today the
    string goes through and the worker reads a file outside every allowed root."""
    for _ in range(grants):
        setup.grant(setup.doc)
    events = await run_chat(setup.host, outline({"filePath": str(setup.secret)}))
    assert_clean(setup)
    the_failure(events)


def test_symlinked_grant_parent_is_checked_from_the_real_root(tmp_path: Path) -> None:
    """An allowed root given through a symlink is compared by its real path."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.md").write_text("# a")
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    store = GrantStore([tmp_path / "alias"])
    assert store.attach("c", "p", tmp_path / "alias" / "a.md", "read")["name"] == "a.md"
