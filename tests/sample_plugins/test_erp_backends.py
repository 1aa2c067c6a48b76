"""The sample ERP plugins: their tool files, their backends over real HTTP, and every tool
dispatched (reference_host.erp.dispatch) against the running backends.

The backends run with uvicorn on 127.0.0.1 (`serve_backends`): one module-wide server for
the read-only tests, a fresh one (fresh seeded data) for each test that changes records.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from conformance.schema_validation import schema_uri, validate
from plugin_spec.rest_handler import RestHandler
from reference_host.erp.dispatch import RestCall, dispatch
from sample_plugins.erp_backends import (
    PLUGINS,
    create_app,
    load_tool,
    plugin_root,
    serve_backends,
    tool_files,
)
from tests.conftest import REPO

ACME = {"X-Tenant-Id": "acme", "X-Actor": "alice@acme.example"}
GLOBEX = {"X-Tenant-Id": "globex", "X-Actor": "ivo@globex.example"}
EMPLOYEES = "/api/v1/plugins/hcm-employee/employees"
HEADCOUNT = "/api/v1/plugins/hcm-ai-intelligence/reports/headcount"
SUMMARY = "/api/v1/plugins/hcm-ai-intelligence/departments/{}/summary"
TRANSFER = "/api/v1/plugins/hcm-ai-intelligence/employees/{}/transfer"
E1_FIELDS = {
    "toolCode",
    "name",
    "description",
    "inputSchema",
    "handlerType",
    "handlerConfig",
    "requiredPermission",
    "applicationCode",
    "riskLevel",
    "strictPermissionCheck",
}
HELLO_AS_IN_THE_SEED = {
    "toolCode": "hello.greeting.get",
    "name": "Get Hello Greeting",
    "description": "Returns hello-plugin's demo greeting for the current tenant.",
    "inputSchema": {"type": "object", "properties": {}},
    "handlerType": "REST",
    "handlerConfig": {"path": "/api/v1/plugins/hello-plugin/greeting", "method": "GET"},
    "requiredPermission": "HELLO_PLUGIN_DEMO",
    "applicationCode": "hello-plugin",
    "riskLevel": "LOW",
    "strictPermissionCheck": False,
}
TOOLS = {load_tool(path)["toolCode"]: load_tool(path) for path in tool_files()}


@pytest.fixture(scope="module")
def erp() -> Iterator[str]:
    """The backends for read-only tests (nothing in this module's read tests changes data)."""
    with serve_backends() as base_url:
        yield base_url


@pytest.fixture
def fresh_erp() -> Iterator[str]:
    """Backends with freshly seeded data, for a test that changes records."""
    with serve_backends() as base_url:
        yield base_url


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False, timeout=10) as client:
        yield client


def ids(response: httpx.Response) -> list[str]:
    return [e["employeeId"] for e in response.json()["items"]]


def answered(response: httpx.Response) -> Any:
    """The JSON body of a 200 answer: what assert_refused is to a refusal."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()


def assert_refused(response: httpx.Response, status: int, text: str = "") -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["status"] == status
    assert text in body["error"]


# --------------------------------------------------------------------------- tool files


def test_the_three_plugins_and_their_tools() -> None:
    assert PLUGINS == ("hello-plugin", "hcm-employee", "hcm-ai-intelligence")
    assert sorted(TOOLS) == [
        "hcm-ai-intelligence.department.describe",
        "hcm-ai-intelligence.employee.search",
        "hcm-ai-intelligence.employee.transfer",
        "hcm-ai-intelligence.headcount.report",
        "hcm-employee.employee.get",
        "hcm-employee.employee.search",
        "hello.greeting.get",
    ]


def test_hello_tool_is_the_seed_example_verbatim() -> None:
    assert TOOLS["hello.greeting.get"] == HELLO_AS_IN_THE_SEED


@pytest.mark.parametrize("path", tool_files(), ids=lambda p: p.name)
def test_every_tool_file_has_the_e1_fields(path: Path) -> None:
    tool = load_tool(path)
    plugin = path.parents[2].name
    assert set(tool) == E1_FIELDS
    assert path.name == f"{tool['toolCode']}.json"
    assert tool["applicationCode"] == plugin
    assert tool["handlerType"] == "REST"
    assert tool["riskLevel"] in ("LOW", "MEDIUM", "HIGH")
    assert isinstance(tool["strictPermissionCheck"], bool)
    assert re.fullmatch(r"[A-Z][A-Z0-9_]+", tool["requiredPermission"])
    assert tool["name"].strip() and len(tool["description"]) >= 40
    assert validate(tool, schema_uri("erp-tool.schema.json")) == []
    Draft202012Validator.check_schema(tool["inputSchema"])
    handler = RestHandler.from_config(tool["handlerConfig"])
    assert handler.path.startswith("/api/v1/plugins/")
    schema = tool["inputSchema"]
    assert schema["type"] == "object"
    for name in (*handler.path_params, *handler.query_params):
        assert name in schema["properties"], name
    for name in handler.path_params:
        assert name in schema.get("required", []), name
    if tool["toolCode"] != "hello.greeting.get":  # the seed's file, kept verbatim
        assert tool["toolCode"].startswith(f"{plugin}.")
        assert schema["additionalProperties"] is False
        assert isinstance(schema["required"], list)
        for name, prop in schema["properties"].items():
            assert prop.get("description", "").strip(), name


def test_risk_levels_and_namespaces() -> None:
    risks = {code: (t["handlerConfig"]["method"], t["riskLevel"]) for code, t in TOOLS.items()}
    for code, (method, risk) in risks.items():
        if method != "GET":
            assert risk != "LOW", code  # the spec (erp.md) warns on a mutating method with LOW
    for code, tool in TOOLS.items():
        assert tool["strictPermissionCheck"] is (tool["riskLevel"] == "HIGH"), code
    transfer = TOOLS["hcm-ai-intelligence.employee.transfer"]
    assert (transfer["riskLevel"], transfer["strictPermissionCheck"]) == ("HIGH", True)
    assert transfer["handlerConfig"]["bodyFromInput"] is True
    cross = TOOLS["hcm-ai-intelligence.employee.search"]
    assert cross["applicationCode"] == "hcm-ai-intelligence"
    assert cross["handlerConfig"]["path"] == EMPLOYEES  # hcm-employee's namespace (spec: erp.md)
    names = [code.replace(".", "_") for code in TOOLS]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name) for name in names)


def test_plugin_folders_are_erp_profile() -> None:
    for plugin in PLUGINS:
        root = plugin_root(plugin)
        assert (root / "metadata" / "tool").is_dir()
        assert not (root / "manifest.json").exists()
        assert (root / "backend" / "app.py").is_file()


# --------------------------------------------------------------------------- hello-plugin


async def test_hello_greets_the_tenant(client: httpx.AsyncClient, erp: str) -> None:
    url = f"{erp}/api/v1/plugins/hello-plugin/greeting"
    acme = await client.get(url, headers=ACME)
    globex = await client.get(url, headers={"X-Tenant-Id": "globex"})
    assert answered(acme) == {
        "plugin": "hello-plugin",
        "tenantId": "acme",
        "greeting": "Hello, acme!",
        "actor": "alice@acme.example",
    }
    assert answered(globex) == {
        "plugin": "hello-plugin",
        "tenantId": "globex",
        "greeting": "Hello, globex!",
    }


@pytest.mark.parametrize(
    "headers", [{}, {"X-Tenant-Id": ""}, {"X-Tenant-Id": "ac me"}, {"X-Tenant-Id": "a" * 65}]
)
async def test_hello_needs_a_tenant(client: httpx.AsyncClient, erp: str, headers: dict) -> None:
    response = await client.get(f"{erp}/api/v1/plugins/hello-plugin/greeting", headers=headers)
    assert_refused(response, 400, "X-Tenant-Id")


async def test_unknown_routes_and_methods_are_json(client: httpx.AsyncClient, erp: str) -> None:
    assert_refused(await client.get(f"{erp}/api/v1/plugins/nope", headers=ACME), 404)
    assert_refused(await client.get(f"{erp}/api/v1/admin/cache", headers=ACME), 404)
    response = await client.delete(f"{erp}/api/v1/plugins/hello-plugin/greeting", headers=ACME)
    assert_refused(response, 405)
    response = await client.post(f"{erp}{EMPLOYEES}/E1001", headers=ACME)
    assert_refused(response, 405)


# --------------------------------------------------------------------------- hcm-employee


async def test_get_employee(client: httpx.AsyncClient, erp: str) -> None:
    assert answered(await client.get(f"{erp}{EMPLOYEES}/E1001", headers=ACME)) == {
        "employeeId": "E1001",
        "name": "Alice Chen",
        "department": "Engineering",
        "title": "Staff Engineer",
        "hireDate": "2018-03-12",
        "status": "ACTIVE",
        "email": "e1001@example.invalid",
    }


async def test_tenants_see_only_their_own_employees(client: httpx.AsyncClient, erp: str) -> None:
    acme = (await client.get(f"{erp}{EMPLOYEES}/E1001", headers=ACME)).json()
    globex = (await client.get(f"{erp}{EMPLOYEES}/E1001", headers=GLOBEX)).json()
    assert (acme["name"], globex["name"]) == ("Alice Chen", "Ivo Novak")
    assert_refused(await client.get(f"{erp}{EMPLOYEES}/E1002", headers=GLOBEX), 404, "E1002")
    assert_refused(await client.get(f"{erp}{EMPLOYEES}/E2002", headers=ACME), 404, "E2002")
    other = {"X-Tenant-Id": "initech"}
    assert_refused(await client.get(f"{erp}{EMPLOYEES}/E1001", headers=other), 404)
    assert (await client.get(f"{erp}{EMPLOYEES}", headers=other)).json() == {
        "tenantId": "initech",
        "total": 0,
        "items": [],
        "limit": 20,
    }
    acme_ids = ids(await client.get(f"{erp}{EMPLOYEES}?includeInactive=true", headers=ACME))
    globex_ids = ids(await client.get(f"{erp}{EMPLOYEES}?includeInactive=true", headers=GLOBEX))
    assert acme_ids == ["E1001", "E1002", "E1003", "E1004", "E1005", "E1006"]
    assert globex_ids == ["E1001", "E2002", "E2003"]


@pytest.mark.parametrize(
    "segment",
    ["E9999", "e1001", "E1001%2F..", "%2E%2E", "..%2F..%2Fadmin", "%00", "%FF", "x" * 300],
)
async def test_unknown_employee_is_404(client: httpx.AsyncClient, erp: str, segment: str) -> None:
    assert_refused(await client.get(f"{erp}{EMPLOYEES}/{segment}", headers=ACME), 404)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", ["E1001", "E1002", "E1003", "E1004", "E1006"]),
        ("department=Engineering", ["E1001", "E1002"]),
        ("department=sales", ["E1003"]),
        ("department=Sales&includeInactive=true", ["E1003", "E1005"]),
        ("department=Sales&department=Finance", ["E1003", "E1004"]),
        ("department=Human%20Resources", ["E1006"]),
        ("name=al", ["E1001", "E1006"]),
        ("name=CHLO%C3%89", ["E1003"]),
        ("name=%20bruno%20", ["E1002"]),
        ("name=zzz", []),
        ("limit=2", ["E1001", "E1002"]),
        ("limit=100&includeInactive=false", ["E1001", "E1002", "E1003", "E1004", "E1006"]),
        ("name=o&department=Sales&limit=1&includeInactive=true", ["E1003"]),
    ],
)
async def test_search(client: httpx.AsyncClient, erp: str, query: str, expected: list) -> None:
    response = await client.get(f"{erp}{EMPLOYEES}?{query}", headers=ACME)
    assert answered(response)["tenantId"] == "acme"
    assert ids(response) == expected


async def test_search_total_counts_past_the_limit(client: httpx.AsyncClient, erp: str) -> None:
    body = (await client.get(f"{erp}{EMPLOYEES}?limit=1", headers=ACME)).json()
    assert (body["total"], len(body["items"]), body["limit"]) == (5, 1, 1)


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("limit=0", "limit must be an integer from 1 to 100"),
        ("limit=101", "limit must be"),
        ("limit=abc", "limit must be"),
        ("limit=1.5", "limit must be"),
        ("limit=-1", "limit must be"),
        ("limit=", "limit must be"),
        ("limit=99999999999999999999", "limit must be"),
        ("limit=1&limit=2", "limit may be given only once"),
        ("department=Marketing", "unknown department 'Marketing'"),
        ("department=", "unknown department ''"),
        ("department=Sales&department=Nope", "unknown department 'Nope'"),
        ("name=", "name must be 1 to 100 characters"),
        ("name=%20%20", "name must be 1 to 100 characters"),
        ("name=" + "a" * 101, "name must be 1 to 100 characters"),
        ("name=a%00b", "control characters"),
        ("name=a&name=b", "name may be given only once"),
        ("includeInactive=yes", "includeInactive must be true or false"),
        ("includeInactive=True", "includeInactive must be true or false"),
        ("includeInactive=", "includeInactive must be true or false"),
        ("sort=name", "unknown query parameter 'sort'"),
        ("%FF=1", "unknown query parameter"),
    ],
)
async def test_search_rejects_bad_input(
    client: httpx.AsyncClient, erp: str, query: str, reason: str
) -> None:
    assert_refused(await client.get(f"{erp}{EMPLOYEES}?{query}", headers=ACME), 400, reason)


@pytest.mark.parametrize(
    "headers", [{}, {"X-Tenant-Id": "../acme"}, {"X-Tenant-Id": "acme;globex"}]
)
async def test_employee_endpoints_need_a_tenant(
    client: httpx.AsyncClient, erp: str, headers: dict
) -> None:
    assert_refused(await client.get(f"{erp}{EMPLOYEES}", headers=headers), 400, "X-Tenant-Id")
    response = await client.get(f"{erp}{EMPLOYEES}/E1001", headers=headers)
    assert_refused(response, 400, "X-Tenant-Id")


async def test_odd_input_never_gets_a_5xx(client: httpx.AsyncClient, erp: str) -> None:
    odd = ["%", "%%", "%G0", "&&&", "=", "==x", "a=b=c", "limit=%F0%9F%92%A9", "name=%C0%AF"]
    for query in odd:
        response = await client.get(f"{erp}{EMPLOYEES}?{query}", headers=ACME)
        assert response.status_code < 500, (query, response.status_code)
        assert response.headers["content-type"] == "application/json"


# --------------------------------------------------------------------------- hcm-ai-intelligence


async def test_headcount_report(client: httpx.AsyncClient, erp: str) -> None:
    async def report(body: dict, headers: dict = ACME) -> dict:
        response = await client.post(f"{erp}{HEADCOUNT}", json=body, headers=headers)
        return answered(response)

    by_department = await report({"groupBy": "department"})
    assert by_department == {
        "tenantId": "acme",
        "groupBy": "department",
        "total": 5,
        "groups": [
            {"key": "Engineering", "count": 2},
            {"key": "Finance", "count": 1},
            {"key": "Human Resources", "count": 1},
            {"key": "Sales", "count": 1},
        ],
    }
    status = await report({"groupBy": "status", "includeInactive": True})
    assert status["groups"] == [{"key": "ACTIVE", "count": 5}, {"key": "INACTIVE", "count": 1}]
    titles = await report({"groupBy": "title", "department": ["sales"], "includeInactive": True})
    assert titles["groups"] == [
        {"key": "Account Executive", "count": 1},
        {"key": "Sales Manager", "count": 1},
    ]
    globex = await report({"groupBy": "department"}, GLOBEX)
    assert globex["total"] == 3
    assert {"key": "Operations", "count": 1} in globex["groups"]


@pytest.mark.parametrize(
    ("body", "status", "reason"),
    [
        ({}, 400, "missing field 'groupBy'"),
        ({"groupBy": "salary"}, 400, "groupBy must be one of"),
        ({"groupBy": ["department"]}, 400, "groupBy must be one of"),
        ({"groupBy": "title", "extra": 1}, 400, "unknown field 'extra'"),
        ({"groupBy": "title", "department": "Sales"}, 400, "department must be a list"),
        ({"groupBy": "title", "department": ["Nope"]}, 400, "unknown department 'Nope'"),
        ({"groupBy": "title", "department": [1]}, 400, "unknown department 1"),
        ({"groupBy": "title", "department": ["Sales"] * 6}, 400, "department must be a list"),
        ({"groupBy": "title", "includeInactive": "true"}, 400, "includeInactive must be"),
        ([{"groupBy": "title"}], 400, "must be a JSON object"),
        (b"{not json", 400, "not valid JSON"),
        (b"\xff\xfe", 400, "not valid JSON"),
        (b'{"groupBy": "title", "pad": "' + b"x" * 70_000 + b'"}', 413, "at most"),
    ],
)
async def test_headcount_rejects_bad_input(
    client: httpx.AsyncClient, erp: str, body: Any, status: int, reason: str
) -> None:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {**ACME, "Content-Type": "application/json"}
    response = await client.post(f"{erp}{HEADCOUNT}", content=content, headers=headers)
    assert_refused(response, status, reason)


async def test_headcount_needs_a_json_body(client: httpx.AsyncClient, erp: str) -> None:
    response = await client.post(f"{erp}{HEADCOUNT}", data={"groupBy": "title"}, headers=ACME)
    assert_refused(response, 415, "application/json")


async def test_department_summary(client: httpx.AsyncClient, erp: str) -> None:
    hr = await client.get(f"{erp}{SUMMARY.format('Human%20Resources')}", headers=ACME)
    assert hr.json() == {
        "tenantId": "acme",
        "department": "Human Resources",
        "headcount": 1,
        "activeHeadcount": 1,
        "titles": {"HR Partner": 1},
        "longestServing": {
            "employeeId": "E1006",
            "name": "Alina Popescu",
            "hireDate": "2022-02-14",
        },
    }
    sales = (await client.get(f"{erp}{SUMMARY.format('sales')}", headers=ACME)).json()
    assert (sales["department"], sales["headcount"], sales["activeHeadcount"]) == ("Sales", 2, 1)
    ops = (await client.get(f"{erp}{SUMMARY.format('Operations')}", headers=ACME)).json()
    assert (ops["headcount"], ops["longestServing"]) == (0, None)
    globex = (await client.get(f"{erp}{SUMMARY.format('Operations')}", headers=GLOBEX)).json()
    assert globex["longestServing"]["name"] == "Ivo Novak"


@pytest.mark.parametrize("department", ["Marketing", "%2E%2E", "Sales%2F..", "%20"])
async def test_unknown_department_is_404(
    client: httpx.AsyncClient, erp: str, department: str
) -> None:
    response = await client.get(f"{erp}{SUMMARY.format(department)}", headers=ACME)
    assert_refused(response, 404)


async def test_transfer_moves_an_employee_in_one_tenant_only(
    client: httpx.AsyncClient, fresh_erp: str
) -> None:
    body = {"employeeId": "E1002", "targetDepartment": "sales", "reason": "Team change"}
    body["effectiveDate"] = "2026-01-05"
    response = await client.post(f"{fresh_erp}{TRANSFER.format('E1002')}", json=body, headers=ACME)
    assert answered(response) == {
        "transferId": "TR-acme-0001",
        "status": "COMPLETED",
        "employeeId": "E1002",
        "fromDepartment": "Engineering",
        "toDepartment": "Sales",
        "effectiveDate": "2026-01-05",
        "reason": "Team change",
        "requestedBy": "alice@acme.example",
    }
    moved = (await client.get(f"{fresh_erp}{EMPLOYEES}/E1002", headers=ACME)).json()
    assert moved["department"] == "Sales"
    sales = await client.get(f"{fresh_erp}{EMPLOYEES}?department=Sales", headers=ACME)
    assert ids(sales) == ["E1002", "E1003"]
    again = await client.post(f"{fresh_erp}{TRANSFER.format('E1002')}", json=body, headers=ACME)
    assert_refused(again, 409, "already in Sales")
    # globex has no E1002, and its own E1001 is untouched by anything acme does
    foreign = await client.post(f"{fresh_erp}{TRANSFER.format('E1002')}", json=body, headers=GLOBEX)
    assert_refused(foreign, 404, "no employee 'E1002' in tenant 'globex'")
    globex = (await client.get(f"{fresh_erp}{EMPLOYEES}/E1001", headers=GLOBEX)).json()
    assert globex["department"] == "Operations"


@pytest.mark.parametrize(
    ("path_id", "body", "status", "reason"),
    [
        ("E9999", {"targetDepartment": "Sales", "reason": "x"}, 404, "no employee 'E9999'"),
        ("E1005", {"targetDepartment": "Finance", "reason": "x"}, 409, "is not active"),
        ("E1001", {"targetDepartment": "Engineering", "reason": "x"}, 409, "already in"),
        ("E1001", {"employeeId": "E1002", "targetDepartment": "Sales", "reason": "x"}, 400, ""),
        ("E1001", {"targetDepartment": "Nope", "reason": "x"}, 400, "unknown department"),
        ("E1001", {"targetDepartment": "Sales", "reason": "  "}, 400, "reason must be"),
        ("E1001", {"targetDepartment": "Sales", "reason": "x" * 501}, 400, "reason must be"),
        ("E1001", {"targetDepartment": "Sales", "reason": 7}, 400, "reason must be"),
        ("E1001", {"targetDepartment": "Sales"}, 400, "missing field 'reason'"),
        ("E1001", {"targetDepartment": "Sales", "reason": "x", "salary": 1}, 400, "unknown"),
        (
            "E1001",
            {"targetDepartment": "Sales", "reason": "x", "effectiveDate": "2026-02-30"},
            400,
            "not a real date",
        ),
        (
            "E1001",
            {"targetDepartment": "Sales", "reason": "x", "effectiveDate": "tomorrow"},
            400,
            "YYYY-MM-DD",
        ),
    ],
)
async def test_transfer_rejects_bad_input(
    client: httpx.AsyncClient, erp: str, path_id: str, body: dict, status: int, reason: str
) -> None:
    body = {"employeeId": path_id, **body}
    response = await client.post(f"{erp}{TRANSFER.format(path_id)}", json=body, headers=ACME)
    assert_refused(response, status, reason)


async def test_transfer_needs_an_actor(client: httpx.AsyncClient, erp: str) -> None:
    body = {"employeeId": "E1001", "targetDepartment": "Sales", "reason": "x"}
    response = await client.post(
        f"{erp}{TRANSFER.format('E1001')}", json=body, headers={"X-Tenant-Id": "acme"}
    )
    assert_refused(response, 400, "X-Actor")
    check = await client.get(f"{erp}{EMPLOYEES}/E1001", headers=ACME)
    assert check.json()["department"] == "Engineering"


# --------------------------------------------------------------------------- dispatch


ARGUMENTS: dict[str, dict[str, Any]] = {
    "hello.greeting.get": {},
    "hcm-employee.employee.get": {"employeeId": "E1003"},
    "hcm-employee.employee.search": {"department": "Engineering", "name": "a", "limit": 1},
    "hcm-ai-intelligence.employee.search": {
        "department": ["Sales", "Finance"],
        "includeInactive": True,
        "limit": 10,
    },
    "hcm-ai-intelligence.department.describe": {"department": "Human Resources"},
    "hcm-ai-intelligence.headcount.report": {"groupBy": "department", "department": ["Sales"]},
    "hcm-ai-intelligence.employee.transfer": {
        "employeeId": "E1001",
        "targetDepartment": "Finance",
        "reason": "Moves to the controlling team",
        "effectiveDate": "2026-03-01",
    },
}
EXPECTED: dict[str, Any] = {
    "hello.greeting.get": lambda r: r["greeting"] == "Hello, acme!",
    "hcm-employee.employee.get": lambda r: r["name"] == "Chloé Dubois",
    "hcm-employee.employee.search": lambda r: (
        [e["employeeId"] for e in r["items"]] == ["E1001"] and r["total"] == 2
    ),
    "hcm-ai-intelligence.employee.search": lambda r: (
        [e["employeeId"] for e in r["items"]] == ["E1003", "E1004", "E1005"]
    ),
    "hcm-ai-intelligence.department.describe": lambda r: r["headcount"] == 1,
    "hcm-ai-intelligence.headcount.report": lambda r: r["groups"] == [{"key": "Sales", "count": 1}],
    "hcm-ai-intelligence.employee.transfer": lambda r: (
        (r["fromDepartment"], r["toDepartment"]) == ("Engineering", "Finance")
    ),
}


def test_every_tool_has_sample_arguments_valid_for_its_schema() -> None:
    assert set(ARGUMENTS) == set(TOOLS) == set(EXPECTED)
    for code, arguments in ARGUMENTS.items():
        Draft202012Validator(TOOLS[code]["inputSchema"]).validate(arguments)


async def run_tool(
    client: httpx.AsyncClient, base_url: str, code: str, arguments: dict, headers: dict = ACME
) -> Any:
    handler = RestHandler.from_config(TOOLS[code]["handlerConfig"])
    call = RestCall(base_url, handler, arguments, headers["X-Tenant-Id"], headers["X-Actor"], 10)
    output = await dispatch(client, call)
    return output.output


@pytest.mark.parametrize("code", sorted(ARGUMENTS))
async def test_every_sample_tool_dispatches(
    client: httpx.AsyncClient, fresh_erp: str, code: str
) -> None:
    result = await run_tool(client, fresh_erp, code, ARGUMENTS[code])
    assert not (isinstance(result, dict) and result.get("success") is False), result
    assert EXPECTED[code](result), result


async def test_dispatched_transfer_is_seen_by_hcm_employee_tools(
    client: httpx.AsyncClient, fresh_erp: str
) -> None:
    code = "hcm-ai-intelligence.employee.transfer"
    result = await run_tool(client, fresh_erp, code, ARGUMENTS[code])
    assert result["status"] == "COMPLETED"
    after = await run_tool(client, fresh_erp, "hcm-employee.employee.get", {"employeeId": "E1001"})
    assert after["department"] == "Finance"
    globex = await run_tool(
        client, fresh_erp, "hcm-employee.employee.get", {"employeeId": "E1001"}, GLOBEX
    )
    assert globex["department"] == "Operations"
    again = await run_tool(client, fresh_erp, code, ARGUMENTS[code])
    assert again["success"] is False
    assert again["error"].startswith(
        "HTTP 409 from POST /api/v1/plugins/hcm-ai-intelligence/employees/E1001/transfer: "
    )


async def test_dispatch_keeps_tenants_apart(client: httpx.AsyncClient, erp: str) -> None:
    code = "hcm-ai-intelligence.employee.search"
    arguments = {"includeInactive": True}
    acme = await run_tool(client, erp, code, arguments)
    globex = await run_tool(client, erp, code, arguments, GLOBEX)
    assert [e["name"] for e in globex["items"]] == ["Ivo Novak", "Farah Haddad", "Hana Sato"]
    assert not {e["name"] for e in acme["items"]} & {e["name"] for e in globex["items"]}


@pytest.mark.parametrize(
    ("code", "arguments", "error"),
    [
        (
            "hcm-employee.employee.get",
            {"employeeId": "../E1001"},
            "path parameter 'employeeId' must not contain '/'",
        ),
        (
            "hcm-employee.employee.get",
            {"employeeId": ".."},
            "path parameter 'employeeId' must not be a dot segment",
        ),
        (
            "hcm-employee.employee.search",
            {"limit": 500},
            "HTTP 400 from GET /api/v1/plugins/hcm-employee/employees: "
            '{"status":400,"error":"limit must be an integer from 1 to 100"}',
        ),
        (
            "hcm-ai-intelligence.employee.search",
            {"department": ["Sales", "Marketing"]},
            "HTTP 400 from GET /api/v1/plugins/hcm-employee/employees: ",
        ),
        (
            "hcm-ai-intelligence.department.describe",
            {"department": "Sales/../../../admin"},
            "path parameter 'department' must not contain '/'",
        ),
        (
            "hcm-ai-intelligence.headcount.report",
            {"groupBy": "salary"},
            "HTTP 400 from POST /api/v1/plugins/hcm-ai-intelligence/reports/headcount: ",
        ),
        ("hcm-ai-intelligence.employee.transfer", {"targetDepartment": "Sales"}, "missing path"),
    ],
)
async def test_dispatch_of_bad_input_is_a_failure(
    client: httpx.AsyncClient, erp: str, code: str, arguments: dict, error: str
) -> None:
    result = await run_tool(client, erp, code, arguments)
    assert result["success"] is False
    assert result["error"].startswith(error), result["error"]


# --------------------------------------------------------------------------- running it


def test_create_app_is_fresh_each_time() -> None:
    assert create_app() is not create_app()


def test_serve_backends_stops_and_frees_its_port() -> None:
    with serve_backends() as base_url:
        port = httpx.URL(base_url).port
        assert httpx.get(f"{base_url}{EMPLOYEES}/E1001", headers=ACME).status_code == 200
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_runs_as_a_script(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    script = plugin_root("hello-plugin").parent / "erp_backends.py"
    log = (tmp_path / "server.log").open("w")
    process = subprocess.Popen(
        [sys.executable, str(script), "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
    )
    try:
        url = f"http://127.0.0.1:{port}/api/v1/plugins/hello-plugin/greeting"
        deadline = time.monotonic() + 60  # a bound on waiting, not a speed claim
        while True:
            try:
                response = httpx.get(url, headers=ACME, timeout=2)
                break
            except httpx.TransportError:
                assert process.poll() is None, (tmp_path / "server.log").read_text()
                assert time.monotonic() < deadline, "the script did not start serving"
                time.sleep(0.05)
        assert response.json()["greeting"] == "Hello, acme!"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.mark.parametrize("plugin", ["hello-plugin", "hcm-employee", "hcm-ai-intelligence"])
def test_sample_erp_plugin_passes_the_whole_kit(run_kit, plugin: str) -> None:
    """Static checks and the endpoint checks against the real backends on loopback."""
    with serve_backends() as url:
        result = run_kit(
            [REPO / "sample_plugins" / plugin],
            "--plugin-base-url",
            url,
            "--erp-tenant",
            "acme",
            "--conformance-strict",
        )
    assert result.reported() == set()
    assert result.result.ret == 0
    statuses = {r["requirement"] for r in result.report["results"] if r["status"] == "passed"}
    assert {"ERP-DYN-001", "ERP-DYN-002"} <= statuses
