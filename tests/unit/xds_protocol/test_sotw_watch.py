"""The SotW watch (a per-stream record changed in place) and what a response on it holds."""

from __future__ import annotations

import pytest

from pilothouse.protocol.messages import NackError
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import CDS, EDS
from pilothouse.xds.protocol.sotw_watch import SotwWatch, plan_sotw
from pilothouse.xds.protocol.sync_status import SyncStatus
from pilothouse.xds.protocol.versions import VersionRegression

ERR = NackError(13, "bad")
WILD = Subscription(frozenset(), wildcard=True)


def test_new_watch_is_not_sent() -> None:
    watch = SotwWatch(CDS, WILD)
    assert watch.sync_status is SyncStatus.NOT_SENT
    assert not watch.sent_anything


def test_sent_then_acked() -> None:
    watch = SotwWatch(CDS, WILD).sent("t/1", "n1", {"a": "h1"}, 1.0)
    assert watch.sync_status is SyncStatus.STALE
    assert watch.resources["a"].pending and watch.resources["a"].sent_at == 1.0
    watch = watch.acked("n1", "t/1", 2.0)
    assert watch.sync_status is SyncStatus.SYNCED
    assert watch.resources["a"].acked_at == 2.0


def test_full_state_send_replaces_records_per_name_send_merges() -> None:
    cds = SotwWatch(CDS, WILD).sent("t/1", "n1", {"a": "1", "b": "1"}, 0.0)
    cds = cds.sent("t/2", "n2", {"b": "2"}, 0.0)
    assert set(cds.resources) == {"b"}
    eds = SotwWatch(EDS, Subscription(frozenset({"a", "b"}))).sent(
        "t/1", "n1", {"a": "1", "b": "1"}, 0.0
    )
    eds = eds.sent("t/2", "n2", {"b": "2"}, 0.0)
    assert {n: r.nonce for n, r in eds.resources.items()} == {"a": "n1", "b": "n2"}


def test_per_name_records_follow_the_subscription() -> None:
    eds = SotwWatch(EDS, Subscription(frozenset({"a", "b"}))).sent(
        "t/1", "n1", {"a": "1", "b": "1"}, 0.0
    )
    eds = eds.requested(Subscription(frozenset({"a"})))
    assert set(eds.resources) == {"a"}
    assert eds.named_before


def test_versions_never_go_backwards() -> None:
    watch = SotwWatch(CDS, WILD).sent("t/5", "n1", {}, 0.0)
    with pytest.raises(VersionRegression):
        watch.sent("t/4", "n2", {}, 0.0)
    assert watch.sent("t/5", "n2", {}, 0.0).version_sent == "t/5"


def test_nack_of_latest_remembers_rejected_content() -> None:
    watch = SotwWatch(CDS, WILD).sent("t/1", "n1", {"a": "1"}, 0.0).sent("t/2", "n2", {"a": "2"}, 0)
    watch.nacked("n1", ERR)
    assert watch.last_error == ERR and watch.rejected is None
    watch.nacked("n2", ERR)
    assert watch.rejected == {"a": "2"}
    assert watch.rejected_nonce("n2") and not watch.rejected_nonce("n1")


def test_plan_wildcard_sends_everything_named_sends_requested() -> None:
    available = {"a": "1", "b": "2"}
    wild = plan_sotw(SotwWatch(CDS, WILD), available, answering=True)
    assert wild is not None and wild.resources == available
    named = SotwWatch(EDS, Subscription(frozenset({"b", "z"})))
    plan = plan_sotw(named, available, answering=True)
    assert plan is not None and plan.resources == {"b": "2"} and plan.missing == {"z"}


def test_plan_withholds_rejected_content_until_it_changes() -> None:
    watch = SotwWatch(CDS, WILD).sent("t/1", "n1", {"a": "bad"}, 0.0).nacked("n1", ERR)
    assert plan_sotw(watch, {"a": "bad"}, answering=True) is None
    assert plan_sotw(watch, {"a": "bad"}, answering=False) is None
    fixed = plan_sotw(watch, {"a": "good"}, answering=False)
    assert fixed is not None and fixed.resources == {"a": "good"}
    grown = plan_sotw(watch, {"a": "bad", "b": "1"}, answering=False)
    assert grown is not None and grown.resources == {"a": "bad", "b": "1"}


def test_plan_push_skips_unchanged_answer_does_not() -> None:
    watch = SotwWatch(EDS, Subscription(frozenset({"a"}))).sent("t/1", "n1", {"a": "1"}, 0.0)
    assert plan_sotw(watch, {"a": "1", "other": "9"}, answering=False) is None
    answer = plan_sotw(watch, {"a": "1"}, answering=True)
    assert answer is not None and answer.resources == {"a": "1"}
    changed = plan_sotw(watch, {"a": "2"}, answering=False)
    assert changed is not None and changed.resources == {"a": "2"}


def test_plan_first_push_of_empty_set_is_sent() -> None:
    plan = plan_sotw(SotwWatch(CDS, WILD), {}, answering=False)
    assert plan is not None and plan.resources == {}


def test_ack_and_nack_answer_the_response_that_carried_each_name() -> None:
    eds = SotwWatch(EDS, Subscription(frozenset({"a", "b"}))).sent(
        "t/1", "n1", {"a": "1", "b": "1"}, 1.0
    )
    eds = eds.sent("t/2", "n2", {"b": "2"}, 2.0).acked("n2", "t/2", 3.0)
    assert eds.resources["b"] == ("b", "2", "n2", 2.0, 3.0, None)
    assert eds.resources["a"].pending and eds.resources["a"].nonce == "n1"
    before = eds.resources["a"]
    nacked = eds.nacked("n1", ERR)
    assert nacked is eds  # changed in place
    assert nacked.resources["a"].error == ERR and nacked.resources["b"].acked_at == 3.0
    assert before.pending  # a record handed out earlier is untouched


def test_per_name_watch_forgets_responses_nothing_points_at() -> None:
    eds = SotwWatch(EDS, Subscription(frozenset({"a"}))).sent("t/1", "n1", {"a": "1"}, 0.0)
    eds = eds.sent("t/2", "n2", {"a": "2"}, 0.0).sent("t/3", "n3", {"a": "3"}, 0.0)
    assert set(eds.responses) == {"n3"}
    assert eds.sent_version("a") == "3" and eds.sent_version("z") is None


def test_full_state_watch_reads_records_from_the_latest_response() -> None:
    cds = SotwWatch(CDS, WILD).sent("t/1", "n1", {"a": "1", "b": "1"}, 1.0)
    assert cds.carriers is None and not cds.acked_resource("a")
    cds = cds.acked("n1", "t/1", 2.0)
    assert cds.acked_resource("a") and not cds.acked_resource("z")
    assert dict(cds.resources) == {
        "a": ("a", "1", "n1", 1.0, 2.0, None),
        "b": ("b", "1", "n1", 1.0, 2.0, None),
    }
    assert len(cds.resources) == 2 and "b" in cds.resources and "z" not in cds.resources


def test_request_with_the_same_subscription_keeps_the_watch() -> None:
    subscription = Subscription(frozenset({"a", "b"}))
    eds = SotwWatch(EDS, subscription).requested(subscription)
    eds = eds.sent("t/1", "n1", {"a": "1", "b": "1"}, 0.0)
    assert eds.requested(subscription) is eds


def test_names_sent_beyond_the_subscription_are_dropped_by_the_next_request() -> None:
    subscription = Subscription(frozenset({"a"}))
    eds = SotwWatch(EDS, subscription).requested(subscription)
    eds = eds.sent("t/1", "n1", {"a": "1", "stray": "1"}, 0.0)
    assert set(eds.resources) == {"a", "stray"}
    again = eds.requested(subscription)
    assert set(again.resources) == {"a"} and not again.strays
    assert again.requested(subscription) is again


def test_plan_of_a_few_changed_names_still_reports_missing_ones() -> None:
    named = SotwWatch(EDS, Subscription(frozenset({"a", "b", "c"})))
    plan = plan_sotw(named, {"b": "2", "other": "9"}, answering=False)
    assert plan is not None and plan.resources == {"b": "2"}
    assert plan.missing == {"a", "c"}


def test_a_response_goes_when_no_held_name_points_at_it() -> None:
    eds = SotwWatch(EDS, Subscription(frozenset({"a", "b", "c"})))
    eds.sent("t/1", "n1", {"a": "1", "b": "1", "c": "1"}, 0.0)
    eds.sent("t/2", "n2", {"a": "2"}, 0.0)
    eds.sent("t/3", "n3", {"b": "3"}, 0.0)
    assert set(eds.responses) == {"n1", "n2", "n3"}  # n1 still carries c
    eds.sent("t/4", "n4", {"c": "4", "a": "4"}, 0.0)
    assert set(eds.responses) == {"n3", "n4"}
    assert dict(eds.held_versions) == {"a": "4", "b": "3", "c": "4"}
    assert {n: r.nonce for n, r in eds.resources.items()} == {"a": "n4", "b": "n3", "c": "n4"}


def test_an_empty_response_stays_while_it_is_the_latest() -> None:
    eds = SotwWatch(EDS, Subscription(frozenset({"a"}))).sent("t/1", "n1", {"a": "1"}, 0.0)
    eds.sent("t/2", "n2", {}, 0.0)
    assert set(eds.responses) == {"n1", "n2"}
    assert eds.acked("n2", "t/2", 1.0).sync_status is SyncStatus.SYNCED
    eds.sent("t/3", "n3", {"a": "3"}, 0.0)
    assert set(eds.responses) == {"n3"}


def test_a_dropped_name_frees_the_responses_only_it_kept() -> None:
    eds = SotwWatch(EDS, Subscription(frozenset({"a", "b"})))
    eds.sent("t/1", "n1", {"a": "1", "b": "1"}, 0.0)
    eds.sent("t/2", "n2", {"b": "2"}, 0.0)
    eds.requested(Subscription(frozenset({"b"})))
    assert set(eds.responses) == {"n2"} and dict(eds.held_versions) == {"b": "2"}
    eds.sent("t/3", "n3", {"b": "3"}, 0.0)
    assert set(eds.responses) == {"n3"}


def test_a_used_nonce_is_refused() -> None:
    eds = SotwWatch(EDS, Subscription(frozenset({"a", "b"})))
    eds.sent("t/1", "n1", {"a": "1", "b": "1"}, 0.0).sent("t/2", "n2", {"b": "2"}, 0.0)
    with pytest.raises(ValueError, match="already used"):
        eds.sent("t/3", "n1", {"a": "3"}, 0.0)
