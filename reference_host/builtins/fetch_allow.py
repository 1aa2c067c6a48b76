"""The operator's exceptions to `web_fetch`'s public-only rule: named hosts, each with or
without a port (`--web-fetch-allow intranet.example:8080`; spec: host.md#what-web_fetch-can-reach).

An entry matches the host exactly as the URL names it (after httpx's normalisation: lower
case, IDNA), never by address: allowing `intranet.example` does not allow `127.0.0.1`, nor
another name that resolves to the same address.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import ip_address
from urllib.parse import urlsplit

import httpx

ENTRY_FORM = "HOST or HOST:PORT (e.g. intranet.example:8080 or [fd00::5]:8080)"


def allow_entry(text: str) -> tuple[str, int | None]:
    """The host and port (None: any port) of one entry; ValueError naming what is wrong."""
    try:
        parts = urlsplit(f"//{text.strip()}")
        port = parts.port
        host = httpx.URL(f"http://{parts.netloc}").raw_host.decode("ascii")
    except (ValueError, httpx.InvalidURL) as exc:
        raise ValueError(f"web_fetch allow entry {text!r} is not {ENTRY_FORM}: {exc}") from None
    if not host or "@" in parts.netloc or parts.path or parts.query or parts.fragment:
        raise ValueError(f"web_fetch allow entry {text!r} is not {ENTRY_FORM}")
    return canonical_host(host), port


def canonical_host(host: str) -> str:
    """One spelling per host: an IP literal in its compressed form, a name in lower case."""
    try:
        return str(ip_address(host))
    except ValueError:
        return host.lower()


@dataclass(frozen=True)
class AllowList:
    """Hosts `web_fetch` may reach whatever their addresses are."""

    entries: frozenset[tuple[str, int | None]] = frozenset()

    @classmethod
    def parse(cls, texts: Iterable[str]) -> AllowList:
        return cls(frozenset(allow_entry(text) for text in texts))

    def allows(self, host: str, port: int) -> bool:
        name = canonical_host(host)
        return (name, port) in self.entries or (name, None) in self.entries
