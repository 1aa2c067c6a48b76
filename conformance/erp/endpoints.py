"""Calling an ERP plugin's endpoints the way the host does, for the kit's endpoint checks."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from functools import cached_property

import httpx

from conformance.deadlines import Deadlines
from conformance.findings import cut
from conformance.search_settings import PropertySettings
from plugin_spec.json_types import JsonValue
from plugin_spec.rest_handler import DispatchError, RestHandler
from reference_host.erp.dispatch import NO_CONTENT, RestCall


@dataclass(frozen=True)
class Answer:
    """One HTTP exchange: the request sent and what came back (or why nothing did)."""

    request: httpx.Request | None
    status: int | None
    body: bytes
    problem: str = ""
    allow: str = ""  # the Allow header of a 405: the methods the route does accept

    def is_json(self) -> bool:
        try:
            json.loads(self.body)
        except ValueError:
            return False
        return True

    def is_json_or_no_content(self) -> bool:
        """What the host accepts as a body: JSON, or nothing at all with 204 No Content
        (HTTP forbids content in a 204; spec: erp.md#what-the-endpoint-must-answer)."""
        return self.status == NO_CONTENT or self.is_json()

    def describe(self) -> str:
        if self.status is None:
            return self.problem
        text = self.body.decode("utf-8", "replace")
        return f"HTTP {self.status}: {cut(text)}"


class EndpointServices:
    """The base URL, tenant and actor the kit calls an ERP plugin's endpoints with."""

    def __init__(
        self,
        base_url: str | None,
        tenant: str,
        actor: str,
        settings: PropertySettings,
        deadlines: Deadlines,
    ) -> None:
        self.base_url = base_url
        self.tenant = tenant
        self.actor = actor
        self.settings = settings
        self.deadlines = deadlines
        self._client: httpx.Client | None = None

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(timeout=self.deadlines.http, follow_redirects=False)
        return self._client

    @cached_property
    def silence(self) -> str | None:
        """Why no server answered at the base URL (None when one did, with any status),
        asked once per run: without an answer no endpoint check has anything to judge."""
        assert self.base_url is not None
        try:
            self.client.get(self.base_url, headers={"X-Tenant-Id": self.tenant})
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    def call(self, handler: RestHandler, arguments: JsonValue) -> Answer:
        assert self.base_url is not None
        if not isinstance(arguments, dict):  # a host reads a tool call's arguments as an object
            return Answer(None, None, b"", "the host would not send this: not a JSON object")
        try:
            call = RestCall(self.base_url, handler, arguments, self.tenant, self.actor)
            request = call.request(self.client)
        except DispatchError as exc:
            return Answer(None, None, b"", f"the host would not send this: {exc}")
        try:
            response = self.client.send(request)
        except httpx.HTTPError as exc:
            return Answer(request, None, b"", f"{type(exc).__name__}: {exc}")
        allow = response.headers.get("Allow", "")
        return Answer(request, response.status_code, response.content, allow=allow)

    @staticmethod
    def curl(request: httpx.Request) -> str:
        """A curl command that sends the same request."""
        parts = ["curl", "-sS", "-X", request.method, str(request.url)]
        for name in ("Accept", "X-Tenant-Id", "X-Actor", "Content-Type"):
            if name in request.headers:
                parts += ["-H", f"{name}: {request.headers[name]}"]
        if request.content:
            parts += ["--data-binary", request.content.decode("utf-8", "replace")]
        return shlex.join(parts)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
