"""Revoking a grant over the HTTP API (spec: host.md#fileref-grants):
`DELETE /api/conversations/{cid}/grants/{refId}` deletes its copies and staging (their
quota returns), and a call naming it afterwards fails with FengYu's "Unknown or unauthorized
file reference"; an id the conversation does not hold is a 404.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.agent.models import ModelTurn, ScriptedModel
from reference_host.host import Host
from reference_host.http.app import create_app
from tests.conftest import REPO, MakeHost
from tests.security.conftest import Dispatched, run_chat, the_failure, turn

MD = "fan.summer.markdown"
XL = "fan.summer.excel"


@dataclass
class Api:
    host: Host
    client: httpx.AsyncClient
    files: Path
    sent: Dispatched

    async def grant(self, path: Path, access: str = "read", plugin: str = MD) -> dict[str, Any]:
        answer = await self.client.post(
            "/api/conversations/c1/grants",
            json={"pluginId": plugin, "path": str(path), "access": access},
        )
        assert answer.status_code == 201, answer.text
        return dict(answer.json())

    async def revoke(self, ref_id: str, conversation: str = "c1") -> httpx.Response:
        return await self.client.delete(f"/api/conversations/{conversation}/grants/{ref_id}")


@pytest.fixture
async def api(tmp_path: Path, make_host: MakeHost) -> AsyncIterator[Api]:
    files = tmp_path / "files"
    (files / "out").mkdir(parents=True)
    (files / "doc.md").write_text("# Public\n")
    host = make_host(
        allowed_roots=(files,),
        approval=ApprovalPolicy(write=Decision.ALLOW, external=Decision.DENY),
    )
    sent = Dispatched()
    host.manager.observers.append(sent)
    await host.install(REPO / "sample_plugins" / MD)
    app = create_app(host, lambda: ScriptedModel([ModelTurn(text="hi")]))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765"
    ) as client:
        yield Api(host, client, files, sent)


def outline(ref: dict[str, Any]) -> ModelTurn:
    return turn("markdown_outline", {"filePath": ref})


async def test_a_revoked_grant_loses_its_copy_its_quota_and_every_later_call(api: Api) -> None:
    ref = await api.grant(api.files / "doc.md")
    await run_chat(api.host, outline(ref))
    copy = Path(api.sent.calls[-1][2]["filePath"])
    assert copy.read_text() == "# Public\n"
    assert api.host.grants.quota.usage() == (1, len("# Public\n"))

    answer = await api.revoke(ref["id"])

    assert answer.status_code == 204 and answer.content == b""
    assert not copy.exists() and not copy.parent.exists()
    assert api.host.grants.quota.usage() == (0, 0)
    assert (await api.client.get("/api/conversations/c1/grants")).json() == []
    calls = len(api.sent.calls)
    error = the_failure(await run_chat(api.host, outline(ref)))
    assert error == (
        f"Unknown or unauthorized file reference: FileRef {ref['id']} was revoked in this "
        "conversation"
    )
    # route B has nothing to inject any more either: the model's own words are refused
    the_failure(await run_chat(api.host, turn("markdown_outline", {"filePath": "doc.md"})))
    assert len(api.sent.calls) == calls
    assert (api.files / "doc.md").read_text() == "# Public\n"  # the user's file stays


async def test_revoking_a_write_grant_deletes_its_staging_not_the_granted_folder(
    api: Api,
) -> None:
    await api.host.install(REPO / "sample_plugins" / XL)
    (api.files / "out" / "kept.txt").write_text("mine")
    ref = await api.grant(api.files / "out", "read-write", plugin=XL)
    staging = Path(api.host.grants.hand_over("c1", XL, ref, write=True))
    (staging / "draft.txt").write_text("not committed")

    assert (await api.revoke(ref["id"])).status_code == 204

    assert not staging.exists()
    assert sorted(p.name for p in (api.files / "out").iterdir()) == ["kept.txt"]
    writable, readable = api.host.grants.roots("c1", XL)
    assert [list(folder.iterdir()) for folder in (*writable, *readable)] == [[], []]
    api.host.grants.commit("c1", XL)  # a call that was under way commits nothing
    assert sorted(p.name for p in (api.files / "out").iterdir()) == ["kept.txt"]


@pytest.mark.parametrize(
    "ref_id", ["ref_00000000-0000-0000-0000-000000000000", "not a ref", "x" * 300]
)
async def test_an_unknown_ref_id_is_a_404(api: Api, ref_id: str) -> None:
    answer = await api.revoke(ref_id)
    assert answer.status_code == 404
    assert answer.json()["error"].startswith("no grant ")


async def test_a_grant_is_revoked_only_in_its_own_conversation_and_once(api: Api) -> None:
    ref = await api.grant(api.files / "doc.md")
    assert (await api.revoke(ref["id"], conversation="c2")).status_code == 404
    assert len(api.host.grants.grants("c1")) == 1
    assert (await api.revoke(ref["id"])).status_code == 204
    second = await api.revoke(ref["id"])
    assert second.status_code == 404
    assert second.json() == {
        "error": f"no grant '{ref['id']}' in conversation 'c1'",
        "problems": [],
    }


async def test_the_api_document_lists_the_revoke_route(api: Api) -> None:
    paths = (await api.client.get("/openapi.json")).json()["paths"]
    operation = paths["/api/conversations/{conversation_id}/grants/{ref_id}"]["delete"]
    assert {"204", "404"} <= set(operation["responses"])
