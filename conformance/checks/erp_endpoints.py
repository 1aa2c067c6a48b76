"""Endpoint checks of an ERP plugin (spec: erp.md#running-the-endpoint-checks): generated
inputs sent as the host sends them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

from hypothesis import assume
from hypothesis import strategies as st

from conformance.checks.erp import ErpContext, check
from conformance.erp.endpoints import Answer, EndpointServices
from conformance.erp.plugin import ErpTool
from conformance.erp.routes import NOT_FOUND, RouteCheck, route_check, valid_inputs
from conformance.findings import Finding, NotApplicable
from conformance.properties import Attempt, Counterexample, find_counterexample
from conformance.strategies import ExternalRefs, GeneratorGap, InputSpace
from plugin_spec.json_types import JsonObject, JsonValue
from plugin_spec.rest_handler import RestHandler


def _services(ctx: ErpContext) -> EndpointServices:
    services = ctx.endpoints
    if services is None or not services.base_url:
        raise NotApplicable("pass --plugin-base-url URL to call the plugin's endpoints")
    return services


def _setup(ctx: ErpContext) -> tuple[EndpointServices, ErpTool, RestHandler, InputSpace]:
    services = _services(ctx)
    if services.silence is not None:
        raise NotApplicable(f"no server answered at {services.base_url} (ERP-DYN-004)")
    tool = ctx.tool
    if not isinstance(tool, ErpTool):
        raise TypeError(f"{ctx.requirement.id} checks one ERP tool, not {type(tool).__name__}")
    try:
        handler = RestHandler.from_config(tool.handler)
    except ValueError as exc:
        raise NotApplicable(f"the handlerConfig cannot be used: {exc}") from None
    try:
        space = InputSpace.of(tool.data.get("inputSchema"))
    except ExternalRefs as exc:
        raise NotApplicable(f"{exc.located('/inputSchema')} (ERP-TOOL-012)") from None
    except GeneratorGap as exc:
        raise NotApplicable(f"no input can be generated: {exc}") from None
    return services, tool, handler, space


def _routed(ctx: ErpContext) -> tuple[EndpointServices, ErpTool, RestHandler, InputSpace]:
    """_setup, for the checks that judge what the endpoint does: with no route there is
    nothing to judge, and ERP-DYN-005 reports it once."""
    services, tool, handler, space = _setup(ctx)
    if route_check(
        services, tool.file, handler, lambda: valid_inputs(space, services.settings)
    ).missing:
        raise NotApplicable(f"{handler.method} {handler.path} does not exist (ERP-DYN-005)")
    return services, tool, handler, space


def _route_of(
    services: EndpointServices, tool: ErpTool, handler: RestHandler, space: InputSpace
) -> RouteCheck:
    return route_check(services, tool.file, handler, lambda: valid_inputs(space, services.settings))


def _report(ctx: ErpContext, tool: ErpTool, found: Counterexample | None) -> Iterator[Finding]:
    if found is None:
        return
    answer: Answer = found.outcome
    lines = [f"{tool.code}: {found.problem}", f"answer: {answer.describe()}"]
    if answer.request is not None:
        lines.append(f"reproduce: {EndpointServices.curl(answer.request)}")
    yield ctx.tool_finding(tool, "/handlerConfig", "\n".join(lines), found.fix)


@check("ERP-DYN-004")
def backend_answers(ctx: ErpContext) -> Iterator[Finding]:
    services = _services(ctx)
    if services.silence is not None:
        message = f"no server answered at {services.base_url}: {services.silence}"
        yield ctx.finding(message, str(services.base_url))


def _searched(
    make_attempt: Callable[[EndpointServices, RestHandler, InputSpace], Attempt],
) -> Callable[[ErpContext], Iterator[Finding]]:
    """An endpoint check that searches the routed tool's inputs for one counterexample:
    make_attempt gets the tool's services, handler and input space and gives the attempt to
    search with; what it finds is the check's one finding."""

    @functools.wraps(make_attempt)
    def search(ctx: ErpContext) -> Iterator[Finding]:
        services, tool, handler, space = _routed(ctx)
        attempt = make_attempt(services, handler, space)
        yield from _report(ctx, tool, find_counterexample(attempt, services.settings))

    return search


def _valid_and_mutations(
    data: st.DataObject, space: InputSpace, handler: RestHandler
) -> tuple[JsonValue, list[tuple[str, JsonObject]]]:
    """A valid input drawn from space, and the ways to break it (URL text as _textual says)."""
    params = space.draw_valid(data.draw)
    return params, space.mutations(params, _textual(handler))


@check("ERP-DYN-001")
@_searched
def no_server_errors(
    services: EndpointServices, handler: RestHandler, space: InputSpace
) -> Attempt:
    def attempt(data: st.DataObject) -> Counterexample | None:
        answer = services.call(handler, space.draw_valid(data.draw))
        if answer.status is None and answer.request is not None:
            return Counterexample(f"no answer: {answer.problem}", answer)
        if answer.status is not None and answer.status >= 500:
            return Counterexample(f"a valid input got HTTP {answer.status}", answer)
        return None

    return attempt


@check("ERP-DYN-002")
@_searched
def json_answers(services: EndpointServices, handler: RestHandler, space: InputSpace) -> Attempt:
    def attempt(data: st.DataObject) -> Counterexample | None:
        params, mutations = _valid_and_mutations(data, space, handler)
        if bool(mutations) and data.draw(st.booleans()):
            params = data.draw(st.sampled_from(mutations))[1]
        answer = services.call(handler, params)
        assume(answer.status is not None)  # nothing came back: no answer to judge
        if not answer.is_json_or_no_content():
            return Counterexample(
                f"HTTP {answer.status} answered with a body that is not JSON", answer
            )
        return None

    return attempt


@check("ERP-DYN-003")
@_searched
def invalid_input_rejected(
    services: EndpointServices, handler: RestHandler, space: InputSpace
) -> Attempt:
    def attempt(data: st.DataObject) -> Counterexample | None:
        _, mutations = _valid_and_mutations(data, space, handler)
        assume(mutations)
        why, broken = data.draw(st.sampled_from(mutations))
        answer = services.call(handler, broken)
        # The host itself refuses to send it (e.g. a path param missing): nothing to judge.
        status = answer.status
        assume(status is not None)
        assert status is not None  # assume ended the example otherwise
        if not 400 <= status < 500:
            return Counterexample(
                f"an invalid input ({why}) got HTTP {status}",
                answer,
                fix=f"validate the request against the tool's inputSchema ({why}) and answer "
                "400 with a JSON error",
            )
        return None

    return attempt


@check("ERP-DYN-005")
def endpoint_exists(ctx: ErpContext) -> Iterator[Finding]:
    services, tool, handler, space = _setup(ctx)
    route = _route_of(services, tool, handler, space)
    if route.unjudged:
        raise NotApplicable(route.unjudged)
    if route.missing:
        yield _missing(ctx, tool, handler, route)


def _missing(ctx: ErpContext, tool: ErpTool, handler: RestHandler, route: RouteCheck) -> Finding:
    statuses = sorted({a.status for a in route.answers if a.status is not None})
    first = route.answers[0]
    lines = [
        f"{tool.code}: {handler.method} {handler.path} does not exist on the backend: every "
        f"valid input the kit sent ({len(route.answers)}) got "
        + ", ".join(f"HTTP {status}" for status in statuses),
        f"answer: {first.describe()}",
    ]
    if first.request is not None:
        lines.append(f"reproduce: {EndpointServices.curl(first.request)}")
    control = route.control
    if NOT_FOUND in statuses and control is not None and control.request is not None:
        lines.append(
            f"a path no route serves gets the same: {control.describe()} "
            f"({EndpointServices.curl(control.request)})"
        )
    at, fix = _route_fix(NOT_FOUND in statuses, route)
    return ctx.tool_finding(tool, at, "\n".join(lines), fix)


def _route_fix(not_found: bool, route: RouteCheck) -> tuple[str, str]:
    """Where the mistake is and how to mend it: the path for a 404, else the method."""
    if not_found:
        return "/handlerConfig/path", (
            "correct handlerConfig.path to the route the backend serves (it is appended to "
            "--plugin-base-url); if the 404 is a business 'not found', say in its body what "
            "was not found, so it differs from the server's answer for an unknown path"
        )
    fix = "set handlerConfig.method to a method the route accepts"
    allowed = next((a.allow for a in route.answers if a.allow), "")
    return "/handlerConfig/method", fix + (
        f" (the server's Allow header: {allowed})" if allowed else ""
    )


def _textual(handler: RestHandler) -> set[str]:
    """Inputs that reach the endpoint as URL text rather than typed JSON."""
    if handler.body_from_input:
        return set()
    return set(handler.path_params) | set(handler.query_params)
