"""ERP REST dispatch: one tool call becomes one HTTP request to the ERP
(spec: erp.md#path-and-query-parameters).

A tool file's `handlerConfig` says where the call goes: `path` with `{name}` placeholders for
`pathParams`, `queryParams` copied into the query string, and `bodyFromInput: true` to send the
whole input as the JSON body. The tenant and the acting user travel as `X-Tenant-Id` and
`X-Actor`.

A value can never change the path: each path parameter is percent-encoded as one segment
(`?`, `#`, `%` and spaces are encoded), a value holding `/` or `\\` or being `.` or `..` is
refused (servers decode `%2F` and `%2E` before routing), and the URL httpx is about to send is
checked to still carry exactly the substituted template before anything goes out.

`dispatch` never raises: every problem (bad arguments, a non-2xx answer, a timeout, a refused
connection, a body that is not JSON) comes back as the failure envelope of `tools.failure`.

One rule, shared with the kit's ERP-DYN-002 (spec: erp.md#what-the-endpoint-must-answer): a
204 No Content answer is a success with nothing to report (HTTP forbids content in it); every
other answer must carry JSON, so an empty 200 is a failure.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NoReturn

import httpx

from plugin_spec.json_types import JsonMapping
from plugin_spec.rest_handler import DispatchError, RestHandler, query_items, substitute_path
from reference_host.tools.callbacks import ToolResult, failure

IDEMPOTENT = frozenset({"GET", "PUT", "DELETE"})
# How a server closing a pooled keep-alive connection shows before any answer is read.
DROPPED = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
NO_CONTENT = 204
EXCERPT_CHARS = 300
# A header value a request may carry: visible ASCII and inner spaces, nothing else.
HEADER_VALUE = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$")


def _header(value: object, name: str) -> str:
    if not isinstance(value, str) or not HEADER_VALUE.match(value):
        raise DispatchError(
            f"{name} must be a non-empty printable ASCII string without control characters"
        )
    return value


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _excerpt(body: bytes) -> str:
    text = " ".join(body.decode("utf-8", errors="replace").split())
    if len(text) > EXCERPT_CHARS:
        text = text[:EXCERPT_CHARS] + "..."
    return text or "(empty body)"


def _not_json(where: str, status: int, body: bytes) -> str:
    message = f"{where} answered HTTP {status} with a body that is not JSON: {_excerpt(body)}"
    if not body.strip():
        message += "; answer 204 No Content when there is nothing to report"
    return message


async def _read_capped(response: httpx.Response, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise DispatchError(f"the response is larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


@dataclass(frozen=True)
class RestCall:
    """One tool call as the ERP request it becomes: the endpoint, the tool's handler, the
    call's arguments and who makes it (the tenant and the acting user)."""

    base_url: str
    handler: RestHandler
    arguments: JsonMapping
    tenant: str
    actor: str
    timeout: float = 30.0

    def request(self, client: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        """The request `dispatch` would send; a DispatchError says why there is none."""
        if not isinstance(self.arguments, Mapping):
            raise DispatchError("arguments must be a JSON object")
        headers = {
            "Accept": "application/json",
            "X-Tenant-Id": _header(self.tenant, "the tenant"),
            "X-Actor": _header(self.actor, "the actor"),
        }
        base_url = self.base_url
        try:
            base = httpx.URL(base_url)
        except (httpx.InvalidURL, TypeError) as exc:
            raise DispatchError(f"invalid ERP base URL {base_url!r}: {exc}") from None
        if base.scheme not in ("http", "https") or not base.host or base.query or base.fragment:
            raise DispatchError(
                f"invalid ERP base URL {base_url!r}: need http(s)://host[:port][/path]"
            )
        path = substitute_path(self.handler, self.arguments)
        content: bytes | None = None
        if self.handler.body_from_input:
            try:
                content = json.dumps(
                    dict(self.arguments), ensure_ascii=False, allow_nan=False
                ).encode()
            except ValueError as exc:
                raise DispatchError(f"the input cannot be sent as JSON: {exc}") from None
            headers["Content-Type"] = "application/json"
        request = client.build_request(
            self.handler.method,
            base_url.rstrip("/") + path,
            params=tuple(query_items(self.handler, self.arguments)),
            headers=headers,
            content=content,
            timeout=self.timeout,
        )
        expected = base.raw_path.rstrip(b"/") + path.encode("ascii")
        sent = request.url.raw_path.partition(b"?")[0]
        if sent != expected or request.url.host != base.host:
            raise DispatchError(
                f"refusing to send: the URL path became {sent.decode('ascii', 'replace')!r}, "
                f"not {expected.decode('ascii', 'replace')!r}"
            )
        return request


async def _send(client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
    """Send once, and once more for an idempotent request the server dropped before
    answering: a keep-alive connection the ERP closed while it sat in the pool looks like
    that, and the retry goes out on a fresh connection."""
    try:
        return await client.send(request, stream=True, follow_redirects=False)
    except DROPPED:
        if request.method not in IDEMPOTENT:
            raise
    return await client.send(request, stream=True, follow_redirects=False)


async def dispatch(
    client: httpx.AsyncClient, call: RestCall, max_response_bytes: int = MAX_RESPONSE_BYTES
) -> ToolResult:
    """Call the ERP endpoint for one tool call; the JSON answer, or the failure
    envelope. Redirects are not followed (they would carry the tenant headers elsewhere);
    GET, PUT and DELETE are retried once if the connection drops before an answer.

    A 204 No Content answer (from a DELETE, say) is a success with nothing to report,
    `{"success": true, "status": 204}`; any other 2xx answer must carry a JSON body."""
    try:
        request = call.request(client)
        timeout = call.timeout
        where = f"{request.method} {request.url.raw_path.partition(b'?')[0].decode('ascii')}"
        try:
            async with asyncio.timeout(timeout):
                response = await _send(client, request)
                try:
                    body = await _read_capped(response, max_response_bytes)
                finally:
                    await response.aclose()
        except TimeoutError:
            raise DispatchError(f"{where} timed out after {timeout:g} s") from None
        except httpx.TimeoutException as exc:
            raise DispatchError(f"{where} timed out: {type(exc).__name__}") from None
        except httpx.ConnectError as exc:
            reason = str(exc) or type(exc).__name__
            raise DispatchError(f"cannot connect for {where}: {reason}") from None
        except httpx.HTTPError as exc:
            raise DispatchError(f"{where} failed: {type(exc).__name__}: {exc}") from None
        status = response.status_code
        if not 200 <= status < 300:
            raise DispatchError(f"HTTP {status} from {where}: {_excerpt(body)}")
        if status == NO_CONTENT:
            return ToolResult.of({"success": True, "status": status})
        try:
            value = json.loads(body, parse_constant=_no_constant)
        except (ValueError, UnicodeDecodeError):
            raise DispatchError(_not_json(where, status, body)) from None
        return ToolResult.of(value)
    except DispatchError as exc:
        return failure(str(exc))
    except Exception as exc:  # the callback contract: never raise to the model layer
        return failure(f"REST dispatch failed: {type(exc).__name__}: {exc}")
