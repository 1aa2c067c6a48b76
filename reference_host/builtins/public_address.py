"""Which IP addresses `web_fetch` may connect to: public ones only
(spec: host.md#what-web_fetch-can-reach).

An address is judged as the operating system would use it: an IPv6 address that carries an
IPv4 one (IPv4-mapped, NAT64, 6to4, Teredo) is refused when the IPv4 address is, because
that is where the packets end up. The standard library's properties decide; the two prefixes
below are only the ones it has no property for.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

IPAddress = IPv4Address | IPv6Address

# RFC 6052's well-known NAT64 prefix: the last 32 bits are the IPv4 address reached.
_NAT64 = IPv6Network("64:ff9b::/96")
# RFC 6598's shared (carrier-grade NAT) space; `is_global` already refuses it, this only
# names it in the message.
_SHARED = IPv4Network("100.64.0.0/10")


class NotPublic(Exception):
    """A connection `web_fetch` refuses to open; the message says what the address is."""

    def __init__(self, address: IPAddress, reason: str) -> None:
        super().__init__(f"{address} is {reason}")
        self.address = address
        self.reason = reason


def refusal(address: IPAddress) -> str | None:
    """Why `address` is not public (e.g. "a loopback address"), or None when it is."""
    if isinstance(address, IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            form, ipv4, translated = embedded
            why = refusal(ipv4)
            if why is not None:
                return f"{form} of {ipv4}, {why}"
            if translated:  # the IPv6 form is only a spelling of the public IPv4 address
                return None
    return _own_refusal(address)


def _embedded_ipv4(address: IPv6Address) -> tuple[str, IPv4Address, bool] | None:
    """The IPv4 address an IPv6 one leads to, how, and whether it is a mere translation."""
    if address.ipv4_mapped is not None:
        return "an IPv4-mapped form", address.ipv4_mapped, True
    if address in _NAT64:
        return "a NAT64 form", IPv4Address(int(address) & 0xFFFF_FFFF), True
    if address.sixtofour is not None:
        return "a 6to4 address", address.sixtofour, False
    if address.teredo is not None:
        return "a Teredo address", address.teredo[1], False
    return None


def _own_refusal(address: IPAddress) -> str | None:
    if address.is_loopback:
        return "a loopback address"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if isinstance(address, IPv6Address) and address.is_site_local:
        return "a site-local address"
    if address.is_reserved:
        return "a reserved address"
    if address.is_private:
        return "a private address"
    if isinstance(address, IPv4Address) and address in _SHARED:
        return "a shared (carrier-grade NAT) address"
    if not address.is_global:
        return "not a public address"
    return None
