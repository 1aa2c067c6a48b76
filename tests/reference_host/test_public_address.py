"""web_fetch's address check and allow-list, unit by unit (spec: host.md#what-web_fetch-can-reach).

No public host can be reached from the test machines, so that a public address passes is shown
here, on the check itself; test_web_fetch_ssrf.py shows the refusals end to end.
"""

from __future__ import annotations

from ipaddress import ip_address

import pytest

from reference_host.__main__ import build_parser
from reference_host.builtins.fetch_allow import AllowList, allow_entry
from reference_host.builtins.public_address import refusal

LOOPBACK = "a loopback address"
PRIVATE = "a private address"


@pytest.mark.parametrize(
    "address",
    [
        "93.184.216.34",
        "8.8.8.8",
        "1.1.1.1",
        "2606:4700:4700::1111",
        "2a00:1450:4001:82a::200e",
        "::ffff:8.8.8.8",  # an IPv4-mapped spelling of a public address is that address
        "64:ff9b::808:808",  # NAT64 of 8.8.8.8
        "2002:808:808::1",  # 6to4 through a public IPv4 address
    ],
)
def test_a_public_address_passes(address: str) -> None:
    assert refusal(ip_address(address)) is None


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", LOOPBACK),
        ("127.255.255.254", LOOPBACK),
        ("::1", LOOPBACK),
        ("10.1.2.3", PRIVATE),
        ("172.16.0.1", PRIVATE),
        ("192.168.1.1", PRIVATE),
        ("fd12:3456::1", PRIVATE),
        ("169.254.169.254", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("100.64.0.1", "a shared (carrier-grade NAT) address"),
        ("100.127.255.254", "a shared (carrier-grade NAT) address"),
        ("224.0.0.1", "a multicast address"),
        ("239.255.255.250", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("ff0e::1", "a multicast address"),
        ("0.0.0.0", "the unspecified address"),
        ("::", "the unspecified address"),
        ("240.0.0.1", "a reserved address"),
        ("255.255.255.255", "a reserved address"),
        ("fec0::1", "a site-local address"),
        ("::127.0.0.1", "a reserved address"),  # IPv4-compatible (deprecated)
        ("::ffff:0:7f00:1", "a reserved address"),  # IPv4-translated (SIIT)
        ("::ffff:127.0.0.1", f"an IPv4-mapped form of 127.0.0.1, {LOOPBACK}"),
        ("::ffff:10.0.0.1", f"an IPv4-mapped form of 10.0.0.1, {PRIVATE}"),
        ("64:ff9b::7f00:1", f"a NAT64 form of 127.0.0.1, {LOOPBACK}"),
        ("64:ff9b::a9fe:a9fe", "a NAT64 form of 169.254.169.254, a link-local address"),
        ("2002:7f00:1::1", f"a 6to4 address of 127.0.0.1, {LOOPBACK}"),
        ("2002:a00:1::", f"a 6to4 address of 10.0.0.1, {PRIVATE}"),
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", f"a Teredo address of 127.0.0.1, {LOOPBACK}"),
    ],
)
def test_what_is_refused_and_why(address: str, reason: str) -> None:
    assert refusal(ip_address(address)) == reason


@pytest.mark.parametrize(
    "address",
    ["192.0.2.1", "198.51.100.7", "203.0.113.9", "198.18.0.1", "2001:db8::1", "100::1"],
)
def test_documentation_benchmark_and_discard_ranges_are_refused(address: str) -> None:
    """Not public, whatever name the running Python's ipaddress gives their range."""
    assert refusal(ip_address(address)) is not None


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        ("intranet.example:8080", ("intranet.example", 8080)),
        (" Intranet.Example ", ("intranet.example", None)),
        ("localhost:80", ("localhost", 80)),  # an explicit default port is still one port
        ("[::1]:8080", ("::1", 8080)),
        ("[0:0::1]", ("::1", None)),
        ("10.0.0.5", ("10.0.0.5", None)),
        ("bücher.example", ("xn--bcher-kva.example", None)),
    ],
)
def test_allow_entries_are_a_host_and_maybe_a_port(
    text: str, entry: tuple[str, int | None]
) -> None:
    assert allow_entry(text) == entry


@pytest.mark.parametrize(
    "text",
    [
        "",
        "http://intranet.example",
        "intranet.example/path",
        "user@intranet.example",
        "x:port",
        "x:99999",
        "[::1",
        "x?y=1",
        "x#top",
        ":8080",
    ],
)
def test_a_bad_allow_entry_says_what_form_is_expected(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not HOST or HOST:PORT"):
        allow_entry(text)


def test_the_allow_list_matches_the_name_and_port_as_given() -> None:
    allowed = AllowList.parse(["intranet.example:8080", "wiki.example", "[::1]:9000"])
    assert allowed.allows("intranet.example", 8080)
    assert allowed.allows("INTRANET.example", 8080)
    assert not allowed.allows("intranet.example", 8081)
    assert allowed.allows("wiki.example", 80) and allowed.allows("wiki.example", 8443)
    assert allowed.allows("::1", 9000) and allowed.allows("0::1", 9000)
    assert not allowed.allows("127.0.0.1", 9000)
    assert not allowed.allows("other.example", 8080)
    assert not AllowList().allows("localhost", 80)


def test_the_command_line_takes_allow_entries_and_refuses_bad_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = build_parser()
    args = parser.parse_args(
        ["serve", "--web-fetch-allow", "intranet.example:8080", "--web-fetch-allow", "[fd00::5]"]
    )
    assert args.web_fetch_allow == ["intranet.example:8080", "[fd00::5]"]
    assert parser.parse_args(["serve"]).web_fetch_allow == []
    with pytest.raises(SystemExit) as stopped:
        parser.parse_args(["serve", "--web-fetch-allow", "http://intranet.example/"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "argument --web-fetch-allow: web_fetch allow entry 'http://intranet.example/' " in err
