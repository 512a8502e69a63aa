"""The delta watch value: optimistic holdings, ACK folding and NACK roll-back."""

from __future__ import annotations

import pytest

from pilothouse.protocol.messages import NackError
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import EDS
from pilothouse.xds.protocol.delta_watch import DeltaWatch

ERR = NackError(13, "bad")
AB = Subscription(frozenset({"a", "b"}))


def test_send_is_optimistic_ack_confirms() -> None:
    watch = DeltaWatch.start(EDS, AB, {}).sent("n1", {"a": "1"}, frozenset(), 0.0)
    assert dict(watch.held) == {"a": "1"} and dict(watch.confirmed) == {}
    watch = watch.acked("n1", 1.0)
    assert dict(watch.confirmed) == {"a": "1"} and watch.in_flight == ()


def test_ack_of_later_response_settles_earlier_ones() -> None:
    watch = (
        DeltaWatch.start(EDS, AB, {})
        .sent("n1", {"a": "1"}, frozenset(), 0.0)
        .sent("n2", {"b": "1"}, frozenset(), 0.0)
        .acked("n2", 1.0)
    )
    assert dict(watch.confirmed) == {"a": "1", "b": "1"}
    assert watch.resources["a"].acked and watch.resources["b"].acked


def test_nack_rolls_back_only_its_response() -> None:
    watch = (
        DeltaWatch.start(EDS, AB, {"a": "0"})
        .sent("n1", {"a": "1"}, frozenset(), 0.0)
        .sent("n2", {"a": "2", "b": "2"}, frozenset(), 0.0)
        .sent("n3", {"b": "3"}, frozenset({"a"}), 0.0)
    )
    nacked = watch.nacked("n2", ERR, 1.0)
    assert dict(nacked.confirmed) == {"a": "1"}, "n1 implicitly ACKed"
    assert dict(nacked.held) == {"b": "3"}, "n3 still in flight on top"
    assert nacked.rejected == ({"a": "2", "b": "2"},)
    assert nacked.resources["b"].nonce == "n3" and nacked.resources["b"].pending
    assert nacked.acked("n3", 2.0).confirmed == {"b": "3"}
    assert nacked.resources["b"].acked and nacked.rejected == ({"a": "2", "b": "2"},)


def test_nack_of_removal_keeps_the_name() -> None:
    watch = DeltaWatch.start(EDS, AB, {"a": "1"}).sent("n1", {}, frozenset({"a"}), 0.0)
    assert dict(watch.held) == {}
    assert dict(watch.nacked("n1", ERR, 0.0).held) == {"a": "1"}


def test_response_applied_only_for_names_subscribed_when_acked() -> None:
    watch = DeltaWatch.start(EDS, AB, {}).sent("n1", {"a": "1", "b": "1"}, frozenset(), 0.0)
    watch = watch.with_subscription(Subscription(frozenset({"a"})))
    assert dict(watch.held) == {"a": "1"}
    watch = watch.with_subscription(AB)
    assert dict(watch.held) == {"a": "1", "b": "1"}, "n1 still in flight carries b"
    assert dict(watch.acked("n1", 0.0).confirmed) == {"a": "1", "b": "1"}


def test_unknown_nonce_is_a_lookup_error() -> None:
    watch = DeltaWatch.start(EDS, AB, {})
    with pytest.raises(LookupError):
        watch.acked("nope", 0.0)
    with pytest.raises(LookupError):
        watch.nacked("nope", ERR, 0.0)


def test_withheld_follows_available_versions() -> None:
    watch = (
        DeltaWatch.start(EDS, AB, {})
        .sent("n1", {"a": "bad", "b": "ok"}, frozenset(), 0.0)
        .nacked("n1", ERR, 0.0)
    )
    assert watch.withheld({"a": "bad", "b": "ok"}) == {"a", "b"}
    assert watch.withheld({"a": "fixed", "b": "ok"}) == frozenset()
    assert watch.withheld({"b": "ok"}) == frozenset()
