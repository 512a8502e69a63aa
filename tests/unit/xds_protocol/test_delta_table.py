"""The delta decision table, one named row per case, plus NACK/ACK bookkeeping."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from envoy.service.discovery.v3 import discovery_pb2

from pilothouse.protocol.messages import NackError
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import CDS, EDS, LDS
from pilothouse.xds.protocol.delta import DeltaKind, DeltaSession
from pilothouse.xds.protocol.sync_status import SyncStatus

from .discovery import delta_request as req

SE = "networking.istio.io/v1/ServiceEntry"


@dataclass(frozen=True)
class Sent:
    type_url: str
    nonce: str
    content: dict[str, str] = field(default_factory=dict)
    removed: tuple[str, ...] = ()


Step = discovery_pb2.DeltaDiscoveryRequest | Sent


def play(session: DeltaSession, steps: Sequence[Step]) -> None:
    for index, step in enumerate(steps):
        if isinstance(step, Sent):
            session.record_sent(step.type_url, step.nonce, step.content, step.removed, index)
        else:
            session.receive(step, float(index))


def subs(*names: str, wildcard: bool = False) -> Subscription:
    return Subscription(frozenset(names), wildcard)


@dataclass(frozen=True)
class Row:
    steps: Sequence[Step]
    request: discovery_pb2.DeltaDiscoveryRequest
    kind: DeltaKind
    respond: bool
    subscription: Subscription
    subscribed: frozenset[str] = frozenset()
    unsubscribed: frozenset[str] = frozenset()
    resend: frozenset[str] = frozenset()
    resend_all: bool = False


ROWS = {
    "init-legacy-wildcard-both-lists-empty": Row(
        [], req(CDS), DeltaKind.INIT, True, subs(wildcard=True)
    ),
    "init-explicit-star": Row([], req(LDS, ["*"]), DeltaKind.INIT, True, subs(wildcard=True)),
    "init-istio-type-legacy-wildcard": Row([], req(SE), DeltaKind.INIT, True, subs(wildcard=True)),
    "init-eds-names": Row(
        [], req(EDS, ["a", "b"]), DeltaKind.INIT, True, subs("a", "b"), frozenset({"a", "b"})
    ),
    "init-eds-empty-is-not-wildcard": Row([], req(EDS), DeltaKind.INIT, True, subs()),
    "init-unknown-nonce-ignored": Row(
        [], req(EDS, ["a"], nonce="elsewhere"), DeltaKind.INIT, True, subs("a"), frozenset("a")
    ),
    "reconnect-initial-resource-versions": Row(
        [],
        req(CDS, initial={"a": "h1"}),
        DeltaKind.RECONNECT,
        True,
        subs(wildcard=True),
    ),
    "subscribe-empty-nonce": Row(
        [req(EDS, ["a"]), Sent(EDS, "n1", {"a": "1"})],
        req(EDS, ["b"]),
        DeltaKind.SUBSCRIPTION,
        True,
        subs("a", "b"),
        subscribed=frozenset({"b"}),
        resend=frozenset({"b"}),
    ),
    "resubscribe-held-name-is-resent": Row(
        [req(EDS, ["a"]), Sent(EDS, "n1", {"a": "1"}), req(EDS, nonce="n1")],
        req(EDS, ["a"]),
        DeltaKind.SUBSCRIPTION,
        True,
        subs("a"),
        subscribed=frozenset({"a"}),
        resend=frozenset({"a"}),
    ),
    "pure-unsubscribe-not-answered": Row(
        [req(EDS, ["a", "b"]), Sent(EDS, "n1", {"a": "1", "b": "1"})],
        req(EDS, [], ["b"]),
        DeltaKind.SUBSCRIPTION,
        False,
        subs("a"),
        unsubscribed=frozenset({"b"}),
    ),
    "unsubscribe-never-subscribed-ignored": Row(
        [req(EDS, ["a"])],
        req(EDS, [], ["zzz"]),
        DeltaKind.SUBSCRIPTION,
        False,
        subs("a"),
    ),
    "unsubscribe-covered-by-wildcard-answered": Row(
        [req(CDS, ["*", "a"])],
        req(CDS, [], ["a"]),
        DeltaKind.SUBSCRIPTION,
        True,
        subs(wildcard=True),
        unsubscribed=frozenset({"a"}),
        resend=frozenset({"a"}),
    ),
    "unsubscribe-star": Row(
        [req(CDS, ["*", "a"])],
        req(CDS, [], ["*"]),
        DeltaKind.SUBSCRIPTION,
        False,
        subs("a"),
    ),
    "subscribe-star-later": Row(
        [req(CDS, ["a"])],
        req(CDS, ["*"]),
        DeltaKind.SUBSCRIPTION,
        True,
        subs("a", wildcard=True),
        resend_all=True,
    ),
    "ack-not-answered": Row(
        [req(EDS, ["a"]), Sent(EDS, "n1", {"a": "1"})],
        req(EDS, nonce="n1"),
        DeltaKind.ACK,
        False,
        subs("a"),
    ),
    "ack-of-earlier-in-flight-response": Row(
        [req(EDS, ["a"]), Sent(EDS, "n1", {"a": "1"}), Sent(EDS, "n2", {"a": "2"})],
        req(EDS, nonce="n1"),
        DeltaKind.ACK,
        False,
        subs("a"),
    ),
    "nack-not-answered": Row(
        [req(EDS, ["a"]), Sent(EDS, "n1", {"a": "1"})],
        req(EDS, nonce="n1", error="bad"),
        DeltaKind.NACK,
        False,
        subs("a"),
    ),
    "stale-nonce-subscription-change-applied": Row(
        [req(EDS, ["a"]), Sent(EDS, "n1", {"a": "1"}), req(EDS, nonce="n1")],
        req(EDS, ["b"], nonce="n1"),
        DeltaKind.STALE,
        True,
        subs("a", "b"),
        subscribed=frozenset({"b"}),
        resend=frozenset({"b"}),
    ),
    "stale-nonce-unsubscribe-applied": Row(
        [req(EDS, ["a", "b"]), Sent(EDS, "n1", {"a": "1"}), req(EDS, nonce="n1")],
        req(EDS, [], ["a"], nonce="gone"),
        DeltaKind.STALE,
        False,
        subs("b"),
        unsubscribed=frozenset({"a"}),
    ),
    "stale-nack-ignored": Row(
        [req(EDS, ["a"]), Sent(EDS, "n1", {"a": "1"}), req(EDS, nonce="n1")],
        req(EDS, nonce="n1", error="late"),
        DeltaKind.STALE,
        False,
        subs("a"),
    ),
    "always-respond-after-cds-push": Row(
        [req(CDS), req(EDS, ["a"]), Sent(EDS, "e1", {"a": "1"}), Sent(CDS, "c1", {"a": "1"})],
        req(EDS, nonce="e1"),
        DeltaKind.ACK,
        True,
        subs("a"),
        resend_all=True,
    ),
}


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_delta_decision(row: Row) -> None:
    session = DeltaSession()
    play(session, row.steps)
    decision = session.receive(row.request, 100.0)
    assert decision.kind is row.kind
    assert decision.respond is row.respond
    assert decision.subscription == row.subscription
    assert session.wants(row.request.type_url) == row.subscription
    assert decision.subscribed == row.subscribed
    assert decision.unsubscribed == row.unsubscribed
    assert decision.resend == row.resend
    assert decision.resend_all is row.resend_all


def test_reconnect_seeds_what_the_client_holds() -> None:
    session = DeltaSession()
    session.receive(req(EDS, ["a", "b"], initial={"a": "1", "b": "2", "other": "3"}), 0.0)
    watch = session.watch(EDS)
    assert watch is not None
    assert dict(watch.held) == {"a": "1", "b": "2"} == dict(watch.confirmed)


def test_initial_versions_ignored_after_first_request() -> None:
    session = DeltaSession()
    session.receive(req(EDS, ["a"]), 0.0)
    session.receive(req(EDS, ["b"], initial={"b": "9"}), 1.0)
    watch = session.watch(EDS)
    assert watch is not None and dict(watch.held) == {}


def test_pure_unsubscribe_forgets_held_name() -> None:
    session = DeltaSession()
    play(session, [req(EDS, ["a", "b"]), Sent(EDS, "n1", {"a": "1", "b": "1"}),
                   req(EDS, nonce="n1")])
    session.receive(req(EDS, [], ["b"]), 5.0)
    watch = session.watch(EDS)
    assert watch is not None
    assert dict(watch.held) == {"a": "1"} == dict(watch.confirmed)
    assert set(watch.resources) == {"a"}


def test_ack_and_nack_bookkeeping() -> None:
    session = DeltaSession()
    play(session, [req(EDS, ["a", "b"]), Sent(EDS, "n1", {"a": "1", "b": "1"})])
    watch = session.watch(EDS)
    assert watch is not None and watch.sync_status is SyncStatus.STALE
    session.receive(req(EDS, nonce="n1"), 3.0)
    watch = session.watch(EDS)
    assert watch is not None
    assert watch.sync_status is SyncStatus.SYNCED and watch.resources["a"].acked_at == 3.0
    session.record_sent(EDS, "n2", {"a": "2"}, (), 4.0)
    decision = session.receive(req(EDS, nonce="n2", error="bad endpoints"), 5.0)
    assert decision.error == NackError(13, "bad endpoints")
    watch = session.watch(EDS)
    assert watch is not None
    assert watch.sync_status is SyncStatus.ERROR
    assert dict(watch.held) == {"a": "1", "b": "1"}, "NACK rolls back to last good"
    assert watch.resources["a"].nacked
    assert session.rejects == {EDS: 1}


def test_stale_counts_expired_nonces() -> None:
    session = DeltaSession()
    play(session, [req(EDS, ["a"]), Sent(EDS, "n1", {"a": "1"}), req(EDS, nonce="n1")])
    session.receive(req(EDS, nonce="n1"), 1.0)
    session.receive(req(EDS, nonce="never", error="x"), 2.0)
    assert session.expired_nonces == {EDS: 2}
    assert session.rejects == {}
    watch = session.watch(EDS)
    assert watch is not None and watch.last_error is None


def test_always_respond_on_subscription_request_then_cleared() -> None:
    session = DeltaSession()
    play(session, [req(CDS), req(EDS, ["a"]), Sent(CDS, "c1", {"a": "1"})])
    first = session.receive(req(EDS, [], ["zzz"]), 1.0)
    assert first.respond and first.always_respond and first.resend_all
    assert not session.receive(req(EDS, [], ["zzz"]), 2.0).respond


def test_always_respond_not_consumed_by_nack_or_stale() -> None:
    session = DeltaSession()
    play(session, [req(EDS, ["a"]), Sent(EDS, "n1", {"a": "1"})])
    session.mark_always_respond(EDS)
    assert not session.receive(req(EDS, nonce="n1", error="bad"), 1.0).respond
    assert not session.receive(req(EDS, nonce="n1"), 2.0).respond  # now stale
    assert session.receive(req(EDS, ["b"]), 3.0).always_respond


def test_node_kept_from_first_message_only() -> None:
    session = DeltaSession()
    session.receive(req(CDS, node_id="first"), 0.0)
    session.receive(req(EDS, ["a"], node_id="second"), 1.0)
    node = session.node
    assert node is not None and node.id == "first"


def test_record_sent_checks() -> None:
    session = DeltaSession()
    with pytest.raises(LookupError):
        session.record_sent(EDS, "n1", {}, (), 0.0)
    session.receive(req(EDS, ["a"]), 0.0)
    session.record_sent(EDS, "n1", {"a": "1"}, (), 0.0, system_version="t/2")
    with pytest.raises(ValueError, match="already used"):
        session.record_sent(EDS, "n1", {"a": "2"}, (), 0.0)
    with pytest.raises(ValueError, match="both sent and removed"):
        session.record_sent(EDS, "n2", {"a": "2"}, ("a",), 0.0)
    with pytest.raises(ValueError, match="older"):
        session.record_sent(EDS, "n2", {"a": "2"}, (), 0.0, system_version="t/1")


def test_names_expected_and_sent_are_not_answered_when_subscribed() -> None:
    """``expect``: a name counted subscribed ahead of the client and sent since is not
    sent again when the client's subscribe for it arrives (it crossed the response)."""
    session = DeltaSession()
    play(session, [req(EDS, ["a"]), Sent(EDS, "n1", {"a": "1"}), req(EDS, nonce="n1")])
    session.expect(EDS, frozenset({"b"}))
    assert session.wants(EDS) == subs("a", "b")
    play(session, [Sent(EDS, "n2", {"b": "1"})])
    decision = session.receive(req(EDS, ["b"]), 5.0)
    assert (decision.kind, decision.respond, decision.subscribed) == (
        DeltaKind.SUBSCRIPTION, False, frozenset()
    )  # fmt: skip
    assert not session.receive(req(EDS, nonce="n2"), 6.0).respond
    # expected no more: unsubscribed and subscribed again, it is answered as usual
    session.receive(req(EDS, [], ["b"]), 7.0)
    again = session.receive(req(EDS, ["b"]), 8.0)
    assert again.respond and again.subscribed == frozenset({"b"})


def test_names_expected_but_not_sent_are_answered() -> None:
    session = DeltaSession()
    play(session, [req(EDS, ["a"]), Sent(EDS, "n1", {"a": "1"}), req(EDS, nonce="n1")])
    session.expect(EDS, frozenset({"b"}))
    decision = session.receive(req(EDS, ["b"]), 5.0)
    assert decision.respond and decision.subscribed == frozenset({"b"})


def test_expect_leaves_an_unwatched_type_alone() -> None:
    session = DeltaSession()
    session.expect(EDS, frozenset({"b"}))
    assert session.watch(EDS) is None
