"""ERP REST dispatch (spec: erp.md#path-and-query-parameters): every request exactly as it
goes out, and every way it fails.

respx stands in for the ERP in most tests; each test asserts the one request that went out
byte for byte (method, URL with its encoded path and query string, headers, body). The last
tests run against real Starlette apps served by uvicorn on 127.0.0.1, where the server's own
view of the request (raw path, decoded segments) shows a value stayed in its segment.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import respx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from plugin_spec.rest_handler import DispatchError, RestHandler, encode_segment
from reference_host.erp.dispatch import MAX_RESPONSE_BYTES, RestCall, dispatch
from reference_host.tools.callbacks import ToolResult
from sample_plugins.erp_backends import load_tool, serve_backends, tool_files

BASE = "http://erp.test"
TENANT = "acme"
ACTOR = "alice@acme.example"
EMPLOYEE = "/api/v1/plugins/hcm-employee/employees/{employeeId}"
SEARCH = "/api/v1/plugins/hcm-employee/employees"
NO_BODY = object()


def get_employee() -> RestHandler:
    return RestHandler(EMPLOYEE, "GET", path_params=("employeeId",))


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False) as client:
        yield client


@pytest.fixture
def erp() -> Iterator[respx.MockRouter]:
    """The mocked ERP: any request no route expects fails the test."""
    with respx.mock(assert_all_called=True, assert_all_mocked=True) as router:
        yield router


@pytest.fixture
def nothing_sent() -> Iterator[respx.MockRouter]:
    """An ERP that must not be called at all."""
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        catch_all = router.route().respond(500)
        yield router
        assert not catch_all.called, "a request went out"


async def call(
    client: httpx.AsyncClient,
    handler: RestHandler,
    arguments: Any,
    *,
    base_url: str = BASE,
    tenant: str = TENANT,
    actor: str = ACTOR,
    timeout: float = 30.0,
    max_response_bytes: int = MAX_RESPONSE_BYTES,
) -> Any:
    rest_call = RestCall(base_url, handler, arguments, tenant, actor, timeout)
    output = await dispatch(client, rest_call, max_response_bytes)
    assert isinstance(output, ToolResult)
    return output.output


def the_request(route: respx.Route) -> httpx.Request:
    assert route.call_count == 1, route.call_count
    return route.calls.last.request


def assert_sent(request: httpx.Request, method: str, url: str, body: Any = NO_BODY) -> None:
    """The request is exactly this: method, URL as sent, the ERP headers, the JSON body."""
    assert request.method == method
    assert str(request.url) == url
    assert request.url.raw_path == url.removeprefix(BASE).encode("ascii")
    assert request.headers["X-Tenant-Id"] == TENANT
    assert request.headers["X-Actor"] == ACTOR
    assert request.headers["Accept"] == "application/json"
    if body is NO_BODY:
        assert request.content == b""
        assert "content-type" not in request.headers
    else:
        assert request.headers["Content-Type"] == "application/json"
        assert json.loads(request.content) == body


def failure_of(result: Any) -> str:
    assert isinstance(result, dict) and result.get("success") is False, result
    assert set(result) == {"success", "error"}
    return result["error"]


# --------------------------------------------------------------------------- handlerConfig


def test_from_config_reads_every_field() -> None:
    handler = RestHandler.from_config(
        {
            "path": "/api/v1/plugins/p/items/{id}",
            "method": "patch",
            "pathParams": ["id"],
            "queryParams": ["dryRun", "tag"],
            "bodyFromInput": True,
        }
    )
    assert handler == RestHandler(
        "/api/v1/plugins/p/items/{id}", "PATCH", ("id",), ("dryRun", "tag"), True
    )


def test_from_config_defaults_as_in_the_seed() -> None:
    config = {"path": "/api/v1/plugins/hello-plugin/greeting", "method": "GET"}
    assert RestHandler.from_config(config) == RestHandler(
        "/api/v1/plugins/hello-plugin/greeting", "GET", (), (), False
    )
    assert RestHandler.from_config({**config, "pathParams": None, "bodyFromInput": None}) == (
        RestHandler("/api/v1/plugins/hello-plugin/greeting", "GET")
    )


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ([], "must be an object"),
        ({"method": "GET"}, "path must be a string"),
        ({"path": "api/v1/plugins/p", "method": "GET"}, "starting with '/'"),
        ({"path": "/api/v1/plugins/p", "method": "HEAD"}, "method must be one of"),
        ({"path": "/api/v1/plugins/p", "method": 1}, "method must be one of"),
        ({"path": "/api/v1/plugins/p", "method": "GET", "pathParams": "id"}, "list of non-empty"),
        ({"path": "/a/{id}", "method": "GET", "pathParams": ["id", "id"]}, "lists a name twice"),
        ({"path": "/a", "method": "GET", "queryParams": [""]}, "list of non-empty"),
        ({"path": "/a", "method": "GET", "bodyFromInput": "yes"}, "must be a boolean"),
        ({"path": "/a/{id}", "method": "GET"}, "{id} is not listed in pathParams"),
        ({"path": "/a", "method": "GET", "pathParams": ["id"]}, "has no {id} placeholder"),
        ({"path": "/a/{}", "method": "GET"}, "empty {} placeholder"),
        ({"path": "/a/{id}/{id}", "method": "GET", "pathParams": ["id"]}, "repeats"),
        ({"path": "/a/{id", "method": "GET", "pathParams": ["id"]}, "unbalanced brace"),
    ],
)
def test_from_config_rejects(config: Any, reason: str) -> None:
    with pytest.raises(ValueError, match=reason.replace("{", r"\{").replace("(", r"\(")):
        RestHandler.from_config(config)


def test_every_sample_handler_config_loads() -> None:
    files = tool_files()
    assert len(files) >= 7
    for path in files:
        RestHandler.from_config(load_tool(path)["handlerConfig"])


# --------------------------------------------------------------------------- requests


async def test_get_with_a_path_param(client: httpx.AsyncClient, erp: respx.MockRouter) -> None:
    url = f"{BASE}/api/v1/plugins/hcm-employee/employees/E1001"
    route = erp.get(url).respond(json={"employeeId": "E1001", "name": "Zoë"})
    result = await call(client, get_employee(), {"employeeId": "E1001", "extra": 1})
    assert result == {"employeeId": "E1001", "name": "Zoë"}
    assert_sent(the_request(route), "GET", url)


async def test_the_answer_is_the_json_re_serialised(
    client: httpx.AsyncClient, erp: respx.MockRouter
) -> None:
    erp.get(f"{BASE}/api/v1/plugins/hcm-employee/employees/E1").respond(
        content=b'  {"name" : "Zo\\u00eb",\n "n": [1, 2.5, null]}  ',
        headers={"Content-Type": "application/json"},
    )
    output = await dispatch(
        client, RestCall(BASE, get_employee(), {"employeeId": "E1"}, TENANT, ACTOR)
    )
    assert output.text() == '{"name": "Zoë", "n": [1, 2.5, null]}'


@pytest.mark.parametrize(
    ("value", "segment"),
    [
        ("...", "..."),
        ("..x", "..x"),
        ("%2e%2e", "%252e%252e"),
        ("%2F", "%252F"),
        ("?x=1", "%3Fx%3D1"),
        ("#top", "%23top"),
        ("a b+c", "a%20b%2Bc"),
        ("Zoë東京", "Zo%C3%AB%E6%9D%B1%E4%BA%AC"),
        ("{employeeId}", "%7BemployeeId%7D"),
        ("a;b=c", "a%3Bb%3Dc"),
        (1001, "1001"),
        (2.5, "2.5"),
        (True, "true"),
    ],
)
async def test_a_path_param_value_stays_in_one_segment(
    client: httpx.AsyncClient, erp: respx.MockRouter, value: Any, segment: str
) -> None:
    url = f"{BASE}/api/v1/plugins/hcm-employee/employees/{segment}"
    route = erp.get(url).respond(json={"ok": True})
    assert await call(client, get_employee(), {"employeeId": value}) == {"ok": True}
    request = the_request(route)
    assert_sent(request, "GET", url)
    segments = request.url.raw_path.split(b"/")
    assert segments[:-1] == [b"", b"api", b"v1", b"plugins", b"hcm-employee", b"employees"]
    assert segments[-1] == segment.encode()


def test_encode_segment_never_yields_a_dot_segment_or_separator() -> None:
    for value in ["...", "?", "#", "%", "%2F", "%2e%2e", "\x00", " ", "a;b"]:
        segment = encode_segment(value)
        assert segment not in (".", "..")
        assert not set(segment) & set("/?#\\ ;")


@pytest.mark.parametrize(
    "value",
    ["a/b", "../../admin", "a\\b", "Zoë/東京", "\uff0f", "\uff3c", "./", "/"],
)
def test_a_path_value_with_a_separator_is_refused(value: str) -> None:
    with pytest.raises(DispatchError, match="must not contain '/' or"):
        encode_segment(value, "id")


@pytest.mark.parametrize(
    "value", [".", "..", "..;", "..;x=1", ".;", "\uff0e\uff0e", "\u2024\u2024"]
)
def test_a_dot_segment_value_is_refused(value: str) -> None:
    with pytest.raises(DispatchError, match="must not be a dot segment"):
        encode_segment(value, "id")


async def test_get_with_query_params(client: httpx.AsyncClient, erp: respx.MockRouter) -> None:
    handler = RestHandler(
        SEARCH, "GET", query_params=("name", "department", "limit", "ratio", "active", "gone")
    )
    url = (
        f"{BASE}{SEARCH}?name=Zo%C3%AB+%26+co%3D%3F%2F"
        "&department=Sales&department=Human+Resources&department=7"
        "&limit=20&ratio=0.5&active=false"
    )
    route = erp.get(url).respond(json={"items": []})
    arguments = {
        "name": "Zoë & co=?/",
        "department": ["Sales", None, "Human Resources", 7],
        "limit": 20,
        "ratio": 0.5,
        "active": False,
        "gone": None,
        "notAQueryParam": "stays out",
    }
    assert await call(client, handler, arguments) == {"items": []}
    request = the_request(route)
    assert_sent(request, "GET", url)
    assert request.url.params.multi_items() == [
        ("name", "Zoë & co=?/"),
        ("department", "Sales"),
        ("department", "Human Resources"),
        ("department", "7"),
        ("limit", "20"),
        ("ratio", "0.5"),
        ("active", "false"),
    ]


async def test_query_params_absent_from_the_input_are_left_out(
    client: httpx.AsyncClient, erp: respx.MockRouter
) -> None:
    handler = RestHandler(SEARCH, "GET", query_params=("name", "limit", "active"))
    route = erp.get(f"{BASE}{SEARCH}?active=true").respond(json=[])
    assert await call(client, handler, {"active": True}) == []
    assert_sent(the_request(route), "GET", f"{BASE}{SEARCH}?active=true")

    erp.routes.clear()
    bare = erp.get(f"{BASE}{SEARCH}").respond(json=[])
    assert await call(client, handler, {"limit": None, "name": None}) == []
    assert_sent(the_request(bare), "GET", f"{BASE}{SEARCH}")


async def test_post_with_body_from_input(client: httpx.AsyncClient, erp: respx.MockRouter) -> None:
    path = "/api/v1/plugins/hcm-ai-intelligence/reports/headcount"
    handler = RestHandler(path, "POST", body_from_input=True)
    arguments = {"groupBy": "department", "department": ["Sales", "Zoë"], "includeInactive": True}
    route = erp.post(f"{BASE}{path}").respond(201, json={"total": 3})
    assert await call(client, handler, arguments) == {"total": 3}
    request = the_request(route)
    assert_sent(request, "POST", f"{BASE}{path}", body=arguments)
    assert request.content.decode("utf-8") == json.dumps(arguments, ensure_ascii=False)


async def test_post_without_body_from_input_sends_no_body(
    client: httpx.AsyncClient, erp: respx.MockRouter
) -> None:
    path = "/api/v1/plugins/p/caches/{name}/refresh"
    handler = RestHandler(path, "POST", path_params=("name",), query_params=("force",))
    url = f"{BASE}/api/v1/plugins/p/caches/main/refresh?force=true"
    route = erp.post(url).respond(json={"refreshed": True})
    assert await call(client, handler, {"name": "main", "force": True, "x": 1}) == {
        "refreshed": True
    }
    assert_sent(the_request(route), "POST", url)


@pytest.mark.parametrize("method", ["PUT", "PATCH", "POST"])
async def test_path_params_query_and_body_together(
    client: httpx.AsyncClient, erp: respx.MockRouter, method: str
) -> None:
    path = "/api/v1/plugins/hcm-ai-intelligence/employees/{employeeId}/transfer"
    handler = RestHandler(
        path, method, path_params=("employeeId",), query_params=("dryRun",), body_from_input=True
    )
    arguments = {"employeeId": "E 1?2", "targetDepartment": "Sales", "dryRun": False}
    url = f"{BASE}/api/v1/plugins/hcm-ai-intelligence/employees/E%201%3F2/transfer?dryRun=false"
    route = erp.route(method=method, url=url).respond(json={"status": "COMPLETED"})
    assert await call(client, handler, arguments) == {"status": "COMPLETED"}
    assert_sent(the_request(route), method, url, body=arguments)


async def test_delete_with_no_content(client: httpx.AsyncClient, erp: respx.MockRouter) -> None:
    handler = RestHandler("/api/v1/entities/notes/{id}", "DELETE", path_params=("id",))
    url = f"{BASE}/api/v1/entities/notes/n-7"
    route = erp.delete(url).respond(204)
    assert await call(client, handler, {"id": "n-7"}) == {"success": True, "status": 204}
    assert_sent(the_request(route), "DELETE", url)


async def test_a_204_is_a_success_for_any_method(
    client: httpx.AsyncClient, erp: respx.MockRouter
) -> None:
    """The rule ERP-DYN-002 shares: 204 No Content is a success with nothing to report."""
    erp.get(f"{BASE}/api/v1/plugins/hcm-employee/employees/E1").respond(204)
    assert await call(client, get_employee(), {"employeeId": "E1"}) == {
        "success": True,
        "status": 204,
    }


@pytest.mark.parametrize("status", [200, 201, 202])
@pytest.mark.parametrize("body", [b"", b"  \r\n"])
async def test_an_empty_answer_other_than_204_is_a_failure(
    client: httpx.AsyncClient, erp: respx.MockRouter, status: int, body: bytes
) -> None:
    erp.get(f"{BASE}/api/v1/plugins/hcm-employee/employees/E1").respond(status, content=body)
    error = failure_of(await call(client, get_employee(), {"employeeId": "E1"}))
    assert error == (
        f"GET /api/v1/plugins/hcm-employee/employees/E1 answered HTTP {status} with a body "
        "that is not JSON: (empty body); answer 204 No Content when there is nothing to report"
    )


@pytest.mark.parametrize(
    "base_url", ["http://erp.test/", "http://erp.test/erp", "http://erp.test/erp/"]
)
async def test_base_url_with_a_slash_or_a_prefix(
    client: httpx.AsyncClient, erp: respx.MockRouter, base_url: str
) -> None:
    prefix = "/erp" if base_url.rstrip("/").endswith("/erp") else ""
    url = f"{BASE}{prefix}/api/v1/plugins/hcm-employee/employees/a%3Fb"
    route = erp.get(url).respond(json={})
    assert await call(client, get_employee(), {"employeeId": "a?b"}, base_url=base_url) == {}
    assert_sent(the_request(route), "GET", url)


async def test_a_json_answer_saying_success_false_passes_through(
    client: httpx.AsyncClient, erp: respx.MockRouter
) -> None:
    erp.get(f"{BASE}/api/v1/plugins/hcm-employee/employees/E1").respond(
        json={"success": False, "error": "locked"}
    )
    output = await dispatch(
        client, RestCall(BASE, get_employee(), {"employeeId": "E1"}, TENANT, ACTOR)
    )
    assert not output.ok
    assert output.output == {"success": False, "error": "locked"}


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 500, 502, 503])
async def test_a_non_2xx_answer_is_a_failure(
    client: httpx.AsyncClient, erp: respx.MockRouter, status: int
) -> None:
    erp.get(f"{BASE}/api/v1/plugins/hcm-employee/employees/a%20b").respond(
        status, text=f'{{"status": {status},\n   "error": "nope"}}\n'
    )
    error = failure_of(await call(client, get_employee(), {"employeeId": "a b"}))
    assert error == (
        f"HTTP {status} from GET /api/v1/plugins/hcm-employee/employees/a%20b: "
        f'{{"status": {status}, "error": "nope"}}'
    )


async def test_an_empty_error_body_is_named(
    client: httpx.AsyncClient, erp: respx.MockRouter
) -> None:
    erp.get(f"{BASE}/api/v1/plugins/hcm-employee/employees/E1").respond(503)
    error = failure_of(await call(client, get_employee(), {"employeeId": "E1"}))
    assert error == "HTTP 503 from GET /api/v1/plugins/hcm-employee/employees/E1: (empty body)"


async def test_the_error_excerpt_is_bounded(
    client: httpx.AsyncClient, erp: respx.MockRouter
) -> None:
    erp.get(f"{BASE}/api/v1/plugins/hcm-employee/employees/E1").respond(
        500, text="boom   \n\t" + "x" * 10_000
    )
    error = failure_of(await call(client, get_employee(), {"employeeId": "E1"}))
    prefix = "HTTP 500 from GET /api/v1/plugins/hcm-employee/employees/E1: boom "
    assert error.startswith(prefix)
    assert error.endswith("...")
    assert len(error) == len(prefix) - len("boom ") + 300 + 3


async def test_a_redirect_is_not_followed(client: httpx.AsyncClient, erp: respx.MockRouter) -> None:
    route = erp.get(f"{BASE}/api/v1/plugins/hcm-employee/employees/E1").respond(
        302, headers={"Location": "http://elsewhere.test/steal"}
    )
    error = failure_of(await call(client, get_employee(), {"employeeId": "E1"}))
    assert error.startswith("HTTP 302 from GET ")
    assert route.call_count == 1


@pytest.mark.parametrize(
    "body", [b"<html>OK</html>", b"{not json", b'{"a": NaN}', b"\xff\xfe\x00garbage", b"[1,"]
)
async def test_a_2xx_answer_that_is_not_json_is_a_failure(
    client: httpx.AsyncClient, erp: respx.MockRouter, body: bytes
) -> None:
    erp.get(f"{BASE}/api/v1/plugins/hcm-employee/employees/E1").respond(200, content=body)
    error = failure_of(await call(client, get_employee(), {"employeeId": "E1"}))
    assert error.startswith(
        "GET /api/v1/plugins/hcm-employee/employees/E1 answered HTTP 200 with a body that is "
        "not JSON"
    )


async def test_a_response_over_the_limit_is_a_failure(
    client: httpx.AsyncClient, erp: respx.MockRouter
) -> None:
    erp.get(f"{BASE}/api/v1/plugins/hcm-employee/employees/E1").respond(json={"blob": "x" * 2000})
    result = await call(client, get_employee(), {"employeeId": "E1"}, max_response_bytes=1000)
    assert failure_of(result) == "the response is larger than 1000 bytes"


@pytest.mark.parametrize(
    ("exception", "reason"),
    [
        (httpx.ReadTimeout, "timed out: ReadTimeout"),
        (httpx.ConnectTimeout, "timed out: ConnectTimeout"),
        (httpx.PoolTimeout, "timed out: PoolTimeout"),
        (httpx.ConnectError, "cannot connect for GET "),
        (httpx.RemoteProtocolError, "failed: RemoteProtocolError"),
        (httpx.ReadError, "failed: ReadError"),
    ],
)
async def test_transport_errors_are_failures(
    client: httpx.AsyncClient, erp: respx.MockRouter, exception: type[Exception], reason: str
) -> None:
    erp.get(f"{BASE}/api/v1/plugins/hcm-employee/employees/E1").mock(side_effect=exception)
    error = failure_of(await call(client, get_employee(), {"employeeId": "E1"}))
    assert reason in error
    assert "/api/v1/plugins/hcm-employee/employees/E1" in error


@pytest.mark.parametrize(
    "exception", [httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError]
)
@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
async def test_an_idempotent_call_the_erp_dropped_is_sent_once_more(
    client: httpx.AsyncClient, erp: respx.MockRouter, method: str, exception: type[Exception]
) -> None:
    url = f"{BASE}/api/v1/plugins/hcm-employee/employees/E1"
    route = erp.route(method=method, url=url)
    route.side_effect = [exception("Server disconnected"), httpx.Response(200, json={"ok": 1})]
    handler = RestHandler(EMPLOYEE, method, path_params=("employeeId",))
    assert await call(client, handler, {"employeeId": "E1"}) == {"ok": 1}
    assert route.call_count == 2
    assert route.calls[0].request.url == route.calls[1].request.url


async def test_a_dropped_post_or_patch_is_not_sent_again(
    client: httpx.AsyncClient, erp: respx.MockRouter
) -> None:
    for method in ("POST", "PATCH"):
        route = erp.route(method=method, url=f"{BASE}{SEARCH}")
        route.side_effect = [httpx.RemoteProtocolError("gone"), httpx.Response(200, json={})]
        handler = RestHandler(SEARCH, method, body_from_input=True)
        error = failure_of(await call(client, handler, {"name": "x"}))
        assert error.startswith(f"{method} {SEARCH} failed: RemoteProtocolError")
        assert route.call_count == 1


async def test_an_idempotent_call_is_retried_only_once(
    client: httpx.AsyncClient, erp: respx.MockRouter
) -> None:
    route = erp.get(f"{BASE}/api/v1/plugins/hcm-employee/employees/E1")
    route.side_effect = httpx.RemoteProtocolError("gone")
    error = failure_of(await call(client, get_employee(), {"employeeId": "E1"}))
    assert "failed: RemoteProtocolError" in error
    assert route.call_count == 2


async def test_a_slow_answer_hits_the_overall_timeout(client: httpx.AsyncClient) -> None:
    started_answering = asyncio.Event()

    async def slow(request: httpx.Request) -> httpx.Response:
        started_answering.set()
        await asyncio.sleep(5)
        return httpx.Response(200, json={})

    # A cancelled call is not recorded as called: started_answering shows it arrived.
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as erp:
        erp.get(f"{BASE}/api/v1/plugins/hcm-employee/employees/E1").mock(side_effect=slow)
        result = await call(client, get_employee(), {"employeeId": "E1"}, timeout=0.2)
    assert started_answering.is_set()  # the answer, 5 s later, would have been a success
    assert failure_of(result) == (
        "GET /api/v1/plugins/hcm-employee/employees/E1 timed out after 0.2 s"
    )


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ({}, "missing path parameter 'employeeId'"),
        ({"employeeId": None}, "missing path parameter 'employeeId'"),
        ({"employeeId": ""}, "path parameter 'employeeId' must not be empty"),
        ({"employeeId": {"id": 1}}, "path parameter 'employeeId' must be a string, number"),
        ({"employeeId": ["E1"]}, "path parameter 'employeeId' must be a string, number"),
        ({"employeeId": "E1/../admin"}, "path parameter 'employeeId' must not contain '/'"),
        ({"employeeId": ".."}, "path parameter 'employeeId' must not be a dot segment"),
        ([1, 2], "arguments must be a JSON object"),
        ("E1", "arguments must be a JSON object"),
    ],
)
async def test_bad_path_arguments_send_nothing(
    client: httpx.AsyncClient, nothing_sent: respx.MockRouter, arguments: Any, reason: str
) -> None:
    assert failure_of(await call(client, get_employee(), arguments)).startswith(reason)


@pytest.mark.parametrize("value", [{"a": 1}, [["nested"]], [{"a": 1}], [1, {"b": 2}]])
async def test_a_query_value_that_is_an_object_sends_nothing(
    client: httpx.AsyncClient, nothing_sent: respx.MockRouter, value: Any
) -> None:
    handler = RestHandler(SEARCH, "GET", query_params=("filter",))
    error = failure_of(await call(client, handler, {"filter": value}))
    assert error == "query parameter 'filter' must hold scalars or a list of them"


@pytest.mark.parametrize(
    ("who", "value"),
    [
        ("tenant", ""),
        ("tenant", "acme\r\nX-Admin: 1"),
        ("tenant", " acme"),
        ("actor", ""),
        ("actor", "zoë"),
        ("actor", "bob\x00"),
    ],
)
async def test_unsendable_tenant_or_actor_sends_nothing(
    client: httpx.AsyncClient, nothing_sent: respx.MockRouter, who: str, value: str
) -> None:
    result = await call(client, get_employee(), {"employeeId": "E1"}, **{who: value})
    assert failure_of(result).startswith(f"the {who} must be a non-empty printable ASCII")


@pytest.mark.parametrize(
    "base_url",
    ["ftp://erp.test", "erp.test", "http://erp.test/?a=1", "http://erp.test/#x", "http://", ""],
)
async def test_an_invalid_base_url_sends_nothing(
    client: httpx.AsyncClient, nothing_sent: respx.MockRouter, base_url: str
) -> None:
    result = await call(client, get_employee(), {"employeeId": "E1"}, base_url=base_url)
    assert failure_of(result).startswith("invalid ERP base URL")


@pytest.mark.parametrize(
    ("handler", "reason"),
    [
        (
            RestHandler("/api/v1/plugins/p/../../admin/{id}", "GET", ("id",)),
            "refusing to send: the URL path became '/api/v1/admin/x', "
            "not '/api/v1/plugins/p/../../admin/x'",
        ),
        (
            RestHandler("/api/v1/plugins/p/./x/{id}", "GET", ("id",)),
            "refusing to send: the URL path became '/api/v1/plugins/p/x/x'",
        ),
        (
            RestHandler("/api/v1/plugins/p x/{id}", "GET", ("id",)),
            "refusing to send: the URL path became '/api/v1/plugins/p%20x/x'",
        ),
        (RestHandler("/a/{id}", "GET"), "unusable handlerConfig: path placeholder {id}"),
        (RestHandler("/a/{id}", "HEAD", ("id",)), "unusable handlerConfig: method 'HEAD'"),
        (RestHandler("a/{id}", "GET", ("id",)), "unusable handlerConfig: path 'a/{id}'"),
    ],
)
async def test_a_template_that_would_change_the_path_sends_nothing(
    client: httpx.AsyncClient, nothing_sent: respx.MockRouter, handler: RestHandler, reason: str
) -> None:
    assert failure_of(await call(client, handler, {"id": "x"})).startswith(reason)


async def test_input_that_is_not_json_serialisable_sends_nothing(
    client: httpx.AsyncClient, nothing_sent: respx.MockRouter
) -> None:
    handler = RestHandler("/api/v1/plugins/p/r", "POST", body_from_input=True)
    error = failure_of(await call(client, handler, {"x": float("nan")}))
    assert error.startswith("the input cannot be sent as JSON")


async def test_dispatch_never_raises_on_a_broken_client() -> None:
    client = httpx.AsyncClient(trust_env=False)
    await client.aclose()
    result = await call(client, get_employee(), {"employeeId": "E1"})
    assert failure_of(result).startswith("REST dispatch failed: RuntimeError")


# --------------------------------------------------------------------------- real HTTP


async def echo(request: Request) -> Response:
    """What the server saw: raw and decoded path, query, the ERP headers and the body."""
    body = await request.body()
    return JSONResponse(
        {
            "method": request.method,
            "rawPath": request.scope["raw_path"].decode("ascii"),
            "path": request.scope["path"],
            "query": request.query_params.multi_items(),
            "tenant": request.headers.get("x-tenant-id"),
            "actor": request.headers.get("x-actor"),
            "body": json.loads(body) if body else None,
        }
    )


async def slow(request: Request) -> Response:
    await asyncio.sleep(1.0)
    return JSONResponse({"late": True})


ECHO = Starlette(
    routes=[
        Route("/slow", slow),
        Route("/{rest:path}", echo, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
    ]
)


@pytest.fixture(scope="module")
def echo_server() -> Iterator[str]:
    with serve_backends(ECHO) as base_url:
        yield base_url


@pytest.mark.parametrize("value", ["...", "%2e%2e", "%2F", "?x=1", "#x", "a b", "Zoë東京", "a;b"])
async def test_real_server_sees_the_value_in_one_segment(
    client: httpx.AsyncClient, echo_server: str, value: str
) -> None:
    handler = RestHandler(
        "/api/v1/plugins/p/items/{id}/detail",
        "PATCH",
        path_params=("id",),
        query_params=("tag", "on"),
        body_from_input=True,
    )
    arguments = {"id": value, "tag": ["x", "ü"], "on": True}
    seen = await call(client, handler, arguments, base_url=echo_server)
    raw = seen["rawPath"].split("/")
    assert raw[:5] == ["", "api", "v1", "plugins", "p"]
    assert raw[5] == "items" and raw[7] == "detail" and len(raw) == 8
    assert raw[6] == encode_segment(value)
    assert httpx.URL("http://h/" + raw[6]).path == "/" + value  # decodes back to the value
    assert seen["method"] == "PATCH"
    assert seen["query"] == [["tag", "x"], ["tag", "ü"], ["on", "true"]]
    assert (seen["tenant"], seen["actor"]) == (TENANT, ACTOR)
    assert seen["body"] == arguments


async def test_real_server_timeout_is_a_failure(
    client: httpx.AsyncClient, echo_server: str
) -> None:
    result = await call(client, RestHandler("/slow", "GET"), {}, base_url=echo_server, timeout=0.2)
    assert "GET /slow timed out after 0.2 s" in failure_of(result)


async def test_connection_refused_is_a_failure(client: httpx.AsyncClient) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = await call(
        client, get_employee(), {"employeeId": "E1"}, base_url=f"http://127.0.0.1:{port}"
    )
    assert failure_of(result).startswith(
        "cannot connect for GET /api/v1/plugins/hcm-employee/employees/E1"
    )


async def test_real_erp_backends_answer_a_sample_tool(client: httpx.AsyncClient) -> None:
    (hello,) = tool_files("hello-plugin")
    handler = RestHandler.from_config(load_tool(hello)["handlerConfig"])
    with serve_backends() as base_url:
        result = await call(client, handler, {}, base_url=base_url)
        missing = await call(client, get_employee(), {"employeeId": "E9.."}, base_url=base_url)
    assert result == {
        "plugin": "hello-plugin",
        "tenantId": TENANT,
        "greeting": f"Hello, {TENANT}!",
        "actor": ACTOR,
    }
    assert failure_of(missing).startswith(
        "HTTP 404 from GET /api/v1/plugins/hcm-employee/employees/E9..: "
    )
