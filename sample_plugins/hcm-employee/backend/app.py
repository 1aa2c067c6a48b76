"""hcm-employee's backend: employee records per tenant, held in memory.

- `GET /api/v1/plugins/hcm-employee/employees/{employeeId}`: one employee, 404 when the
  tenant has no such employee.
- `GET /api/v1/plugins/hcm-employee/employees?department=&name=&limit=&includeInactive=`:
  search. `department` may repeat (any of them matches); `name` matches a case-insensitive
  part of the name; `limit` is 1..100 (default 20); `includeInactive` is true or false
  (default false). Unknown or repeated single parameters and bad values are 400.

The tenant is the `X-Tenant-Id` header; one tenant never sees another's records (a tenant
with no records sees an empty directory). Bad input is always a 4xx JSON answer, never 5xx.

`EmployeeDirectory` is also what hcm-ai-intelligence's backend reads and changes: the ERP
gives both plugins the same data, as `erp_backends.create_app` does.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

from erp_errors import http_error
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

PREFIX = "/api/v1/plugins/hcm-employee"
DEPARTMENTS = ("Engineering", "Finance", "Human Resources", "Operations", "Sales")
TENANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_LIMIT = 100
DEFAULT_LIMIT = 20
MAX_NAME = 100
SEARCH_PARAMS = frozenset({"department", "name", "limit", "includeInactive"})


def _employee(eid: str, name: str, department: str, title: str, hired: str, **extra: Any):
    return {
        "employeeId": eid,
        "name": name,
        "department": department,
        "title": title,
        "hireDate": hired,
        "status": extra.get("status", "ACTIVE"),
        "email": f"{eid.lower()}@example.invalid",
    }


SEED: dict[str, list[dict[str, Any]]] = {
    "acme": [
        _employee("E1001", "Alice Chen", "Engineering", "Staff Engineer", "2018-03-12"),
        _employee("E1002", "Bruno Martins", "Engineering", "Software Engineer", "2021-07-01"),
        _employee("E1003", "Chloé Dubois", "Sales", "Account Executive", "2019-11-04"),
        _employee("E1004", "Dmitri Ivanov", "Finance", "Controller", "2016-01-18"),
        _employee(
            "E1005", "Erin O'Neil", "Sales", "Sales Manager", "2015-05-25", status="INACTIVE"
        ),
        _employee("E1006", "Alina Popescu", "Human Resources", "HR Partner", "2022-02-14"),
    ],
    "globex": [
        # The same id as acme's Alice: a different person in a different tenant.
        _employee("E1001", "Ivo Novak", "Operations", "Logistics Lead", "2017-09-03"),
        _employee("E2002", "Farah Haddad", "Engineering", "Engineering Manager", "2020-04-20"),
        _employee("E2003", "Hana Sato", "Human Resources", "Recruiter", "2023-06-05"),
    ],
}


class BadRequest(Exception):
    """Input the backend refuses: a 400 answer with this message."""


class EmployeeDirectory:
    """Employee records per tenant. Every method copies, so callers never share state."""

    departments = DEPARTMENTS

    def __init__(self, seed: dict[str, Iterable[dict[str, Any]]] | None = None) -> None:
        source = SEED if seed is None else seed
        self._tenants: dict[str, dict[str, dict[str, Any]]] = {
            tenant: {e["employeeId"]: copy.deepcopy(e) for e in employees}
            for tenant, employees in source.items()
        }

    def get(self, tenant: str, employee_id: str) -> dict[str, Any] | None:
        record = self._tenants.get(tenant, {}).get(employee_id)
        return copy.deepcopy(record) if record is not None else None

    def all(self, tenant: str, *, include_inactive: bool = True) -> list[dict[str, Any]]:
        records = sorted(self._tenants.get(tenant, {}).values(), key=lambda e: e["employeeId"])
        return [copy.deepcopy(e) for e in records if include_inactive or e["status"] == "ACTIVE"]

    def search(
        self,
        tenant: str,
        *,
        departments: Iterable[str] = (),
        name: str | None = None,
        include_inactive: bool = False,
    ) -> list[dict[str, Any]]:
        wanted = set(departments)
        needle = name.casefold() if name else None
        return [
            e
            for e in self.all(tenant, include_inactive=include_inactive)
            if (not wanted or e["department"] in wanted)
            and (needle is None or needle in e["name"].casefold())
        ]

    def transfer(self, tenant: str, employee_id: str, department: str) -> dict[str, Any]:
        """Move an employee; KeyError when there is no such employee in the tenant."""
        record = self._tenants.get(tenant, {})[employee_id]
        record["department"] = department
        return copy.deepcopy(record)


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"status": status, "error": message}, status_code=status)


def tenant_of(request: Request) -> str:
    tenant = request.headers.get("x-tenant-id", "")
    if not TENANT.match(tenant):
        raise BadRequest("the X-Tenant-Id header must name a tenant ([A-Za-z0-9_.-], 1-64)")
    return tenant


def canonical_department(value: str) -> str:
    """The department's canonical name (case-insensitive match); BadRequest otherwise."""
    for department in DEPARTMENTS:
        if value.casefold() == department.casefold():
            return department
    raise BadRequest(f"unknown department {value[:64]!r}; known: {', '.join(DEPARTMENTS)}")


def parse_bool(value: str, name: str) -> bool:
    if value in ("true", "false"):
        return value == "true"
    raise BadRequest(f"{name} must be true or false")


def parse_limit(value: str) -> int:
    if not re.fullmatch(r"[0-9]{1,4}", value) or not 1 <= int(value) <= MAX_LIMIT:
        raise BadRequest(f"limit must be an integer from 1 to {MAX_LIMIT}")
    return int(value)


def parse_name(value: str) -> str:
    if not value.strip() or len(value) > MAX_NAME:
        raise BadRequest(f"name must be 1 to {MAX_NAME} characters, not blank")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise BadRequest("name must not contain control characters")
    return value.strip()


def single(items: list[tuple[str, str]], name: str) -> str | None:
    values = [v for k, v in items if k == name]
    if len(values) > 1:
        raise BadRequest(f"{name} may be given only once")
    return values[0] if values else None


def search_arguments(request: Request) -> dict[str, Any]:
    """The search filters from the query string; BadRequest for anything off."""
    items = request.query_params.multi_items()
    unknown = sorted({k for k, _ in items} - SEARCH_PARAMS)
    if unknown:
        known = ", ".join(sorted(SEARCH_PARAMS))
        raise BadRequest(f"unknown query parameter {unknown[0][:64]!r}; known: {known}")
    limit = single(items, "limit")
    name = single(items, "name")
    inactive = single(items, "includeInactive")
    include_inactive = parse_bool(inactive, "includeInactive") if inactive is not None else False
    return {
        "departments": [canonical_department(v) for k, v in items if k == "department"],
        "name": parse_name(name) if name is not None else None,
        "include_inactive": include_inactive,
        "limit": parse_limit(limit) if limit is not None else DEFAULT_LIMIT,
    }


def routes(directory: EmployeeDirectory) -> list[Route]:
    async def get_employee(request: Request) -> Response:
        try:
            tenant = tenant_of(request)
        except BadRequest as exc:
            return error(400, str(exc))
        employee_id = request.path_params["employeeId"]
        record = directory.get(tenant, employee_id)
        if record is None:
            return error(404, f"no employee {employee_id[:64]!r} in tenant {tenant!r}")
        return JSONResponse(record)

    async def search(request: Request) -> Response:
        try:
            tenant = tenant_of(request)
            arguments = search_arguments(request)
        except BadRequest as exc:
            return error(400, str(exc))
        limit = arguments.pop("limit")
        found = directory.search(tenant, **arguments)
        return JSONResponse(
            {"tenantId": tenant, "total": len(found), "items": found[:limit], "limit": limit}
        )

    return [
        Route(f"{PREFIX}/employees", search, methods=["GET"]),
        Route(f"{PREFIX}/employees/{{employeeId}}", get_employee, methods=["GET"]),
    ]


def create_app(directory: EmployeeDirectory | None = None) -> Starlette:
    """hcm-employee's backend on its own (a fresh seeded directory unless one is given)."""
    app = Starlette(
        routes=routes(directory if directory is not None else EmployeeDirectory()),
        exception_handlers={HTTPException: http_error},
    )
    # Starlette would answer `/x/` with a bodyless 307; every answer here is JSON
    # (spec: erp.md#what-the-endpoint-must-answer).
    app.router.redirect_slashes = False
    return app
