"""Where a ``jwksUri`` may lead: refused kinds of address (literal or resolved), the
opt-in by host name or CIDR, and this host's own addresses.

Host names resolve through a table given to the policy (a fake resolver: no DNS server
the test controls can run here); addresses written in the URL are judged as written."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence

import pytest

from pilothouse.security.jwks_addresses import (
    JwksAddressPolicy,
    UriRefused,
    own_address,
    parse_allowed,
)
from tests.e2e.harness.remote_peer import non_loopback_address


def table(answers: Mapping[str, Sequence[str]]) -> object:
    async def resolve(host: str, port: int) -> Sequence[str]:
        if host not in answers:
            raise OSError(f"[Errno -2] Name or service not known: {host}")
        return answers[host]

    return resolve


DNS = table(
    {
        "keys.example": ["8.8.8.8", "2001:4860:4860::8888"],
        "mixed.example": ["8.8.8.8", "10.0.0.1"],
        "metadata.example": ["169.254.169.254"],
        "issuer.internal": ["10.1.2.3"],
        "empty.example": [],
    }
)


def policy(*allowed: str) -> JwksAddressPolicy:
    return JwksAddressPolicy(allowed, resolve=DNS)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        ("http://127.0.0.1:15014/debug/adsz?push=true&n=1", "127.0.0.1 is loopback"),
        ("http://[::1]:15014/", "::1 is loopback"),
        ("http://169.254.169.254/latest/meta-data/", "is link-local"),
        ("http://[fe80::1]/", "is link-local"),
        ("http://10.0.0.5/keys", "is private"),
        ("http://172.16.3.4/", "is private"),
        ("https://192.168.1.1/", "is private"),
        ("http://[fd12:3456::1]/", "is private"),
        ("http://100.64.0.1/", "shared address space (CGNAT)"),
        ("http://0.0.0.0:15014/", "is unspecified"),
        ("http://[::]/", "is unspecified"),
        ("http://224.0.0.1/", "is multicast"),
        ("http://[ff02::1]/", "is multicast"),
        ("http://240.0.0.1/", "is reserved"),
        ("http://[::ffff:127.0.0.1]/", "is loopback"),
        ("http://[64:ff9b::a00:1]/", "is private"),
        ("http://[2002:7f00:1::]/", "is loopback"),
        ("http://metadata.example/", "metadata.example resolves to 169.254.169.254, which is link"),
        ("http://mixed.example/", "mixed.example resolves to 10.0.0.1, which is private"),
        ("http://nowhere.example/", "cannot resolve nowhere.example"),
        ("http://empty.example/", "resolves to no address"),
        ("ftp://keys.example/jwks", "scheme 'ftp'"),
        ("file:///etc/passwd", "scheme 'file'"),
        ("http:///jwks", "no host"),
        ("http://keys.example:99999/", "not a valid URL"),
    ],
)
async def test_refused(uri: str, reason: str) -> None:
    with pytest.raises(UriRefused, match=re.escape(reason)):
        await policy().destination(uri)


async def test_a_public_host_is_fetched_from_the_addresses_checked() -> None:
    found = await policy().destination("https://keys.example/.well-known/jwks.json")
    assert (found.scheme, found.host, found.port) == ("https", "keys.example", 443)
    assert found.addresses == ("8.8.8.8", "2001:4860:4860::8888")
    literal = await policy().destination("http://8.8.4.4:8080/jwks")
    assert (literal.host, literal.port, literal.addresses) == ("8.8.4.4", 8080, ("8.8.4.4",))


async def test_opt_in_by_host_name_address_or_cidr() -> None:
    by_name = await policy("issuer.internal").destination("http://issuer.internal/keys")
    assert by_name.addresses == ("10.1.2.3",)
    by_cidr = policy("10.0.0.0/8", "::1")
    assert (await by_cidr.destination("http://issuer.internal/k")).addresses == ("10.1.2.3",)
    assert (await by_cidr.destination("http://[::ffff:10.9.9.9]/")).addresses == ("::ffff:a09:909",)
    assert (await by_cidr.destination("http://[::1]:8080/")).port == 8080
    with pytest.raises(UriRefused, match=re.escape("192.168.0.1 is private")):
        await by_cidr.destination("http://192.168.0.1/")
    with pytest.raises(UriRefused, match=re.escape("127.0.0.1 is loopback")):
        await policy("127.0.0.2").destination("http://127.0.0.1/")
    # a name allows that name only, not the address it resolves to written as such
    with pytest.raises(UriRefused, match=re.escape("10.1.2.3 is private")):
        await policy("issuer.internal").destination("http://10.1.2.3/keys")


def test_allowed_entries_are_parsed_or_refused() -> None:
    names, networks = parse_allowed(["Issuer.Internal.", "10.0.0.0/8", "::1", "fd00::/8"])
    assert names == {"issuer.internal"}
    assert networks == (
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("::1/128"),
        ipaddress.ip_network("fd00::/8"),
    )
    for bad in ("", "http://x", "10.0.0.0/33", "a b"):
        with pytest.raises(ValueError, match="neither a host name nor an address or CIDR"):
            parse_allowed([bad])


def test_this_hosts_own_addresses() -> None:
    assert own_address(ipaddress.ip_address("127.0.0.1"))
    assert not own_address(ipaddress.ip_address("192.0.2.55"))
    mine = non_loopback_address()
    if mine is not None:
        assert own_address(ipaddress.ip_address(mine))
        assert policy().refusal(ipaddress.ip_address(mine)) is not None
