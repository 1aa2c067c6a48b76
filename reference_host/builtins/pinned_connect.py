"""Connections for `web_fetch` that go only where the address check said they may
(spec: host.md#what-web_fetch-can-reach).

The check and the connection must see the same DNS answer, or a name can resolve to a public
address for the check and to 127.0.0.1 for the connection (DNS rebinding). So the name is
resolved once, here, every address is judged, and the socket is opened to a judged address
itself. Everything above the socket is httpx's as usual: the request keeps its Host header,
and TLS sends the URL's name as SNI and checks the certificate against it.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterable
from ipaddress import ip_address

import httpcore
import httpx

from reference_host.builtins.fetch_allow import AllowList
from reference_host.builtins.public_address import IPAddress, NotPublic, refusal


class PublicOnlyBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, opening TCP connections to checked addresses only."""

    def __init__(self, allowed: AllowList) -> None:
        self._allowed = allowed
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await resolve(host, port)
        if not self._allowed.allows(host, port):
            for address in addresses:
                if (why := refusal(address)) is not None:
                    raise NotPublic(address, why)
        failed: httpcore.ConnectError | None = None
        for address in addresses:  # in the resolver's order, as the OS would try them
            try:
                return await self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except httpcore.ConnectError as exc:
                failed = exc
        raise failed or httpcore.ConnectError(f"{host} has no address")

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("web_fetch connects over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


async def resolve(host: str, port: int) -> list[IPAddress]:
    """The addresses the C library gives for host, in its order: odd IPv4 spellings such as
    `0x7f000001`, `2130706433` or `127.1` come back as the address they stand for."""
    try:
        answers = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
    found = (ip_address(sockaddr[0]) for family, _, _, _, sockaddr in answers if family in _IP)
    return list(dict.fromkeys(found))


_IP = (socket.AF_INET, socket.AF_INET6)


class PublicOnlyTransport(httpx.AsyncHTTPTransport):
    """httpx's transport whose connection pool connects through `PublicOnlyBackend`.

    httpx takes no network backend, so the pool it built is replaced by the same pool with
    one (no proxy: a proxy would resolve the name itself, beyond the check).
    """

    def __init__(self, allowed: AllowList, ssl_context: ssl.SSLContext) -> None:
        super().__init__(verify=ssl_context, trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context, network_backend=PublicOnlyBackend(allowed)
        )
