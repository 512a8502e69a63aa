"""Comparing held and acked digests: each kind of difference, and the verdict."""

from __future__ import annotations

from pilothouse.inspector.compare import Difference, Kind, TypeCounts, Verdict, compare
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS, SDS


def test_the_same_digests_are_synced_and_other_types_are_not_compared() -> None:
    digests = {CDS: {"a": "1", "b": "2"}, LDS: {"l": "3"}}
    result = compare({**digests, SDS: {"s": "4"}}, digests)
    assert result.verdict is Verdict.SYNCED and result.differences == ()
    assert result.counts == {
        CDS: TypeCounts(2, 2, 2),
        EDS: TypeCounts(0, 0, 0),
        LDS: TypeCounts(1, 1, 1),
        RDS: TypeCounts(0, 0, 0),
    }


def test_every_kind_of_difference_is_named_in_push_order() -> None:
    held = {CDS: {"a": "1", "rogue": "9"}, RDS: {"80": "5"}}
    acked = {CDS: {"a": "1"}, EDS: {"a": "7"}, RDS: {"80": "6"}}
    result = compare(held, acked)
    assert result.verdict is Verdict.DIVERGED
    assert result.differences == (
        Difference(CDS, "rogue", Kind.NOT_ACKED, "9", None),
        Difference(EDS, "a", Kind.NOT_HELD, None, "7"),
        Difference(RDS, "80", Kind.DIFFERENT, "5", "6"),
    )
    assert result.counts[CDS] == TypeCounts(2, 1, 1)
    assert result.counts[RDS] == TypeCounts(1, 1, 0)
