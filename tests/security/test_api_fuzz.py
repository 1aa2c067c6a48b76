"""The host's HTTP API fuzzed from its own OpenAPI document with schemathesis.

Every operation except the chat stream (`POST /api/chat`, an SSE run) and operations that
start long work (`.../run`) gets a small number of generated requests (valid and invalid
bodies, odd path parameters, headers). Checks: no 5xx, and a response whose status the
schema declares must match the declared schema.

Hermetic: the Host lives in tmp_path, its only allowed root is tmp_path/files, the plugin
it has installed is a copy under tmp_path, the working folder is an empty sandbox, and
every install path a case sends is re-rooted in that sandbox before it goes out. Half of
the cases aimed at a plugin id get the installed plugin's id, so the code behind the 404
is reached too.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, note, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from reference_host.agent.models import ModelTurn, ScriptedModel
from reference_host.app import create_app
from reference_host.approval import ApprovalPolicy, Decision
from reference_host.host import Host, HostConfig
from reference_host.kit_validation import kit_validator
from tests.security.conftest import MARKDOWN, copy_sample

PLUGIN = "fan.summer.markdown"
EXAMPLES_PER_OPERATION = 20


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "sandbox"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def api_host(tmp_path: Path, sandbox: Path) -> Iterator[Host]:
    files = tmp_path / "files"
    files.mkdir()
    (files / "doc.md").write_text("# Doc\n")
    host = Host(
        HostConfig(
            data_dir=tmp_path / "host",
            allowed_roots=(files,),
            approval=ApprovalPolicy(write=Decision.DENY, external=Decision.DENY, timeout=1),
        ),
        validator=kit_validator,
    )
    asyncio.run(host.install(copy_sample(MARKDOWN, tmp_path)))
    yield host
    asyncio.run(host.close())


def as_served(app: Any) -> Any:
    """The app as uvicorn serves it: Starlette answers 500 for an unexpected exception and
    then re-raises it for the server to log; uvicorn keeps serving, so does this wrapper
    (without it the in-process client would raise instead of showing the 500)."""

    async def served(scope: Any, receive: Any, send: Any) -> None:
        try:
            await app(scope, receive, send)
        except Exception:
            if scope["type"] != "http":
                raise

    return served


@pytest.fixture
def api_schema(api_host: Host) -> Any:
    app = create_app(api_host, lambda: ScriptedModel([ModelTurn(text="ok")]))
    return (
        schemathesis.openapi.from_asgi("/openapi.json", as_served(app))
        .exclude(path="/api/chat")
        .exclude(path_regex=r".*/run$")
    )


def _coin(case: Any, salt: str) -> bool:
    """A stable yes/no per case (hypothesis replays must make the same choice)."""
    digest = hashlib.sha256(f"{salt}:{case.path_parameters}:{case.body!r}".encode()).digest()
    return digest[0] % 2 == 0


def hermetic(case: Any, sandbox: Path, files: Path) -> None:
    """Keep every path the case sends under tmp_path; sometimes aim at the real plugin."""
    body = case.body
    if isinstance(body, dict) and isinstance(body.get("path"), str):
        rooted = sandbox if case.operation.path == "/api/plugins" else files
        body["path"] = f"{rooted}/{body['path'].replace('..', '__')}"
    if isinstance(body, dict) and isinstance(body.get("pluginId"), str) and _coin(case, "p"):
        body["pluginId"] = PLUGIN
    params = case.path_parameters or {}
    if "plugin_id" in params and _coin(case, "id"):
        params["plugin_id"] = PLUGIN


def operations(api_schema: Any) -> list[Any]:
    return [result.ok() for result in api_schema.get_all_operations()]


@pytest.mark.parametrize("mode", list(GenerationMode), ids=lambda m: m.value)
def test_the_api_never_answers_5xx_and_keeps_its_schema(
    api_schema: Any, api_host: Host, sandbox: Path, mode: Any
) -> None:
    """Each operation in turn, with its own bounded hypothesis run.

    (schemathesis' own `@schema.parametrize()` over a lazy fixture schema needs pytest
    internals that pytest 9 removed, so the operations are driven here directly.)"""
    for operation in operations(api_schema):
        if mode is GenerationMode.NEGATIVE and "requestBody" not in operation.definition.raw:
            continue  # negative mode cannot make a free-form string parameter invalid

        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        @given(case=operation.as_strategy(generation_mode=mode))
        def exercise(case: Any) -> None:
            note(f"{case.method} {case.formatted_path} body={case.body!r}")
            hermetic(case, sandbox, api_host.config.allowed_roots[0])
            response = case.call()
            case.validate_response(
                response,
                checks=[not_a_server_error, response_schema_conformance, content_type_conformance],
            )

        exercise()


def test_the_fuzzed_operations_are_the_expected_ones(api_schema: Any) -> None:
    """The exclusions took only the chat stream and run routes; everything else is fuzzed."""
    operations_ = {f"{op.method.upper()} {op.path}" for op in operations(api_schema)}
    assert "POST /api/chat" not in operations_
    assert not [op for op in operations_ if op.endswith("/run")]
    for expected in (
        "GET /api/plugins",
        "POST /api/plugins",
        "POST /api/plugins/{plugin_id}/enable",
        "POST /api/plugins/{plugin_id}/disable",
        "DELETE /api/plugins/{plugin_id}",
        "GET /api/tools",
        "POST /api/conversations/{conversation_id}/grants",
        "GET /api/conversations/{conversation_id}/grants",
        "POST /api/approvals/{approval_id}",
        "GET /api/v1/agents/metadata/tools",
    ):
        assert expected in operations_
