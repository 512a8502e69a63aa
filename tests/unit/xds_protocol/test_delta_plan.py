"""What a delta response holds: changed resources, forced resends, removed_resources."""

from __future__ import annotations

from pilothouse.protocol.type_urls import CDS, EDS
from pilothouse.xds.protocol.delta import DeltaSession
from pilothouse.xds.protocol.delta_plan import plan_delta
from pilothouse.xds.protocol.delta_watch import DeltaWatch

from .discovery import delta_request as req


def watch_of(session: DeltaSession, type_url: str) -> DeltaWatch:
    watch = session.watch(type_url)
    assert watch is not None
    return watch


def test_init_wildcard_sends_everything() -> None:
    session = DeltaSession()
    decision = session.receive(req(CDS), 0.0)
    plan = plan_delta(watch_of(session, CDS), {"a": "1", "b": "2"}, decision)
    assert plan.resources == {"a": "1", "b": "2"} and plan.removed == frozenset()


def test_init_named_missing_reported_removed() -> None:
    session = DeltaSession()
    decision = session.receive(req(EDS, ["a", "ghost"]), 0.0)
    plan = plan_delta(watch_of(session, EDS), {"a": "1", "b": "2"}, decision)
    assert plan.resources == {"a": "1"}
    assert plan.removed == {"ghost"}


def test_reconnect_skips_unchanged_and_removes_gone() -> None:
    session = DeltaSession()
    decision = session.receive(req(CDS, initial={"a": "1", "b": "old", "gone": "x"}), 0.0)
    plan = plan_delta(watch_of(session, CDS), {"a": "1", "b": "new", "c": "3"}, decision)
    assert plan.resources == {"b": "new", "c": "3"}
    assert plan.removed == {"gone"}


def test_reconnect_with_nothing_changed_is_empty() -> None:
    session = DeltaSession()
    decision = session.receive(req(CDS, initial={"a": "1"}), 0.0)
    assert decision.respond
    plan = plan_delta(watch_of(session, CDS), {"a": "1"}, decision)
    assert plan.empty


def test_push_sends_changed_versions_and_removals() -> None:
    session = DeltaSession()
    session.receive(req(CDS), 0.0)
    session.record_sent(CDS, "n1", {"a": "1", "b": "1", "c": "1"}, (), 0.0)
    plan = plan_delta(watch_of(session, CDS), {"a": "1", "b": "2", "d": "1"})
    assert plan.resources == {"b": "2", "d": "1"}
    assert plan.removed == {"c"}


def test_push_limited_to_changed_names() -> None:
    session = DeltaSession()
    session.receive(req(CDS), 0.0)
    session.record_sent(CDS, "n1", {"a": "1", "b": "1", "c": "1"}, (), 0.0)
    available = {"a": "2", "b": "2"}
    plan = plan_delta(watch_of(session, CDS), available, changed={"b", "c"})
    assert plan.resources == {"b": "2"}
    assert plan.removed == {"c"}


def test_newly_subscribed_sent_even_if_held() -> None:
    session = DeltaSession()
    session.receive(req(EDS, ["a"]), 0.0)
    session.record_sent(EDS, "n1", {"a": "1"}, (), 0.0)
    session.receive(req(EDS, nonce="n1"), 0.0)
    decision = session.receive(req(EDS, ["a", "b", "ghost"]), 1.0)
    plan = plan_delta(watch_of(session, EDS), {"a": "1", "b": "1"}, decision)
    assert plan.resources == {"a": "1", "b": "1"}
    assert plan.removed == {"ghost"}


def test_unsubscribed_name_covered_by_wildcard_in_resources_or_removed() -> None:
    session = DeltaSession()
    session.receive(req(CDS, ["*", "a", "ghost"]), 0.0)
    session.record_sent(CDS, "n1", {"a": "1"}, ("ghost",), 0.0)
    session.receive(req(CDS, nonce="n1"), 0.0)
    decision = session.receive(req(CDS, [], ["a", "ghost"]), 1.0)
    assert decision.respond
    plan = plan_delta(watch_of(session, CDS), {"a": "1"}, decision)
    assert plan.resources == {"a": "1"}
    assert plan.removed == {"ghost"}


def test_unsubscribed_name_not_covered_is_not_sent() -> None:
    session = DeltaSession()
    session.receive(req(EDS, ["a", "b"]), 0.0)
    session.record_sent(EDS, "n1", {"a": "1", "b": "1"}, (), 0.0)
    decision = session.receive(req(EDS, [], ["b"]), 1.0)
    assert not decision.respond
    plan = plan_delta(watch_of(session, EDS), {"a": "1", "b": "2"})
    assert plan.empty


def test_wildcard_added_resends_all() -> None:
    session = DeltaSession()
    session.receive(req(CDS, ["a"]), 0.0)
    session.record_sent(CDS, "n1", {"a": "1"}, (), 0.0)
    decision = session.receive(req(CDS, ["*"]), 1.0)
    plan = plan_delta(watch_of(session, CDS), {"a": "1", "b": "1"}, decision, changed=())
    assert plan.resources == {"a": "1", "b": "1"}


def test_nacked_content_withheld_until_it_changes() -> None:
    session = DeltaSession()
    session.receive(req(CDS), 0.0)
    session.record_sent(CDS, "n1", {"a": "1", "b": "1"}, (), 0.0)
    session.receive(req(CDS, nonce="n1"), 0.0)
    session.record_sent(CDS, "n2", {"a": "bad", "b": "2"}, (), 1.0)
    session.receive(req(CDS, nonce="n2", error="bad cluster"), 2.0)
    watch = watch_of(session, CDS)
    assert dict(watch.held) == {"a": "1", "b": "1"}
    # Unchanged: nothing of the rejected response goes out again, other changes do.
    plan = plan_delta(watch, {"a": "bad", "b": "2", "c": "1"})
    assert plan.resources == {"c": "1"}
    # Even a newly subscribed (resend) name is held back while its content is rejected.
    decision = session.receive(req(CDS, ["a"]), 3.0)
    assert plan_delta(watch_of(session, CDS), {"a": "bad", "b": "2"}, decision).empty
    # One resource of the rejected response changed: the whole response may go again.
    fixed = plan_delta(watch_of(session, CDS), {"a": "good", "b": "2"})
    assert fixed.resources == {"a": "good", "b": "2"}
    session.record_sent(CDS, "n3", dict(fixed.resources), (), 4.0)
    assert watch_of(session, CDS).rejected == ()


def test_explicit_names_beside_wildcard_survive_star_unsubscribe() -> None:
    session = DeltaSession()
    session.receive(req(CDS, ["*", "a"]), 0.0)
    session.record_sent(CDS, "n1", {"a": "1", "b": "1"}, (), 0.0)
    session.receive(req(CDS, nonce="n1"), 0.0)
    session.receive(req(CDS, [], ["*"]), 1.0)
    watch = watch_of(session, CDS)
    assert dict(watch.held) == {"a": "1"}
    assert plan_delta(watch, {"a": "1", "b": "2"}).empty


def test_rejected_resource_that_went_away_is_reported_removed() -> None:
    session = DeltaSession()
    session.receive(req(CDS), 0.0)
    session.record_sent(CDS, "n1", {"a": "1"}, (), 0.0)
    session.receive(req(CDS, nonce="n1"), 0.0)
    session.record_sent(CDS, "n2", {"poison": "p"}, (), 1.0)
    session.receive(req(CDS, nonce="n2", error="bad cluster"), 2.0)
    # the bad resource is gone from the config: tell the client, so its error is settled
    plan = plan_delta(watch_of(session, CDS), {"a": "1"})
    assert plan.resources == {} and plan.removed == {"poison"}
    session.record_sent(CDS, "n3", {}, plan.removed, 3.0)
    assert watch_of(session, CDS).rejected == ()
    session.receive(req(CDS, nonce="n3"), 4.0)
    assert watch_of(session, CDS).last_error is None
    assert plan_delta(watch_of(session, CDS), {"a": "1"}).empty
