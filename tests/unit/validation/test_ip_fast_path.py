"""is_ip's dotted-quad fast path agrees with the ipaddress module on every IPv4-like text."""

from __future__ import annotations

import ipaddress

from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.config.validation.addresses import is_ip

PARTS = st.sampled_from(["0", "00", "1", "09", "99", "100", "199", "249", "250", "255", "256", ""])


def reference(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(st.lists(PARTS, min_size=3, max_size=5), st.sampled_from(["", " ", "\n", "/8"]))
def test_fast_path_matches_ipaddress(parts: list[str], tail: str) -> None:
    text = ".".join(parts) + tail
    assert is_ip(text) == reference(text)


def test_ipv6_still_accepted() -> None:
    assert is_ip("2001:db8::1") and is_ip("::1") and not is_ip("2001:db8::/32")
