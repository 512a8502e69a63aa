"""A node's addresses: an IPv4 address written as :mod:`ipaddress` writes it is kept as
given without being parsed; every other spelling is parsed, and the result is exactly
what :mod:`ipaddress` makes of it (or the same refusal), whatever the digits."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pilothouse.push.proxy import BadNode, parse_node

OCTETS = st.one_of(
    st.integers(0, 300).map(str),
    st.text("0123456789", min_size=1, max_size=4),  # leading zeros, too long
    st.sampled_from(["٣", "１", "", "-1", "+1", " 1"]),  # Unicode digits, signs, blanks
)


def addresses_of(ip: str) -> tuple[str, ...]:
    return parse_node(f"sidecar~{ip}~app-0.default~default.svc.cluster.local").ip_addresses


def as_ipaddress_writes(ip: str) -> str | None:
    try:
        return str(ipaddress.ip_address(ip))
    except ValueError:
        return None


@given(st.lists(OCTETS, min_size=3, max_size=5).map(".".join))
@example("10.0.0.1")
@example("255.255.255.255")
@example("010.0.0.1")
@example("256.0.0.1")
@example("1.2.3.4\n")
def test_an_ipv4_address_is_what_ipaddress_makes_of_it(ip: str) -> None:
    expected = as_ipaddress_writes(ip)
    if expected is None or not ip or "~" in ip:
        with pytest.raises(BadNode):
            addresses_of(ip)
    else:
        assert addresses_of(ip) == (expected,)


def test_other_spellings_are_still_parsed_and_written_canonically() -> None:
    assert addresses_of("2001:DB8:0:0::1") == ("2001:db8::1",)
    assert parse_node(
        "sidecar~10.0.0.1~app-0.default~default.svc.cluster.local",
        {"INSTANCE_IPS": "10.0.0.1,FE80::1, 10.0.0.2"},
    ).ip_addresses == ("10.0.0.1", "fe80::1", "10.0.0.2")
