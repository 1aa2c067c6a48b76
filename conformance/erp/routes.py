"""Whether an ERP tool's route exists on the backend (spec: erp.md#the-endpoint-exists).

A 404 can be a business answer ("no employee E42"), so a 404 alone proves nothing. The
route is missing when every valid input tried gets 405 or 501, or a 404 that is the
server's answer for a path it has no route for: the answer to a control request, sent to a
path under the tool's plugin namespace that no API serves, once before the tool's inputs
and once after. Members of a JSON answer that differ between the two controls (a timestamp,
a trace id) are set aside, and the request's own path is read as `{path}`.
"""

from __future__ import annotations

import json
import secrets
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st

from conformance.erp.endpoints import Answer, EndpointServices
from conformance.findings import NotApplicable
from conformance.search_settings import PropertySettings
from conformance.strategies import GeneratorGap, InputSpace
from plugin_spec.rest_handler import RestHandler

NOT_FOUND = 404
NO_METHOD = frozenset({405, 501})  # never an answer about the input
NO_ROUTE = NO_METHOD | {NOT_FOUND}
CONTROL_SEGMENT = "conformance-no-such-route-"
# /api/v1/plugins/<plugin>: the namespace the control path stays in (the same backend).
NAMESPACE_SEGMENTS = 5
_TEXT = object()  # marks an answer whose body is not JSON (compared whole)


@dataclass(frozen=True)
class RouteCheck:
    """The verdict on one tool's route: missing or not, and the answers it rests on."""

    missing: bool
    answers: tuple[Answer, ...] = ()
    control: Answer | None = None
    unjudged: str = ""  # why there is no verdict either way


def control_handler(handler: RestHandler) -> RestHandler:
    """The tool's method at a path of its plugin namespace that no route serves."""
    literal: list[str] = []
    for segment in handler.path.split("/")[:NAMESPACE_SEGMENTS]:
        if "{" in segment:
            break
        literal.append(segment)
    prefix = "/".join(literal).rstrip("/")
    return RestHandler(f"{prefix}/{CONTROL_SEGMENT}{secrets.token_hex(4)}", handler.method)


def _sent_path(answer: Answer) -> str:
    assert answer.request is not None
    return answer.request.url.raw_path.partition(b"?")[0].decode("ascii")


def _normalised(answer: Answer) -> Any:
    """The body with the request's own path read as `{path}`: JSON, or (_TEXT, text)."""
    text = answer.body.decode("utf-8", "replace")
    path = _sent_path(answer)
    for form in sorted({path, unquote(path)}, key=len, reverse=True):
        text = text.replace(form, "{path}")
    try:
        return json.loads(text)
    except ValueError:
        return (_TEXT, text)


def _leaves(value: Any, at: str = "") -> Iterator[tuple[str, Any]]:
    """Every scalar of a JSON value by its pointer (an empty container counts as one)."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _leaves(item, f"{at}/{key}")
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _leaves(item, f"{at}/{index}")
    else:
        yield at, value


class RouteMiss:
    """What this server answers for a path it has no route for, learnt from two controls."""

    def __init__(self, before: Answer, after: Answer) -> None:
        first = dict(_leaves(_normalised(before)))
        second = dict(_leaves(_normalised(after)))
        volatile = {at for at in first if first[at] != second.get(at)}
        self.usable = (
            before.status == after.status == NOT_FOUND
            and first.keys() == second.keys()
            and "" not in volatile  # a whole body that changes: nothing fixed to compare
        )
        self.shape = set(first)
        self.fixed = {at: v for at, v in first.items() if at not in volatile}

    def matches(self, answer: Answer) -> bool:
        if not self.usable or answer.status != NOT_FOUND:
            return False
        leaves = dict(_leaves(_normalised(answer)))
        return set(leaves) == self.shape and all(leaves[at] == v for at, v in self.fixed.items())


def probe_route(
    services: EndpointServices, handler: RestHandler, inputs: Iterable[Any]
) -> RouteCheck:
    """Send valid inputs until one gets an answer other than 404, 405 or 501 (the route
    exists); when none does, judge every 404 against the server's route-miss answer.
    Inputs the host would not send, and calls that got no answer, are no evidence."""
    control = control_handler(handler)
    before = services.call(control, {})
    answers: list[Answer] = []
    for arguments in inputs:
        answer = services.call(handler, arguments)
        if answer.status is None:
            continue
        answers.append(answer)
        if answer.status not in NO_ROUTE:
            return RouteCheck(False, tuple(answers))
    if not answers:
        return RouteCheck(False, unjudged="no valid input the host would send got an answer")
    if all(answer.status in NO_METHOD for answer in answers):
        return RouteCheck(True, tuple(answers))
    after = services.call(control, {})
    if before.status is None or after.status is None:
        why = before.problem or after.problem
        return RouteCheck(False, tuple(answers), unjudged=f"the control request failed: {why}")
    miss = RouteMiss(before, after)
    missing = all(answer.status in NO_METHOD or miss.matches(answer) for answer in answers)
    return RouteCheck(missing, tuple(answers), after)


def valid_inputs(space: InputSpace, options: PropertySettings) -> Iterator[Any]:
    """The simplest valid input, then up to `options.examples` generated ones, each once:
    generated only when the simplest one did not settle the question."""
    try:
        simplest = [space.minimal()]
    except GeneratorGap:
        simplest = []
    yield from simplest
    drawn: list[Any] = []

    @settings(
        max_examples=options.examples,
        deadline=None,
        database=None,
        phases=(Phase.generate,),
        derandomize=options.derandomize and options.seed is None,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )
    @given(st.data())
    def collect(data: st.DataObject) -> None:
        value = space.draw_valid(data.draw)
        if value not in drawn and value not in simplest:
            drawn.append(value)

    try:
        (seed(options.seed)(collect) if options.seed is not None else collect)()
    except GeneratorGap as exc:
        raise NotApplicable(f"no input can be generated: {exc}") from None
    yield from drawn


_CHECKED: weakref.WeakKeyDictionary[EndpointServices, dict[tuple[str, RestHandler], RouteCheck]]
_CHECKED = weakref.WeakKeyDictionary()


def route_check(
    services: EndpointServices,
    tool_file: str,
    handler: RestHandler,
    inputs: Callable[[], Iterable[Any]],
) -> RouteCheck:
    """The probe of one tool's route, made once per run: ERP-DYN-005 reports it, and the
    other per-tool endpoint checks are skipped when the route is missing."""
    checked = _CHECKED.setdefault(services, {})
    key = (tool_file, handler)
    if key not in checked:
        checked[key] = probe_route(services, handler, inputs())
    return checked[key]
