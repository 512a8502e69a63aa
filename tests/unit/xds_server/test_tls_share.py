"""UnauthenticatedSlots: the TLS port's slots for connections not yet trusted, bounded
in all and per client address, and the limits they default to."""

from __future__ import annotations

import pytest

from pilothouse.xds.server.tls_share import (
    ADDRESS_TAKEN,
    ALL_TAKEN,
    UnauthenticatedSlots,
    per_address_limit,
    source_of,
)


def test_one_address_takes_its_share_and_no_more() -> None:
    slots = UnauthenticatedSlots(limit=8, per_address=3)
    assert [slots.take("10.0.0.1") for _ in range(4)] == [None, None, None, ADDRESS_TAKEN]
    assert (slots.taken, slots.taken_by("10.0.0.1")) == (3, 3)
    # another address still finds room, up to the limit in all
    assert [slots.take("10.0.0.2") for _ in range(3)] == [None, None, None]
    assert [slots.take("10.0.0.3"), slots.take("10.0.0.3")] == [None, None]
    assert slots.take("10.0.0.4") == ALL_TAKEN  # 8 taken: the limit in all comes first
    assert slots.taken == 8


def test_a_slot_given_back_is_free_again() -> None:
    slots = UnauthenticatedSlots(limit=4, per_address=2)
    assert [slots.take("10.0.0.1"), slots.take("10.0.0.1")] == [None, None]
    slots.give_back("10.0.0.1")
    assert (slots.taken, slots.taken_by("10.0.0.1")) == (1, 1)
    assert slots.take("10.0.0.1") is None
    slots.give_back("10.0.0.1")
    slots.give_back("10.0.0.1")
    assert (slots.taken, slots.taken_by("10.0.0.1")) == (0, 0)


@pytest.mark.parametrize(
    ("configured", "limit", "share"),
    [(0, 1024, 256), (0, 128, 32), (0, 16, 4), (0, 8, 4), (0, 3, 3), (5, 128, 5), (500, 128, 128)],
)
def test_the_share_per_address(configured: int, limit: int, share: int) -> None:
    assert per_address_limit(configured, limit) == share
    assert UnauthenticatedSlots(limit, share).per_address == share


@pytest.mark.parametrize(
    ("peername", "source"),
    [(("127.0.0.2", 4000), "127.0.0.2"), (("::ffff:10.1.2.3", 4000, 0, 0), "10.1.2.3"),
     (("fe80::1%eth0", 4000, 0, 2), "fe80::1"), (("2001:db8::7", 1, 0, 0), "2001:db8::7"),
     (None, "unknown"), ((), "unknown")],
)  # fmt: skip
def test_the_source_is_the_address_without_its_port(peername: object, source: str) -> None:
    assert source_of(peername) == source
