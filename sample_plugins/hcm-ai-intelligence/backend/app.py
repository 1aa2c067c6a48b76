"""hcm-ai-intelligence's backend: an AI-assistant module that fronts hcm-employee.

Its own endpoints read and change hcm-employee's records through the directory the ERP
hands it (`erp_backends.create_app` passes hcm-employee's `EmployeeDirectory`):

- `POST /api/v1/plugins/hcm-ai-intelligence/reports/headcount`: body
  `{"groupBy": "department"|"title"|"status", "department"?: [..], "includeInactive"?: bool}`,
  the headcount per group.
- `GET /api/v1/plugins/hcm-ai-intelligence/departments/{department}/summary`: headcount,
  titles and the longest-serving employee of one department (404 for an unknown department).
- `POST /api/v1/plugins/hcm-ai-intelligence/employees/{employeeId}/transfer`: body
  `{"employeeId", "targetDepartment", "reason", "effectiveDate"?}`; moves the employee
  (404 unknown employee, 409 already there or inactive). The mutating, HIGH-risk one.

Its `employee.search` tool has no endpoint here: it calls hcm-employee's own search (a
cross-plugin tool, spec: erp.md#the-namespace-rule). Bad input is always a 4xx JSON answer,
never 5xx.
"""

from __future__ import annotations

import datetime
import json
import re
from collections import Counter
from typing import Any, Protocol

from erp_errors import http_error
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

PREFIX = "/api/v1/plugins/hcm-ai-intelligence"
TENANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
ACTOR = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]{0,126}[\x21-\x7e])?$")
DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
MAX_BODY = 64 * 1024
MAX_REASON = 500
GROUPS = ("department", "title", "status")


class Directory(Protocol):
    """What this plugin needs from hcm-employee (its EmployeeDirectory)."""

    departments: tuple[str, ...]

    def get(self, tenant: str, employee_id: str) -> dict[str, Any] | None: ...

    def all(self, tenant: str, *, include_inactive: bool = True) -> list[dict[str, Any]]: ...

    def transfer(self, tenant: str, employee_id: str, department: str) -> dict[str, Any]: ...


class Refused(Exception):
    """A 4xx answer with this status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"status": status, "error": message}, status_code=status)


def tenant_of(request: Request) -> str:
    tenant = request.headers.get("x-tenant-id", "")
    if not TENANT.match(tenant):
        raise Refused(400, "the X-Tenant-Id header must name a tenant ([A-Za-z0-9_.-], 1-64)")
    return tenant


def actor_of(request: Request) -> str:
    actor = request.headers.get("x-actor", "")
    if not ACTOR.match(actor):
        raise Refused(400, "the X-Actor header must name who asks (printable ASCII, 1-128)")
    return actor


async def json_object(request: Request, allowed: set[str], required: set[str]) -> dict[str, Any]:
    """The request body as a JSON object with only the allowed keys and all required ones."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise Refused(415, "the body must be application/json")
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise Refused(413, f"the body must be at most {MAX_BODY} bytes")
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise Refused(400, "the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise Refused(400, "the body must be a JSON object")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise Refused(400, f"unknown field {unknown[0][:64]!r}")
    missing = sorted(required - set(body))
    if missing:
        raise Refused(400, f"missing field {missing[0]!r}")
    return body


def department_named(directory: Directory, value: Any, field: str) -> str:
    if isinstance(value, str):
        for department in directory.departments:
            if value.casefold() == department.casefold():
                return department
    shown = value[:64] if isinstance(value, str) else value
    raise Refused(400, f"{field}: unknown department {shown!r}")


def routes(directory: Directory) -> list[Route]:
    transfers = Counter[str]()

    async def headcount(request: Request) -> Response:
        try:
            tenant = tenant_of(request)
            body = await json_object(
                request, {"groupBy", "department", "includeInactive"}, {"groupBy"}
            )
            group_by = body["groupBy"]
            if group_by not in GROUPS:
                raise Refused(400, f"groupBy must be one of {', '.join(GROUPS)}")
            include_inactive = body.get("includeInactive", False)
            if not isinstance(include_inactive, bool):
                raise Refused(400, "includeInactive must be a boolean")
            wanted = body.get("department", [])
            if not isinstance(wanted, list) or len(wanted) > len(directory.departments):
                raise Refused(400, "department must be a list of department names")
            departments = {department_named(directory, d, "department") for d in wanted}
        except Refused as exc:
            return error(exc.status, str(exc))
        people = [
            e
            for e in directory.all(tenant, include_inactive=include_inactive)
            if not departments or e["department"] in departments
        ]
        counts = Counter(e[group_by] for e in people)
        return JSONResponse(
            {
                "tenantId": tenant,
                "groupBy": group_by,
                "total": len(people),
                "groups": [{"key": k, "count": counts[k]} for k in sorted(counts)],
            }
        )

    async def department_summary(request: Request) -> Response:
        try:
            tenant = tenant_of(request)
        except Refused as exc:
            return error(exc.status, str(exc))
        try:
            department = department_named(
                directory, request.path_params["department"], "department"
            )
        except Refused as exc:
            return error(404, str(exc))  # a department is a resource here: unknown is 404
        people = [e for e in directory.all(tenant) if e["department"] == department]
        active = [e for e in people if e["status"] == "ACTIVE"]
        senior = min(active, key=lambda e: (e["hireDate"], e["employeeId"]), default=None)
        return JSONResponse(
            {
                "tenantId": tenant,
                "department": department,
                "headcount": len(people),
                "activeHeadcount": len(active),
                "titles": dict(sorted(Counter(e["title"] for e in active).items())),
                "longestServing": None
                if senior is None
                else {k: senior[k] for k in ("employeeId", "name", "hireDate")},
            }
        )

    async def transfer(request: Request) -> Response:
        employee_id = request.path_params["employeeId"]
        try:
            tenant = tenant_of(request)
            actor = actor_of(request)
            body = await json_object(
                request,
                {"employeeId", "targetDepartment", "reason", "effectiveDate"},
                {"employeeId", "targetDepartment", "reason"},
            )
            if body["employeeId"] != employee_id:
                raise Refused(400, "employeeId in the body does not match the path")
            target = department_named(directory, body["targetDepartment"], "targetDepartment")
            reason = body["reason"]
            if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON:
                raise Refused(400, f"reason must be 1 to {MAX_REASON} characters, not blank")
            effective = body.get("effectiveDate", datetime.date.today().isoformat())
            if not isinstance(effective, str) or not DATE.match(effective):
                raise Refused(400, "effectiveDate must be a date YYYY-MM-DD")
            try:
                datetime.date.fromisoformat(effective)
            except ValueError:
                raise Refused(400, "effectiveDate is not a real date") from None
            current = directory.get(tenant, employee_id)
            if current is None:
                raise Refused(404, f"no employee {employee_id[:64]!r} in tenant {tenant!r}")
            if current["status"] != "ACTIVE":
                raise Refused(409, f"employee {employee_id!r} is not active")
            if current["department"] == target:
                raise Refused(409, f"employee {employee_id!r} is already in {target}")
        except Refused as exc:
            return error(exc.status, str(exc))
        moved = directory.transfer(tenant, employee_id, target)
        transfers[tenant] += 1
        return JSONResponse(
            {
                "transferId": f"TR-{tenant}-{transfers[tenant]:04d}",
                "status": "COMPLETED",
                "employeeId": employee_id,
                "fromDepartment": current["department"],
                "toDepartment": moved["department"],
                "effectiveDate": effective,
                "reason": reason.strip(),
                "requestedBy": actor,
            }
        )

    return [
        Route(f"{PREFIX}/reports/headcount", headcount, methods=["POST"]),
        Route(f"{PREFIX}/departments/{{department}}/summary", department_summary, methods=["GET"]),
        Route(f"{PREFIX}/employees/{{employeeId}}/transfer", transfer, methods=["POST"]),
    ]


def create_app(directory: Directory) -> Starlette:
    """hcm-ai-intelligence's backend on its own, over the given hcm-employee directory."""
    app = Starlette(routes=routes(directory), exception_handlers={HTTPException: http_error})
    # Starlette would answer `/x/` with a bodyless 307; every answer here is JSON
    # (spec: erp.md#what-the-endpoint-must-answer).
    app.router.redirect_slashes = False
    return app
