"""Subscriptions: the SotW and delta wildcard rules and what a subscription selects."""

from __future__ import annotations

import pytest

from pilothouse.protocol.subscriptions import (
    Subscription,
    delta_change,
    delta_initial_subscription,
    sotw_subscription,
)
from pilothouse.protocol.type_urls import CDS, EDS, LDS

SE = "networking.istio.io/v1/ServiceEntry"


@pytest.mark.parametrize(
    ("type_url", "names", "named_before", "expected"),
    [
        pytest.param(CDS, [], False, Subscription(frozenset(), True), id="legacy-empty-cds"),
        pytest.param(LDS, [], False, Subscription(frozenset(), True), id="legacy-empty-lds"),
        pytest.param(SE, [], False, Subscription(frozenset(), True), id="legacy-empty-istio"),
        pytest.param(CDS, ["*"], True, Subscription(frozenset(), True), id="explicit-star"),
        pytest.param(
            CDS, ["*", "a"], False, Subscription(frozenset({"a"}), True), id="star-plus-name"
        ),
        pytest.param(EDS, ["*"], False, Subscription(frozenset(), True), id="star-on-eds"),
        pytest.param(CDS, [], True, Subscription(frozenset(), False), id="empty-after-naming"),
        pytest.param(EDS, [], False, Subscription(frozenset(), False), id="eds-empty-is-nothing"),
        pytest.param(LDS, ["l"], False, Subscription(frozenset({"l"}), False), id="grpc-named-lds"),
        pytest.param(
            EDS, ["a", "b", "a"], False, Subscription(frozenset({"a", "b"})), id="duplicates"
        ),
    ],
)
def test_sotw_subscription(
    type_url: str, names: list[str], named_before: bool, expected: Subscription
) -> None:
    assert sotw_subscription(type_url, names, named_before) == expected


def test_select_and_resolve() -> None:
    resources = {"a": "1", "b": "2", "c": "3"}
    named = Subscription(frozenset({"a", "z"}))
    assert named.select(resources) == {"a": "1"}
    assert named.resolve(resources) == {"a"}
    assert named.missing(resources) == {"z"}
    assert named.covers("a") and not named.covers("b")
    wildcard = Subscription(frozenset({"z"}), wildcard=True)
    assert wildcard.select(resources) == resources
    assert wildcard.resolve(resources) == {"a", "b", "c"}
    assert wildcard.missing(resources) == {"z"}
    assert wildcard.covers("anything")
    assert Subscription().empty and not wildcard.empty


@pytest.mark.parametrize(
    ("type_url", "subscribe", "unsubscribe", "expected"),
    [
        pytest.param(CDS, [], [], Subscription(frozenset(), True), id="legacy-both-empty"),
        pytest.param(CDS, ["*"], [], Subscription(frozenset(), True), id="explicit-star"),
        pytest.param(CDS, ["*", "a"], [], Subscription(frozenset({"a"}), True), id="star+name"),
        pytest.param(EDS, [], [], Subscription(), id="eds-empty-not-wildcard"),
        pytest.param(EDS, ["a", "b"], ["b"], Subscription(frozenset({"a"})), id="sub-then-unsub"),
    ],
)
def test_delta_initial(
    type_url: str, subscribe: list[str], unsubscribe: list[str], expected: Subscription
) -> None:
    assert delta_initial_subscription(type_url, subscribe, unsubscribe) == expected


def test_delta_change_subscribe_and_unsubscribe() -> None:
    before = Subscription(frozenset({"a", "b"}))
    change = delta_change(before, ["c"], ["a", "never"])
    assert change.after == Subscription(frozenset({"b", "c"}))
    assert change.subscribed == {"c"}
    assert change.unsubscribed == {"a"}
    assert change.still_covered == frozenset()
    assert change.changed and not change.wildcard_added


def test_delta_change_unsubscribe_never_subscribed_is_ignored() -> None:
    before = Subscription(frozenset({"a"}))
    change = delta_change(before, [], ["never"])
    assert change.after == before
    assert change.unsubscribed == frozenset()
    assert not change.changed


def test_delta_change_wildcard_still_covers_unsubscribed_name() -> None:
    before = Subscription(frozenset({"a"}), wildcard=True)
    change = delta_change(before, [], ["a"])
    assert change.after == Subscription(frozenset(), wildcard=True)
    assert change.still_covered == {"a"}


def test_delta_change_star() -> None:
    on = delta_change(Subscription(frozenset({"a"})), ["*"], [])
    assert on.after.wildcard and on.wildcard_added and on.subscribed == frozenset()
    off = delta_change(on.after, [], ["*"])
    assert off.after == Subscription(frozenset({"a"}))
    assert not off.wildcard_added and off.changed


def test_delta_change_resubscribe_existing_name_counts_as_subscribed() -> None:
    change = delta_change(Subscription(frozenset({"a"})), ["a"], [])
    assert change.after == Subscription(frozenset({"a"}))
    assert change.subscribed == {"a"}
    assert change.changed
