"""ERP REST dispatch: one tool call becomes one HTTP request to the ERP (SPEC E3).

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
"""

from __future__ import annotations

import asyncio
import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from reference_host.tools import failure

METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
# RFC 9110 section 9.2.2: repeating these has the effect of sending them once.
IDEMPOTENT = frozenset({"GET", "PUT", "DELETE"})
# How a server closing a pooled keep-alive connection shows before any answer is read.
DROPPED = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
PLACEHOLDER = re.compile(r"\{([^{}/]*)\}")
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
EXCERPT_CHARS = 300
# A header value a request may carry: visible ASCII and inner spaces, nothing else.
HEADER_VALUE = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$")


class DispatchError(Exception):
    """A reason the call cannot be made or did not succeed; becomes the failure envelope."""


@dataclass(frozen=True)
class RestHandler:
    """Where a tool call goes: an ERP tool file's `handlerConfig`."""

    path: str
    method: str
    path_params: tuple[str, ...] = ()
    query_params: tuple[str, ...] = ()
    body_from_input: bool = False

    @classmethod
    def from_config(cls, handler_config: dict) -> RestHandler:
        """Read a `handlerConfig` object; a ValueError says what is wrong with it."""
        if not isinstance(handler_config, Mapping):
            raise ValueError("handlerConfig must be an object")
        path = handler_config.get("path")
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError("handlerConfig.path must be a string starting with '/'")
        method = handler_config.get("method")
        if not isinstance(method, str) or method.upper() not in METHODS:
            raise ValueError(f"handlerConfig.method must be one of {', '.join(sorted(METHODS))}")
        body = handler_config.get("bodyFromInput", False)
        if body is None:
            body = False
        if not isinstance(body, bool):
            raise ValueError("handlerConfig.bodyFromInput must be a boolean")
        handler = cls(
            path=path,
            method=method.upper(),
            path_params=_names(handler_config, "pathParams"),
            query_params=_names(handler_config, "queryParams"),
            body_from_input=body,
        )
        problem = handler.problem()
        if problem:
            raise ValueError(problem)
        return handler

    def problem(self) -> str | None:
        """What makes this handler unusable (None when it is fine)."""
        if self.method not in METHODS:
            return f"method {self.method!r} is not one of {', '.join(sorted(METHODS))}"
        if not self.path.startswith("/"):
            return f"path {self.path!r} does not start with '/'"
        if problem := placeholder_problem(self.path):
            return f"path {self.path!r} {problem}"
        placeholders = PLACEHOLDER.findall(self.path)
        unlisted = [name for name in placeholders if name not in self.path_params]
        if unlisted:
            return f"path placeholder {{{unlisted[0]}}} is not listed in pathParams"
        unused = [name for name in self.path_params if name not in placeholders]
        if unused:
            return f"pathParams entry {unused[0]!r} has no {{{unused[0]}}} placeholder in the path"
        return None


def placeholder_problem(path: str) -> str | None:
    """What keeps path from splitting into text and `{name}` placeholders (None when it
    splits); the kit reports the same as ERP-TOOL-006."""
    names = PLACEHOLDER.findall(path)
    if "" in names:
        return "has an empty {} placeholder"
    if len(set(names)) != len(names):
        return "repeats a placeholder"
    leftover = PLACEHOLDER.sub("", path)
    if "{" in leftover or "}" in leftover:
        return "has an unbalanced brace (a stray or doubled one, or one around a '/')"
    return None


def _names(config: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = config.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"handlerConfig.{key} must be a list of non-empty strings")
    if len(set(value)) != len(value):
        raise ValueError(f"handlerConfig.{key} lists a name twice")
    return tuple(value)


def _scalar_text(value: Any, what: str) -> str:
    """A JSON scalar as URL text: booleans as true/false, numbers and strings as written."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise DispatchError(f"{what} must be a string, number or boolean, not {type(value).__name__}")


def encode_segment(value: Any, name: str = "value") -> str:
    """One path segment holding `value`: nothing in it can add a segment or end the path.

    Percent-encoding alone is not enough: many servers (uvicorn, servlet containers) decode
    `%2F` before routing, and a servlet ERP resolves a decoded `..` (or `..;x`). So a value that
    holds a separator or is a dot segment, also after NFKC folding of lookalikes such as
    fullwidth dots and slashes, is refused rather than sent.
    """
    if value is None:
        raise DispatchError(f"missing path parameter {name!r}")
    text = _scalar_text(value, f"path parameter {name!r}")
    if text == "":
        raise DispatchError(f"path parameter {name!r} must not be empty")
    folded = unicodedata.normalize("NFKC", text)
    if "/" in folded or "\\" in folded:
        raise DispatchError(f"path parameter {name!r} must not contain '/' or '\\'")
    if folded.split(";", 1)[0] in (".", ".."):
        raise DispatchError(f"path parameter {name!r} must not be a dot segment ('.' or '..')")
    return quote(text, safe="")


def substitute_path(handler: RestHandler, arguments: Mapping[str, Any]) -> str:
    """The handler's path with each `{name}` replaced by its encoded argument."""
    problem = handler.problem()
    if problem:
        raise DispatchError(f"unusable handlerConfig: {problem}")
    missing = [name for name in handler.path_params if name not in arguments]
    if missing:
        raise DispatchError(f"missing path parameter {missing[0]!r}")
    return PLACEHOLDER.sub(
        lambda match: encode_segment(arguments[match.group(1)], match.group(1)), handler.path
    )


def query_items(handler: RestHandler, arguments: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The query string as (key, value) pairs, in the handler's order: lists repeat the key,
    booleans are true/false, absent keys and None values are left out."""
    items: list[tuple[str, str]] = []
    for name in handler.query_params:
        value = arguments.get(name)
        if value is None:
            continue
        values = value if isinstance(value, list) else [value]
        for item in values:
            if item is None:
                continue
            if isinstance(item, list | dict):
                raise DispatchError(f"query parameter {name!r} must hold scalars or a list of them")
            items.append((name, _scalar_text(item, f"query parameter {name!r}")))
    return items


def _header(value: Any, name: str) -> str:
    if not isinstance(value, str) or not HEADER_VALUE.match(value):
        raise DispatchError(
            f"{name} must be a non-empty printable ASCII string without control characters"
        )
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _excerpt(body: bytes) -> str:
    text = " ".join(body.decode("utf-8", errors="replace").split())
    if len(text) > EXCERPT_CHARS:
        text = text[:EXCERPT_CHARS] + "..."
    return text or "(empty body)"


async def _read_capped(response: httpx.Response, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise DispatchError(f"the response is larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def build_request(
    client: httpx.AsyncClient,
    base_url: str,
    handler: RestHandler,
    arguments: Mapping[str, Any],
    *,
    tenant: str,
    actor: str,
    timeout: float = 30.0,
) -> httpx.Request:
    """The request `dispatch` would send; a DispatchError says why there is none."""
    if not isinstance(arguments, Mapping):
        raise DispatchError("arguments must be a JSON object")
    headers = {
        "Accept": "application/json",
        "X-Tenant-Id": _header(tenant, "the tenant"),
        "X-Actor": _header(actor, "the actor"),
    }
    try:
        base = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise DispatchError(f"invalid ERP base URL {base_url!r}: {exc}") from None
    if base.scheme not in ("http", "https") or not base.host or base.query or base.fragment:
        raise DispatchError(f"invalid ERP base URL {base_url!r}: need http(s)://host[:port][/path]")
    path = substitute_path(handler, arguments)
    content: bytes | None = None
    if handler.body_from_input:
        try:
            content = json.dumps(dict(arguments), ensure_ascii=False, allow_nan=False).encode()
        except ValueError as exc:
            raise DispatchError(f"the input cannot be sent as JSON: {exc}") from None
        headers["Content-Type"] = "application/json"
    request = client.build_request(
        handler.method,
        base_url.rstrip("/") + path,
        params=query_items(handler, arguments),
        headers=headers,
        content=content,
        timeout=timeout,
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
    client: httpx.AsyncClient,
    base_url: str,
    handler: RestHandler,
    arguments: dict,
    *,
    tenant: str,
    actor: str,
    timeout: float = 30.0,
    max_response_bytes: int = MAX_RESPONSE_BYTES,
) -> str:
    """Call the ERP endpoint for one tool call; the JSON answer as text, or the failure
    envelope. Redirects are not followed (they would carry the tenant headers elsewhere);
    GET, PUT and DELETE are retried once if the connection drops before an answer.

    A 2xx answer with an empty body (204 No Content from a DELETE, say) is a success with
    nothing to report: `{"success": true, "status": <code>}`."""
    try:
        request = build_request(
            client, base_url, handler, arguments, tenant=tenant, actor=actor, timeout=timeout
        )
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
        if not body.strip():
            return json.dumps({"success": True, "status": status})
        try:
            value = json.loads(body, parse_constant=_no_constant)
        except (ValueError, UnicodeDecodeError):
            raise DispatchError(
                f"{where} answered HTTP {status} with a body that is not JSON: {_excerpt(body)}"
            ) from None
        return json.dumps(value, ensure_ascii=False)
    except DispatchError as exc:
        return failure(str(exc))
    except Exception as exc:  # the callback contract: never raise to the model layer
        return failure(f"REST dispatch failed: {type(exc).__name__}: {exc}")
