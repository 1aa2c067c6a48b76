"""The OpenAPI document says what the API does (issue 10 item 9).

FastAPI's generated document is close but not right for this app: it lists 422 for every
operation with parameters, while the app answers 400 (its own validation handler); it does
not know the answers the middleware gives (413 for a body over the limit, 403 for a foreign
Origin, 401 without the token); it names schemas for 422 bodies the app never sends. This
module rewrites the generated document once, by those rules; what is particular to one
operation (201, 404, 409, the event stream) is declared with `responses=` on its route.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from reference_host.http.access import UNSAFE_METHODS
from reference_host.http.error_answers import ErrorBody, too_large

ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}
UNUSED_SCHEMAS = ("HTTPValidationError", "ValidationError")


def error(description: str) -> dict[str, Any]:
    """A documented error answer: the description and the error body."""
    return {"description": description, "content": {"application/json": {"schema": ERROR_REF}}}


# The `responses=` pieces several routers share.
NOT_FOUND = error("no such plugin, approval or workflow")
CONFLICT = error("it clashes with what is installed")


def document(app: FastAPI, *, token: bool, max_body_bytes: int) -> None:
    """Make app.openapi() return the corrected document (built on first use, then kept)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                description=app.description,
                routes=app.routes,
            )
            _correct(schema, token=token, max_body_bytes=max_body_bytes)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _correct(schema: dict[str, Any], *, token: bool, max_body_bytes: int) -> None:
    components = schema.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for name in UNUSED_SCHEMAS:
        schemas.pop(name, None)
    schemas["ErrorBody"] = ErrorBody.model_json_schema()
    if token:
        components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    for item in schema.get("paths", {}).values():
        for method, operation in item.items():
            responses = operation.setdefault("responses", {})
            had_validation = responses.pop("422", None) is not None
            if had_validation or "requestBody" in operation:
                responses.setdefault("400", error("the request is invalid (named in problems)"))
            if "requestBody" in operation:
                responses["413"] = error(too_large(max_body_bytes))
            if method.upper() in UNSAFE_METHODS:
                responses["403"] = error("the Origin header names a host that is not allowed")
            if token:
                responses["401"] = error("the bearer token is missing or wrong")
                operation["security"] = [{"bearer": []}]
