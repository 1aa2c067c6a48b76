"""The built-in `web_fetch` tool: one public page as bounded, readable text
(spec: host.md#tool-snapshots-and-built-in-names)."""

from __future__ import annotations

import asyncio
import codecs
import re
from collections.abc import Iterable
from typing import Any

import httpx

from plugin_spec.builtin_names import WEB_FETCH
from plugin_spec.tool_definition import Effect, ToolDefinition
from reference_host.builtins._args import optional_integer, required_string
from reference_host.builtins.fetch_allow import AllowList
from reference_host.builtins.html_text import html_to_text
from reference_host.builtins.pinned_connect import PublicOnlyTransport
from reference_host.builtins.public_address import NotPublic
from reference_host.tools.callbacks import CallContext, CallPlan, SentAsIs, ToolResult, failure

DEFAULT_MAX_CHARS = 20_000
MAX_CHARS_CAP = 100_000
DEFAULT_MAX_BYTES = 4 * 1024 * 1024
DEFAULT_TIMEOUT = 20.0
MAX_REDIRECTS = 10
_ONLY_PUBLIC = "only public addresses are fetched (allow one with --web-fetch-allow)"

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain", "text/markdown"})

_ACCEPT = "text/html, application/xhtml+xml;q=0.9, text/plain;q=0.8, text/markdown;q=0.8"
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)

WEB_FETCH_DEFINITION = ToolDefinition(
    name=WEB_FETCH,
    description=(
        "Fetch one public web page over http(s) and return its title and readable text "
        "(HTML is reduced to text; scripts and styles are dropped). Only HTML and plain-text "
        "pages are supported. Long pages are cut to maxChars and marked truncated."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "url": {
                "type": "string",
                "description": "Absolute http:// or https:// URL of the page to fetch.",
            },
            "maxChars": {
                "type": "integer",
                "description": (
                    f"Most characters of text to return (default {DEFAULT_MAX_CHARS}, "
                    f"at most {MAX_CHARS_CAP})."
                ),
                "minimum": 1,
                "maximum": MAX_CHARS_CAP,
            },
        },
        "required": ["url"],
    },
)


class _Refused(Exception):
    """A fetch that cannot give text; the message goes to the model as is."""


class _NotReached(Exception):
    """A URL web_fetch refuses to connect to; the message names it and says why."""


class WebFetchTool(SentAsIs):
    """`web_fetch`: GET with redirects, a total deadline and a body-size cap, then text.

    Every connection, redirect hops included, goes to a public address or to a host the
    operator allowed (`allow`, entries `HOST` or `HOST:PORT`). Each call has its own client,
    so nothing one fetch opened is reused by another. Every failure comes back as the failure
    envelope; `call` never raises.
    """

    def __init__(
        self,
        *,
        allow: Iterable[str] = (),
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_redirects: int = MAX_REDIRECTS,
    ) -> None:
        self._allowed = AllowList.parse(allow)
        self._timeout = timeout
        self._max_bytes = max_bytes
        self._max_redirects = max_redirects
        self._ssl_context = httpx.create_ssl_context()

    definition = WEB_FETCH_DEFINITION
    effect = Effect.READ
    owner = "builtin"

    async def call(self, plan: CallPlan, context: CallContext) -> ToolResult:
        try:
            arguments = plan.arguments.object()
            url = _checked_url(required_string(arguments, "url"))
            max_chars = optional_integer(
                arguments, "maxChars", default=DEFAULT_MAX_CHARS, minimum=1, maximum=MAX_CHARS_CAP
            )
        except ValueError as exc:
            return failure(f"web_fetch: {exc}")
        try:
            async with asyncio.timeout(self._timeout):
                final_url, title, text = await self._fetch(url)
        except _NotReached as exc:
            return failure(f"web_fetch refuses {exc}")
        except _Refused as exc:
            return failure(f"web_fetch: {exc}")
        except (TimeoutError, httpx.TimeoutException):
            return failure(f"web_fetch: timed out after {self._timeout:g}s fetching {url}")
        except httpx.HTTPError as exc:
            return failure(f"web_fetch: could not fetch {url}: {_describe(exc)}")
        except Exception as exc:  # a tool never raises to the model layer (spec: host.md)
            return failure(f"web_fetch: unexpected error fetching {url}: {_describe(exc)}")
        result: dict[str, Any] = {
            "success": True,
            "url": final_url,
            "title": title,
            "text": text[:max_chars],
            "truncated": len(text) > max_chars,
        }
        return ToolResult.of(result)

    async def _fetch(self, url: str) -> tuple[str, str, str]:
        """Follow redirects one hop at a time, so each target is checked like the first."""
        transport = PublicOnlyTransport(self._allowed, self._ssl_context)
        async with httpx.AsyncClient(
            transport=transport, trust_env=False, timeout=self._timeout
        ) as client:
            hop = client.build_request("GET", url, headers={"Accept": _ACCEPT})
            for redirects in range(self._max_redirects + 1):
                try:
                    response = await client.send(hop, stream=True, follow_redirects=False)
                except NotPublic as exc:
                    via = f" (redirected from {url})" if redirects else ""
                    raise _NotReached(f"{hop.url}{via}: {exc}; {_ONLY_PUBLIC}") from None
                try:
                    next_hop = response.next_request
                    if next_hop is None:
                        return await self._read(response)
                finally:
                    await response.aclose()
                if next_hop.url.scheme not in ("http", "https"):
                    raise _Refused(f"redirected to a non-http(s) URL: {next_hop.url}")
                hop = next_hop
        raise _Refused(f"more than {self._max_redirects} redirects fetching {url}")

    async def _read(self, response: httpx.Response) -> tuple[str, str, str]:
        final_url = str(response.url)
        if not response.is_success:
            reason = f" {response.reason_phrase}" if response.reason_phrase else ""
            raise _Refused(f"HTTP {response.status_code}{reason} fetching {final_url}")
        media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type not in HTML_TYPES and media_type not in TEXT_TYPES:
            shown = media_type or "none given"
            raise _Refused(
                f"unsupported content type ({shown}) at {final_url}; "
                "only HTML and plain text can be read"
            )
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_bytes:
            raise _Refused(self._too_big(final_url))
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body.extend(chunk)
            if len(body) > self._max_bytes:
                raise _Refused(self._too_big(final_url))
        is_html = media_type in HTML_TYPES
        decoded = _decode(bytes(body), response.charset_encoding, sniff=is_html)
        if is_html:
            title, text = html_to_text(decoded)
        else:
            title, text = "", decoded.strip()
        return final_url, title, text

    def _too_big(self, url: str) -> str:
        return f"response from {url} is larger than {self._max_bytes} bytes"


def _checked_url(raw: str) -> str:
    try:
        url = httpx.URL(raw)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ValueError(f"invalid URL {raw!r}: {exc}") from None
    if url.scheme not in ("http", "https"):
        raise ValueError(f"only http and https URLs can be fetched, not {raw!r}")
    if not url.host:
        raise ValueError(f"URL has no host: {raw!r}")
    return str(url)


def _decode(body: bytes, charset: str | None, *, sniff: bool) -> str:
    """Text of a body: the header's charset, else a <meta charset> (HTML), else UTF-8."""
    candidates = [charset] if charset else []
    if sniff and not charset and (match := _META_CHARSET.search(body[:4096])):
        candidates.append(match.group(1).decode("ascii"))
    for candidate in candidates:
        try:
            codecs.lookup(candidate)
        except LookupError:
            continue
        return body.decode(candidate, errors="replace").removeprefix("\ufeff")
    return body.decode("utf-8", errors="replace").removeprefix("\ufeff")


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
