"""The OpenAPI document names the fields of every JSON answer (reference_host.http.answers),
not a bare object: a client can be written from it, and the API fuzz checks answers against
it."""

from __future__ import annotations

from typing import Any

import httpx

from reference_host.agent.models import ModelTurn, ScriptedModel
from reference_host.http.app import create_app
from tests.conftest import MakeHost

# Every operation that answers JSON on success, with its success status.
JSON_OPERATIONS = {
    ("get", "/api/plugins", "200"),
    ("post", "/api/plugins", "200"),
    ("post", "/api/plugins", "201"),
    ("post", "/api/plugins/{plugin_id}/enable", "200"),
    ("post", "/api/plugins/{plugin_id}/disable", "200"),
    ("get", "/api/tools", "200"),
    ("get", "/api/tools/providers", "200"),
    ("post", "/api/conversations/{conversation_id}/grants", "201"),
    ("get", "/api/conversations/{conversation_id}/grants", "200"),
    ("post", "/api/approvals/{approval_id}", "200"),
    ("get", "/api/v1/agents/metadata/tools", "200"),
    ("get", "/api/workflow/catalog", "200"),
    ("get", "/api/workflows", "200"),
    ("post", "/api/workflows", "200"),
    ("post", "/api/workflows", "201"),
    ("get", "/api/workflows/{workflow_id}", "200"),
    ("post", "/api/workflows/{workflow_id}/reconcile", "200"),
}


def _resolved(schema: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """schema with a $ref followed, and an array's items in its place."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/components/schemas/")
        schema = document["components"]["schemas"][name]
    if schema.get("type") == "array":
        return _resolved(schema["items"], document)
    return schema


async def test_each_json_answer_has_a_schema_with_its_fields(make_host: MakeHost) -> None:
    app = create_app(make_host(), lambda: ScriptedModel([ModelTurn(text="hi")]))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as api:
        document = (await api.get("/openapi.json")).json()
    found = set()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status, answer in operation["responses"].items():
                schema = answer.get("content", {}).get("application/json", {}).get("schema")
                if status.startswith("2") and schema is not None:
                    found.add((method, path, status))
                    fields = _resolved(schema, document).get("properties", {})
                    assert fields, (method, path, status, schema)
    assert found == JSON_OPERATIONS
