"""The host's HTTP API fuzzed from its own OpenAPI document with schemathesis.

Every operation, the chat stream and workflow runs included (scripted model, nothing
long-running), gets a bounded number of generated requests (valid and invalid bodies, odd
path parameters, headers) and every check schemathesis has: no 5xx, documented status codes,
content types, headers and schemas, valid data accepted and invalid data refused, a 405 with
the right Allow header for a method an operation lacks. The distinct failures are collected
over all operations and must be none, so a regression names every mismatch at once.

Hermetic: the Host lives in tmp_path, its only allowed root is tmp_path/files, the plugin
it has installed is a copy under tmp_path, the working folder is an empty sandbox, and
every install path a case sends is re-rooted in that sandbox before it goes out. Half of
the cases aimed at a plugin id get the installed plugin's id, so the code behind the 404
is reached too.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest
import schemathesis

# Imported here, while the process has one thread, not by from_asgi in the fixture: pytest
# rewrites the modules of its plugins (schemathesis, anyio, hypothesis) with ast.parse as they
# are first imported, and CPython 3.11's AST state is shared between threads (gh-106905), so
# a host thread importing one at the same moment made the fixture's import fail with
# "SystemError: AST constructor recursion depth mismatch".
import schemathesis.specs.openapi.schemas
from hypothesis import HealthCheck, given, note, settings
from schemathesis.checks import CHECKS, is_check_class, load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.config._checks import POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES as ACCEPTED
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.generation import GenerationMode

from conformance.install_validation import kit_validator
from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.agent.models import ModelTurn, ScriptedModel
from reference_host.host import DEFAULT_ALLOWED_HOSTS, Host
from reference_host.http.app import create_app
from tests.conftest import MakeHost
from tests.security.conftest import MARKDOWN, copy_sample

PLUGIN = "fan.summer.markdown"
EXAMPLES_PER_OPERATION = 20
COVERAGE_CASES_PER_OPERATION = 150
TEST_HOST = "testserver"  # the Host schemathesis' ASGI client sends; allowed for this host only
# A conversation's follow stream never ends by itself: schemathesis keeps what it sent until
# its read timeout (10 s by default, per request). A fuzzed conversation has no events, so
# all it sends is `: connected` at once; a short timeout reads the same and waits no longer.
FOLLOW_STREAM_SECONDS = 1.0
OPERATIONS = {
    "operations": [
        # A body that names a file or folder on disk is well formed whatever it names; whether
        # that is a plugin (or a grantable file) is known only once the host looks, and the
        # answer is a 400 naming the reason. The schema cannot say which paths hold plugins,
        # so for these two operations a 400 to a schema-valid body is what the document
        # promises, not a mismatch.
        *(
            {
                "include-path": path,
                "include-method": "POST",
                "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "400"]}},
            }
            for path in ("/api/plugins", "/api/conversations/{conversation_id}/grants")
        ),
        {
            "include-path": "/api/conversations/{conversation_id}/events",
            "include-method": "GET",
            "request-timeout": FOLLOW_STREAM_SECONDS,
        },
    ]
}


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "sandbox"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def api_host(tmp_path: Path, sandbox: Path, make_host: MakeHost) -> Host:
    files = tmp_path / "files"
    files.mkdir()
    (files / "doc.md").write_text("# Doc\n")
    host = make_host(
        allowed_roots=(files,),
        allowed_hosts=(*DEFAULT_ALLOWED_HOSTS, TEST_HOST),
        approval=ApprovalPolicy(write=Decision.DENY, external=Decision.DENY, timeout=1),
        validator=kit_validator,
    )
    asyncio.run(host.install(copy_sample(MARKDOWN, tmp_path)))
    return host


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
    config = SchemathesisConfig.from_dict(OPERATIONS)
    return schemathesis.openapi.from_asgi("/openapi.json", as_served(app), config=config)


def all_checks() -> list[Any]:
    """Every check function schemathesis registers (the check classes need a stateful run)."""
    load_all_checks()
    return [check for check in CHECKS.get_all() if not is_check_class(check)]


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


def mismatches(case: Any, checks: list[Any]) -> set[str]:
    """Send case and run the checks: each failure as `METHOD /path: title`."""
    response = case.call()
    try:
        case.validate_response(response, checks=checks)
    except (FailureGroup, Failure) as exc:
        failures = exc.exceptions if isinstance(exc, FailureGroup) else [exc]
        label = f"{case.operation.method.upper()} {case.operation.path}"
        return {
            f"{label}: {response.status_code} {failure.title}: {failure.message[:300]}"
            for failure in failures
        }
    return set()


def operations(api_schema: Any) -> list[Any]:
    return [result.ok() for result in api_schema.get_all_operations()]


@pytest.mark.parametrize("mode", list(GenerationMode), ids=lambda m: m.value)
def test_the_api_does_what_its_document_says(
    api_schema: Any, api_host: Host, sandbox: Path, mode: Any
) -> None:
    """Each operation in turn, with its own bounded hypothesis run and all checks.

    (schemathesis' own `@schema.parametrize()` over a lazy fixture schema needs pytest
    internals that pytest 9 removed, so the operations are driven here directly.)"""
    checks = all_checks()
    found: set[str] = set()
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
            found.update(mismatches(case, checks))

        exercise()
    assert not found, "\n".join(sorted(found))


def test_the_api_keeps_its_document_at_the_edges(
    api_schema: Any, api_host: Host, sandbox: Path
) -> None:
    """schemathesis' coverage phase: boundary values, missing and wrong-typed parameters,
    and methods the document does not list (405 with an Allow header that names exactly
    the documented methods). A fixed list per operation, cut to a bound."""
    checks = all_checks()
    found: set[str] = set()
    modes = list(GenerationMode)
    for operation in operations(api_schema):
        generation = api_schema.config.generation_for(operation=operation, phase="coverage")
        cases = api_schema.iter_coverage_cases(
            operation, generation_modes=modes, generation_config=generation
        )
        for _, case in zip(range(COVERAGE_CASES_PER_OPERATION), cases, strict=False):
            hermetic(case, sandbox, api_host.config.allowed_roots[0])
            found.update(mismatches(case, checks))
    assert not found, "\n".join(sorted(found))


def test_every_operation_is_fuzzed(api_schema: Any) -> None:
    """Nothing is left out: the chat stream and workflow runs are fuzzed too."""
    operations_ = {f"{op.method.upper()} {op.path}" for op in operations(api_schema)}
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
        "POST /api/chat",
        "POST /api/workflows/{workflow_id}/run",
    ):
        assert expected in operations_
