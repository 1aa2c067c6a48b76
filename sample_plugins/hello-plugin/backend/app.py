"""hello-plugin's backend: the endpoint behind the `hello.greeting.get` tool.

`GET /api/v1/plugins/hello-plugin/greeting` answers the demo greeting for the tenant named by
`X-Tenant-Id` (the ERP sends it with every call, as it sends `X-Actor`).
"""

from __future__ import annotations

import re

from erp_errors import http_error
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

PREFIX = "/api/v1/plugins/hello-plugin"
TENANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
ACTOR = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]{0,126}[\x21-\x7e])?$")


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"status": status, "error": message}, status_code=status)


async def greeting(request: Request) -> Response:
    tenant = request.headers.get("x-tenant-id", "")
    if not TENANT.match(tenant):
        return error(400, "the X-Tenant-Id header must name a tenant ([A-Za-z0-9_.-], 1-64)")
    actor = request.headers.get("x-actor", "")
    if actor and not ACTOR.match(actor):
        return error(400, "the X-Actor header is not a printable name")
    body = {"plugin": "hello-plugin", "tenantId": tenant, "greeting": f"Hello, {tenant}!"}
    if actor:
        body["actor"] = actor
    return JSONResponse(body)


def routes() -> list[Route]:
    return [Route(f"{PREFIX}/greeting", greeting, methods=["GET"])]


def create_app() -> Starlette:
    """hello-plugin's backend on its own."""
    app = Starlette(routes=routes(), exception_handlers={HTTPException: http_error})
    # Starlette would answer `/x/` with a bodyless 307; every answer here is JSON
    # (spec: erp.md#what-the-endpoint-must-answer).
    app.router.redirect_slashes = False
    return app
