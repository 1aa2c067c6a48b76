"""ERP endpoint checks (spec: erp.md#the-endpoint-exists, erp.md#what-the-endpoint-must-answer):
a route that does not exist (issue 25: a path typo answered 404, a wrong method 405, and every
ERP-DYN item passed) and a 204 No Content answer.

The route probe is tested with respx standing in for the ERP (the exact answers, how many
requests went out) and against real Starlette apps served by uvicorn on 127.0.0.1: the
ERP-DYN-005 fixtures' backends and the sample ERP backends, whose 404s are business answers.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from conformance.erp.endpoints import Answer, EndpointServices
from conformance.erp.routes import CONTROL_SEGMENT, RouteCheck, probe_route, valid_inputs
from conformance.search_settings import PropertySettings
from conformance.strategies import InputSpace
from plugin_spec.rest_handler import RestHandler
from sample_plugins.erp_backends import load_tool, serve_backends, tool_files
from tests.conformance.test_requirement_fixtures import served_backend
from tests.conftest import DEADLINES, FIXTURE_PLUGINS, KitResult

BASE = "http://erp.test"
ITEMS = "/api/v1/plugins/acme-stock/items"
TYPO = "/api/v1/plugins/acme-stock/itmes"
SEARCH = RestHandler(ITEMS, "GET", query_params=("limit",))
INPUTS = [{}, {"limit": 1}, {"limit": 2}]
PATH_TYPO = FIXTURE_PLUGINS / "ERP-DYN-005-path-typo"
WRONG_METHOD = FIXTURE_PLUGINS / "ERP-DYN-005-wrong-method"
OTHER_DYN = ("ERP-DYN-001", "ERP-DYN-002", "ERP-DYN-003")


@pytest.fixture
def services() -> Iterator[EndpointServices]:
    services = EndpointServices(BASE, "acme", "kit", PropertySettings(), DEADLINES)
    yield services
    services.close()


@pytest.fixture
def erp() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        yield router


def framework_404() -> Any:
    """A router's own 404, as Spring Boot writes it: a new timestamp for every call."""
    ticks = itertools.count()

    def answer(request: httpx.Request) -> httpx.Response:
        body = {
            "timestamp": f"2025-01-01T00:00:00.{next(ticks):06d}",
            "status": 404,
            "error": "Not Found",
            "path": request.url.path,
        }
        return httpx.Response(404, json=body)

    return answer


def is_control(request: httpx.Request) -> bool:
    return request.url.path.startswith(f"/api/v1/plugins/acme-stock/{CONTROL_SEGMENT}")


def probe(services: EndpointServices, handler: RestHandler, inputs: list[Any]) -> RouteCheck:
    return probe_route(services, handler, iter(inputs))


# --------------------------------------------------------------------------- with respx


def test_every_input_answered_like_an_unknown_path_is_a_missing_route(
    services: EndpointServices, erp: respx.MockRouter
) -> None:
    routes = erp.get(url__startswith=BASE).mock(side_effect=framework_404())
    route = probe(services, RestHandler(TYPO, "GET", query_params=("limit",)), INPUTS)
    assert route.missing
    assert [a.status for a in route.answers] == [404, 404, 404]
    assert route.control is not None and route.control.request is not None
    assert is_control(route.control.request)
    assert routes.call_count == 5  # a control before the three inputs and one after


def test_a_business_not_found_is_not_a_missing_route(
    services: EndpointServices, erp: respx.MockRouter
) -> None:
    """A lookup of made-up ids gets 404 every time; its body says what was not found."""
    erp.get(url__regex=CONTROL_SEGMENT).mock(side_effect=framework_404())
    erp.get(url__startswith=f"{BASE}{ITEMS}/").mock(
        side_effect=lambda request: httpx.Response(
            404, json={"status": 404, "error": f"no item {request.url.path.rsplit('/')[-1]!r}"}
        )
    )
    handler = RestHandler(f"{ITEMS}/{{id}}", "GET", path_params=("id",))
    assert not probe(services, handler, [{"id": "a"}, {"id": "b"}]).missing


def test_a_spring_shaped_business_404_with_a_message_is_not_a_missing_route(
    services: EndpointServices, erp: respx.MockRouter
) -> None:
    erp.get(url__regex=CONTROL_SEGMENT).mock(side_effect=framework_404())
    erp.get(url__startswith=f"{BASE}{ITEMS}/").respond(
        404, json={"timestamp": "t", "status": 404, "error": "Not Found", "message": "no item"}
    )
    handler = RestHandler(f"{ITEMS}/{{id}}", "GET", path_params=("id",))
    assert not probe(services, handler, [{"id": "a"}]).missing


@pytest.mark.parametrize("status", [405, 501])
def test_405_or_501_to_every_input_is_a_missing_route(
    services: EndpointServices, erp: respx.MockRouter, status: int
) -> None:
    erp.post(url__regex=CONTROL_SEGMENT).mock(side_effect=framework_404())
    erp.post(f"{BASE}{ITEMS}").respond(status, json={"error": "nope"}, headers={"Allow": "GET"})
    route = probe(services, RestHandler(ITEMS, "POST", body_from_input=True), INPUTS)
    assert route.missing
    assert {(a.status, a.allow) for a in route.answers} == {(status, "GET")}


def test_one_answer_that_is_not_404_405_501_settles_it_and_ends_the_probe(
    services: EndpointServices, erp: respx.MockRouter
) -> None:
    erp.get(url__regex=CONTROL_SEGMENT).mock(side_effect=framework_404())
    endpoint = erp.get(url__startswith=f"{BASE}{ITEMS}").mock(
        side_effect=[
            httpx.Response(404, json={"status": 404, "error": "Not Found"}),
            httpx.Response(200, json={"items": []}),
        ]
    )
    assert not probe(services, SEARCH, INPUTS).missing
    assert endpoint.call_count == 2


def test_a_route_miss_answer_that_changes_wholesale_cannot_convict(
    services: EndpointServices, erp: respx.MockRouter
) -> None:
    """Two controls with different plain-text bodies leave nothing fixed to compare with."""
    bodies = (f"Not Found (request {n})" for n in itertools.count())
    erp.get(url__startswith=BASE).mock(
        side_effect=lambda request: httpx.Response(404, text=next(bodies))
    )
    assert not probe(services, SEARCH, INPUTS).missing


def test_the_same_plain_text_404_as_an_unknown_path_is_a_missing_route(
    services: EndpointServices, erp: respx.MockRouter
) -> None:
    erp.get(url__startswith=BASE).respond(404, text="Not Found")
    assert probe(services, SEARCH, INPUTS).missing


def test_inputs_the_host_would_not_send_are_no_evidence(
    services: EndpointServices, erp: respx.MockRouter
) -> None:
    erp.get(url__startswith=BASE).mock(side_effect=framework_404())
    handler = RestHandler(f"{ITEMS}/{{id}}", "GET", path_params=("id",))
    route = probe(services, handler, [{"id": "a/b"}, {"id": ".."}])
    assert not route.missing
    assert route.unjudged == "no valid input the host would send got an answer"


def test_the_simplest_input_comes_first_and_settles_a_healthy_endpoint() -> None:
    space = InputSpace.of({"type": "object", "properties": {"limit": {"type": "integer"}}})
    inputs = valid_inputs(space, PropertySettings(examples=5, seed=1))
    assert next(inputs) == {}


# --------------------------------------------------------------------------- on loopback


def fixture_tool(folder: Path) -> dict[str, Any]:
    (path,) = (folder / "metadata" / "tool").glob("*.json")
    return json.loads(path.read_text("utf-8"))


def probe_on(url: str, tool: dict[str, Any], config: dict[str, Any]) -> RouteCheck:
    services = EndpointServices(url, "acme", "kit", PropertySettings(examples=5, seed=1), DEADLINES)
    try:
        handler = RestHandler.from_config({**tool["handlerConfig"], **config})
        return probe_route(
            services, handler, valid_inputs(InputSpace.of(tool["inputSchema"]), services.settings)
        )
    finally:
        services.close()


@pytest.mark.parametrize(
    ("folder", "mended"),
    [
        (PATH_TYPO, {"path": "/api/v1/plugins/fixture-app/items"}),
        (WRONG_METHOD, {"method": "GET"}),
    ],
    ids=["path-typo", "wrong-method"],
)
def test_fixture_backends_on_loopback(folder: Path, mended: dict[str, Any]) -> None:
    """The fixture's handlerConfig misses the route; mended, the same backend serves it."""
    tool = fixture_tool(folder)
    with served_backend(folder) as url:
        assert url is not None
        missing = probe_on(url, tool, {})
        found = probe_on(url, tool, mended)
    assert missing.missing
    assert {a.status for a in missing.answers} == {404 if folder is PATH_TYPO else 405}
    assert not found.missing


def test_sample_backends_business_404s_and_a_typo_on_loopback() -> None:
    (path,) = [p for p in tool_files("hcm-employee") if p.name.endswith("employee.get.json")]
    tool = load_tool(path)
    typo = tool["handlerConfig"]["path"].replace("/employees/", "/employes/")
    with serve_backends() as url:
        lookup = probe_on(url, tool, {})
        misspelt = probe_on(url, tool, {"path": typo})
    assert not lookup.missing  # made-up employee ids: a 404 that names the employee
    assert misspelt.missing
    assert all(a.status == 404 for a in misspelt.answers)


# --------------------------------------------------------------------------- the kit's verdicts


def records(result: KitResult, rid: str) -> list[dict[str, Any]]:
    return [r for r in result.report["results"] if r["requirement"] == rid]


def test_a_missing_route_blocks_the_other_endpoint_checks(run_kit) -> None:
    with served_backend(PATH_TYPO) as url:
        assert url is not None
        result = run_kit([PATH_TYPO], "--plugin-base-url", url, "-m", "endpoints")
    (item,) = records(result, "ERP-DYN-005")
    assert item["status"] == "failed"
    message = item["findings"][0]["message"]
    assert "reproduce: curl -sS -X GET http://127.0.0.1:" in message
    assert "/api/v1/plugins/fixture-app/itmes" in message
    assert "-H 'Accept: application/json'" in message  # as the host asks, so the same answer
    for rid in OTHER_DYN:
        (other,) = records(result, rid)
        assert (other["status"], other["blocked_by"]) == ("skipped", ["ERP-DYN-005"]), other


def plugin_with_search_tool(tmp_path: Path) -> Path:
    """The ERP-DYN-002 fixture's tool file (GET .../items) in a folder of its own."""
    plugin = tmp_path / "plugin"
    source = FIXTURE_PLUGINS / "ERP-DYN-002-plain-text-answer" / "metadata"
    shutil.copytree(source, plugin / "metadata")
    return plugin


def items_app(success: Response) -> Starlette:
    """GET .../items answering `success` to a valid input, a JSON 400 to a bad limit."""

    async def items(request: Request) -> Response:
        raw = request.query_params.get("limit", "20")
        if not raw.isdigit() or not 1 <= int(raw) <= 50:
            return JSONResponse({"error": "limit must be an integer in 1..50"}, status_code=400)
        return success

    return Starlette(routes=[Route("/api/v1/plugins/fixture-app/items", items)])


def test_a_204_no_content_passes_erp_dyn_002(run_kit, tmp_path: Path) -> None:
    """The host's rule: 204 No Content is a success with nothing to report."""
    plugin = plugin_with_search_tool(tmp_path)
    with serve_backends(items_app(Response(status_code=204))) as url:
        result = run_kit([plugin], "--plugin-base-url", url)
    assert result.reported() == set()
    assert [r["status"] for r in records(result, "ERP-DYN-002")] == ["passed"]


def test_an_empty_200_is_not_json(run_kit, tmp_path: Path) -> None:
    plugin = plugin_with_search_tool(tmp_path)
    with serve_backends(items_app(Response(status_code=200))) as url:
        result = run_kit([plugin], "--plugin-base-url", url)
    assert result.reported() == {"ERP-DYN-002"}
    (finding,) = [f for r in records(result, "ERP-DYN-002") for f in r["findings"]]
    assert "HTTP 200 answered with a body that is not JSON" in finding["message"]
    assert "204 No Content" in finding["fix"]


def test_answer_is_json_or_no_content() -> None:
    assert Answer(None, 204, b"").is_json_or_no_content()
    assert Answer(None, 200, b"{}").is_json_or_no_content()
    assert not Answer(None, 200, b"").is_json_or_no_content()
    assert not Answer(None, 404, b"").is_json_or_no_content()
