"""Who may talk to the host over HTTP (spec: host.md#allowed-roots-and-hosts): allowed Host
values, a bearer token, Origin.

Why: a loopback service without these is reachable from any web page through DNS rebinding
(a page on evil.example re-points its name to 127.0.0.1 and its script then talks to the
host as a same-origin site; that hit the MCP Inspector, CVE-2025-49596), a page can always
send a cross-site POST, and any program on the machine (a plugin's worker with the network,
an MCP server) can call it. Three checks, outermost first:

- Host: Starlette's TrustedHostMiddleware answers 400 to a `Host` header whose name is not
  in the allow-list (any port: it compares the name only; `[::1]` is written with brackets).
  Default: localhost, 127.0.0.1, [::1]. A rebinding page sends its own name, so it is refused.
- Token: with a token configured, every request needs `Authorization: Bearer <token>`
  (compared in constant time), else 401. `python -m reference_host serve` makes a fresh one
  at each start unless told otherwise (reference_host.http.token_file). The exception is a
  GET of a public path (the dev console's page and assets, reference_host.http.console): a
  browser loads them before the page can send the token, and they hold no data; every API
  call the page makes, its event streams included, needs the token as usual.
- Origin: a state-changing request (POST, PUT, PATCH, DELETE; the chat and workflow-run
  streams are POSTs too) that carries an `Origin` must come from the host's own origin:
  the scheme of the request and the `Host` it was sent to (already allowed), port included,
  else 403. Browsers send Origin on every such request and set Host themselves, so a page on
  another site, or on another port of this machine (another local server's page), is
  refused; a request without one comes from a non-browser client (curl, the kit, a script)
  and is let through: Origin guards against browsers, the token against everyone else.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from fastapi import FastAPI
from starlette.datastructures import Headers
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from reference_host.http.body_limits import limit_bodies
from reference_host.http.error_answers import ContainErrors, error_response

TOKEN_ENV = "REFERENCE_HOST_TOKEN"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def is_loopback(address: str) -> bool:
    """Whether binding address serves this machine only (`localhost` or a loopback IP)."""
    if address.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def host_entry(name: str) -> str:
    """A host name or address as the allow-list holds it: lower case, IPv6 in brackets."""
    name = name.strip().lower()
    if ":" in name and not name.startswith("["):
        return f"[{name}]"
    return name


def origin_host(origin: str) -> str | None:
    """The allow-list entry an `Origin` value names, or None when it is no http(s) origin
    (`null`, a path, user info, a bad port)."""
    try:
        parts = urlsplit(origin)
        parts.port  # noqa: B018  (raises ValueError for a bad port)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    if parts.path or parts.query or parts.fragment or "@" in parts.netloc:
        return None
    return host_entry(parts.hostname)


DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(origin: str) -> tuple[str, str, int] | None:
    """The (scheme, allow-list entry, port) an `Origin` value names, the port made explicit;
    None when it is no http(s) origin."""
    host = origin_host(origin)
    if host is None:
        return None
    parts = urlsplit(origin)
    scheme = parts.scheme.lower()
    return scheme, host, parts.port or DEFAULT_PORTS[scheme]


def own_origin(scheme: str, host_header: str | None) -> tuple[str, str, int] | None:
    """The host's origin as this request addressed it: its scheme and its `Host` header."""
    if not host_header or scheme not in DEFAULT_PORTS:
        return None
    return origin_of(f"{scheme}://{host_header}")


def is_valid_token(token: str) -> bool:
    """A token is visible ASCII (it travels in a header) and at least 16 characters long."""
    return len(token) >= 16 and all("!" <= char <= "~" for char in token)


class RequestGuard:
    """ASGI middleware: the token check (401) and the Origin check (403), as JSON errors."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: Iterable[str],
        token: str | None,
        public_paths: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.allowed = frozenset(host_entry(h) for h in allowed_hosts)
        self.token = token.encode() if token else None
        self.public = frozenset(public_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if (
            self.token is not None
            and not self._is_public(scope)
            and not self._authorized(headers.get("authorization"))
        ):
            answer = error_response(
                401,
                "a bearer token is required: send Authorization: Bearer <token>",
                headers={"WWW-Authenticate": "Bearer"},
            )
            await answer(scope, receive, send)
            return
        origin = headers.get("origin")
        if scope["method"] in UNSAFE_METHODS and not self._same_origin(origin, scope, headers):
            answer = error_response(
                403, "cross-site request refused: the Origin is not the host's own"
            )
            await answer(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _is_public(self, scope: Scope) -> bool:
        return scope["method"] in ("GET", "HEAD") and scope["path"] in self.public

    def _same_origin(self, origin: str | None, scope: Scope, headers: Headers) -> bool:
        """No Origin (not a browser), or the host's own: scheme, allowed name and port."""
        if origin is None:
            return True
        given = origin_of(origin)
        return (
            given is not None
            and given[1] in self.allowed
            and given == own_origin(scope["scheme"], headers.get("host"))
        )

    def _authorized(self, header: str | None) -> bool:
        scheme, _, credentials = (header or "").partition(" ")
        given = credentials.strip().encode("latin-1")
        assert self.token is not None
        return scheme.lower() == "bearer" and hmac.compare_digest(given, self.token)


def guard(
    app: FastAPI,
    *,
    allowed_hosts: Iterable[str],
    token: str | None,
    max_body_bytes: int,
    public_paths: Iterable[str] = (),
) -> None:
    """Wrap app in the checks, outermost first: errors contained, Host, token (not for a GET
    of public_paths) and Origin, the body limit (reference_host.http.body_limits)."""
    hosts = [host_entry(h) for h in allowed_hosts]
    limit_bodies(app, max_body_bytes)
    app.add_middleware(RequestGuard, allowed_hosts=hosts, token=token, public_paths=public_paths)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=hosts, www_redirect=False)
    app.add_middleware(ContainErrors)
