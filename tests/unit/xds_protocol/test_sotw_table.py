"""Istio's SotW ShouldRespond table, one named row per case, plus Envoy sequences."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from envoy.service.discovery.v3 import discovery_pb2

from pilothouse.protocol.messages import NackError
from pilothouse.protocol.request_bytes import names_fingerprint, type_url_field
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.xds.protocol.name_sets import NameSets
from pilothouse.xds.protocol.sotw import SotwDecision, SotwKind, SotwSession
from pilothouse.xds.protocol.sync_status import SyncStatus

from .discovery import sotw_request as req
from .discovery import watch_state

SE = "networking.istio.io/v1/ServiceEntry"


@dataclass(frozen=True)
class Sent:
    """The server sent a response (recorded with ``record_sent``)."""

    type_url: str
    nonce: str
    content: dict[str, str] = field(default_factory=dict)
    version: str = ""


Step = discovery_pb2.DiscoveryRequest | Sent


@dataclass(frozen=True)
class Row:
    steps: Sequence[Step]
    request: discovery_pb2.DiscoveryRequest
    kind: SotwKind
    respond: bool
    subscription: Subscription | None = None
    added: frozenset[str] = frozenset()
    always_respond: bool = False


def names(*n: str, wildcard: bool = False) -> Subscription:
    return Subscription(frozenset(n), wildcard)


def play(session: SotwSession, steps: Sequence[Step], *, from_bytes: bool = False) -> None:
    for index, step in enumerate(steps):
        if isinstance(step, Sent):
            version = step.version or f"t/{index + 1}"
            session.record_sent(step.type_url, version, step.nonce, step.content, float(index))
        else:
            session.receive(step, float(index), fingerprint(step) if from_bytes else None)


def fingerprint(request: discovery_pb2.DiscoveryRequest) -> int | None:
    """The names' fingerprint the server's parser takes from the request's bytes."""
    return names_fingerprint(request.SerializeToString(), type_url_field(request.type_url))


ROWS = {
    # Row 1: NACK.
    "nack-recorded-no-response": Row(
        [req(CDS), Sent(CDS, "n1", {"a": "h1"})],
        req(CDS, nonce="n1", error="bad cluster"),
        SotwKind.NACK,
        False,
        names(wildcard=True),
    ),
    "nack-beats-unsubscribe-and-stale": Row(
        [req(EDS, ["a"]), Sent(EDS, "n1"), Sent(EDS, "n2")],
        req(EDS, [], nonce="n1", error="bad"),
        SotwKind.NACK,
        False,
        names("a"),
    ),
    "nack-without-watch": Row([], req(RDS, ["r"], nonce="x", error="bad"), SotwKind.NACK, False),
    # Row 2: empty names on a non-wildcard type.
    "eds-empty-after-naming-unsubscribes": Row(
        [req(EDS, ["a"]), Sent(EDS, "n1")],
        req(EDS, [], nonce="n1"),
        SotwKind.UNSUBSCRIBE,
        False,
        names(),
    ),
    "eds-empty-first-request-unsubscribes": Row(
        [], req(EDS, []), SotwKind.UNSUBSCRIBE, False, names()
    ),
    "rds-empty-with-stale-nonce-unsubscribes": Row(
        [req(RDS, ["r"]), Sent(RDS, "n1"), Sent(RDS, "n2")],
        req(RDS, [], nonce="n1"),
        SotwKind.UNSUBSCRIBE,
        False,
        names(),
    ),
    # Row 3: INIT / RECONNECT.
    "cds-legacy-empty-list-is-wildcard": Row(
        [], req(CDS, []), SotwKind.INIT, True, names(wildcard=True)
    ),
    "lds-explicit-star": Row([], req(LDS, ["*"]), SotwKind.INIT, True, names(wildcard=True)),
    "star-with-names": Row(
        [], req(CDS, ["*", "a"]), SotwKind.INIT, True, names("a", wildcard=True), frozenset("a")
    ),
    "istio-type-empty-list-is-wildcard": Row(
        [], req(SE, []), SotwKind.INIT, True, names(wildcard=True)
    ),
    "grpc-names-its-lds": Row(
        [], req(LDS, ["greeter.local"]), SotwKind.INIT, True, names("greeter.local"),
        frozenset({"greeter.local"}),
    ),
    "eds-init": Row(
        [], req(EDS, ["a", "b"]), SotwKind.INIT, True, names("a", "b"), frozenset({"a", "b"})
    ),
    "reconnect-reports-version": Row(
        [], req(CDS, [], version="old/7"), SotwKind.RECONNECT, True, names(wildcard=True)
    ),
    "unknown-initial-nonce-answered": Row(
        [],
        req(EDS, ["a"], nonce="other-replica-nonce", version="v9"),
        SotwKind.RECONNECT,
        True,
        names("a"),
        frozenset({"a"}),
    ),
    "empty-nonce-on-existing-watch-is-answered": Row(
        [req(EDS, ["a"]), Sent(EDS, "n1")],
        req(EDS, ["a", "b"]),
        SotwKind.INIT,
        True,
        names("a", "b"),
        frozenset({"b"}),
    ),
    # Row 4: stale nonce.
    "stale-nonce-ignored": Row(
        [req(EDS, ["a"]), Sent(EDS, "n1"), Sent(EDS, "n2")],
        req(EDS, ["a", "b"], nonce="n1"),
        SotwKind.STALE,
        False,
        names("a"),
    ),
    "never-issued-nonce-on-existing-watch-is-stale": Row(
        [req(CDS), Sent(CDS, "n1")],
        req(CDS, nonce="bogus"),
        SotwKind.STALE,
        False,
        names(wildcard=True),
    ),
    # Row 5: ACK.
    "ack-unchanged-not-answered": Row(
        [req(EDS, ["a"]), Sent(EDS, "n1")],
        req(EDS, ["a"], nonce="n1"),
        SotwKind.ACK,
        False,
        names("a"),
    ),
    "ack-with-grown-names-answered": Row(
        [req(EDS, ["a"]), Sent(EDS, "n7")],
        req(EDS, ["b", "a"], nonce="n7"),
        SotwKind.ACK,
        True,
        names("a", "b"),
        frozenset({"b"}),
    ),
    "ack-with-shrunk-names-on-eds-not-answered": Row(
        [req(EDS, ["a", "b"]), Sent(EDS, "n1")],
        req(EDS, ["a"], nonce="n1"),
        SotwKind.ACK,
        False,
        names("a"),
    ),
    "ack-with-swapped-names-on-eds-answered": Row(
        [req(EDS, ["a"]), Sent(EDS, "n1")],
        req(EDS, ["b"], nonce="n1"),
        SotwKind.ACK,
        True,
        names("b"),
        frozenset({"b"}),
    ),
    "ack-with-shrunk-names-on-wildcard-type-answered": Row(
        [req(CDS, ["a", "b"]), Sent(CDS, "n1")],
        req(CDS, ["a"], nonce="n1"),
        SotwKind.ACK,
        True,
        names("a"),
    ),
    "cds-empty-after-naming-means-nothing": Row(
        [req(CDS, ["a"]), Sent(CDS, "n1")],
        req(CDS, [], nonce="n1"),
        SotwKind.ACK,
        True,
        names(),
    ),
    "always-respond-after-cds-push": Row(
        [req(CDS), req(EDS, ["a"]), Sent(EDS, "n1"), Sent(CDS, "n2")],
        req(EDS, ["a"], nonce="n1"),
        SotwKind.ACK,
        True,
        names("a"),
        always_respond=True,
    ),
    "request-after-nack-with-same-nonce-is-update": Row(
        [req(EDS, ["a"]), Sent(EDS, "n1"), req(EDS, ["a"], nonce="n1", error="bad")],
        req(EDS, ["a", "b"], nonce="n1"),
        SotwKind.UPDATE,
        True,
        names("a", "b"),
        frozenset({"b"}),
    ),
}


@pytest.mark.parametrize("from_bytes", [False, True], ids=["names-read", "names-fingerprinted"])
@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_should_respond(row: Row, from_bytes: bool) -> None:
    """Each row holds whether the session reads the names or gets their fingerprint."""
    session = SotwSession()
    play(session, row.steps, from_bytes=from_bytes)
    names = fingerprint(row.request) if from_bytes else None
    decision = session.receive(row.request, 100.0, names)
    assert decision.type_url == row.request.type_url
    assert decision.kind is row.kind
    assert decision.respond is row.respond
    if row.subscription is not None:
        assert decision.subscription == row.subscription
    assert decision.added == row.added
    assert decision.always_respond is row.always_respond
    if row.subscription is not None and decision.kind not in (SotwKind.UNSUBSCRIBE,):
        assert session.wants(row.request.type_url) == row.subscription


def test_nack_records_error_counts_reject_and_marks_resources() -> None:
    session = SotwSession()
    play(session, [req(CDS), Sent(CDS, "n1", {"a": "h1", "b": "h2"})])
    decision = session.receive(req(CDS, nonce="n1", version="", error="Invalid duration"), 9.0)
    assert decision.error == NackError(13, "Invalid duration")
    watch = session.watch(CDS)
    assert watch is not None
    assert watch.last_error == decision.error
    assert watch.sync_status is SyncStatus.ERROR
    assert watch.resources["a"].nacked and watch.resources["b"].error == decision.error
    assert watch.rejected == {"a": "h1", "b": "h2"}
    assert session.rejects == {CDS: 1}
    assert session.expired_nonces == {}


def test_ack_records_nonce_clears_error_and_marks_resources() -> None:
    session = SotwSession()
    play(
        session,
        [
            req(CDS),
            Sent(CDS, "n1", {"a": "h1"}, "t/1"),
            req(CDS, nonce="n1", error="bad"),
            Sent(CDS, "n2", {"a": "h2"}, "t/2"),
        ],
    )
    watch = session.watch(CDS)
    assert watch is not None and watch.sync_status is SyncStatus.ERROR
    decision = session.receive(req(CDS, nonce="n2", version="t/2"), 50.0)
    assert decision.kind is SotwKind.ACK and not decision.respond
    watch = session.watch(CDS)
    assert watch is not None
    assert (watch.nonce_acked, watch.version_acked) == ("n2", "t/2")
    assert watch.last_error is None and watch.rejected is None
    assert watch.sync_status is SyncStatus.SYNCED
    assert watch.resources["a"].acked_at == 50.0 and watch.resources["a"].version == "h2"


def test_update_after_nack_keeps_error() -> None:
    session = SotwSession()
    play(session, [req(EDS, ["a"]), Sent(EDS, "n1", {"a": "h"}), req(EDS, ["a"], nonce="n1",
                                                                      error="bad")])
    session.receive(req(EDS, ["a", "b"], nonce="n1"), 5.0)
    watch = session.watch(EDS)
    assert watch is not None
    assert watch.sync_status is SyncStatus.ERROR and watch.nonce_acked == ""
    assert watch.rejected == {"a": "h"}


def test_stale_nonce_counted_and_state_untouched() -> None:
    session = SotwSession()
    play(session, [req(EDS, ["a"]), Sent(EDS, "n1"), Sent(EDS, "n2")])
    before = watch_state(session.watch(EDS))
    session.receive(req(EDS, ["a", "b"], nonce="n1"), 5.0)
    session.receive(req(EDS, ["a", "c"], nonce="n1"), 6.0)
    assert session.expired_nonces == {EDS: 2}
    assert watch_state(session.watch(EDS)) == before


def test_always_respond_clears_after_one_answer() -> None:
    session = SotwSession()
    play(session, [req(CDS), req(EDS, ["a"]), Sent(EDS, "n1"), Sent(CDS, "n2")])
    assert session.receive(req(EDS, ["a"], nonce="n1"), 1.0).respond
    assert not session.receive(req(EDS, ["a"], nonce="n1"), 2.0).respond


def test_mark_always_respond_explicitly() -> None:
    session = SotwSession()
    play(session, [req(RDS, ["r"]), Sent(RDS, "n1")])
    session.mark_always_respond(RDS)
    session.mark_always_respond(LDS)  # not watched: nothing to mark
    decision = session.receive(req(RDS, ["r"], nonce="n1"), 1.0)
    assert decision.respond and decision.always_respond
    assert session.watch(LDS) is None


def test_unsubscribe_forgets_watch() -> None:
    session = SotwSession()
    play(session, [req(EDS, ["a"]), Sent(EDS, "n1", {"a": "h"})])
    session.receive(req(EDS, [], nonce="n1"), 1.0)
    assert session.watch(EDS) is None and session.wants(EDS) is None
    again = session.receive(req(EDS, ["a"], nonce="n1"), 2.0)
    assert again.kind is SotwKind.RECONNECT and again.respond


def test_node_kept_from_first_message_only() -> None:
    session = SotwSession()
    session.receive(req(CDS), 0.0)
    assert session.node is None
    session.receive(req(EDS, ["a"], node_id="sidecar~10.0.0.1~a.ns~ns.svc.cluster.local"), 1.0)
    session.receive(req(LDS, node_id="sidecar~10.0.0.2~b.ns~ns.svc.cluster.local"), 2.0)
    node = session.node
    assert node is not None and node.id == "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local"


def test_record_sent_requires_a_watch_and_a_fresh_nonce() -> None:
    session = SotwSession()
    with pytest.raises(LookupError):
        session.record_sent(EDS, "t/1", "n1", {}, 0.0)
    session.receive(req(EDS, ["a"]), 0.0)
    session.record_sent(EDS, "t/1", "n1", {"a": "h"}, 0.0)
    with pytest.raises(ValueError, match="already used"):
        session.record_sent(EDS, "t/2", "n1", {"a": "h"}, 0.0)
    with pytest.raises(ValueError, match="needs a nonce"):
        session.record_sent(EDS, "t/2", "", {"a": "h"}, 0.0)


def test_envoy_cluster_added_sequence() -> None:
    """Reference §5: stale EDS request ignored, ACK with grown names answered."""
    session = SotwSession()
    play(
        session,
        [
            req(CDS, node_id="envoy"),
            Sent(CDS, "n5", {"a": "ca"}, "t/2"),
            req(EDS, ["a"]),
            Sent(EDS, "n4", {"a": "ea"}, "t/2"),
            req(CDS, nonce="n5", version="t/2"),
            Sent(CDS, "n6", {"a": "ca", "b": "cb"}, "t/3"),
            Sent(EDS, "n7", {"a": "ea"}, "t/3"),
        ],
    )
    stale = session.receive(req(EDS, ["b", "a"], nonce="n4", version="t/2"), 10.0)
    assert stale.kind is SotwKind.STALE and not stale.respond
    grown = session.receive(req(EDS, ["b", "a"], nonce="n7", version="t/3"), 11.0)
    assert grown.kind is SotwKind.ACK and grown.respond and grown.added == {"b"}
    assert session.wants(EDS) == names("a", "b")
    assert session.expired_nonces == {EDS: 1}


def test_envoy_cluster_added_sequence_with_the_assignment_sent_ahead() -> None:
    """The same, when the push counted ``b`` requested ahead (``expect``) and sent its
    assignment behind CDS: the ACK naming ``b`` changes nothing and is not answered."""
    session = SotwSession()
    play(
        session,
        [
            req(CDS, node_id="envoy"),
            Sent(CDS, "n5", {"a": "ca"}, "t/2"),
            req(EDS, ["a"]),
            Sent(EDS, "n4", {"a": "ea"}, "t/2"),
            req(CDS, nonce="n5", version="t/2"),
            req(EDS, ["a"], nonce="n4", version="t/2"),
            Sent(CDS, "n6", {"a": "ca", "b": "cb"}, "t/3"),
        ],
    )
    session.expect(EDS, frozenset({"b"}))
    assert session.wants(EDS) == names("a", "b")
    session.warming_answered(EDS)
    play(session, [Sent(EDS, "n7", {"b": "eb"}, "t/3")])
    stale = session.receive(req(EDS, ["b", "a"], nonce="n4", version="t/2"), 10.0)
    assert stale.kind is SotwKind.STALE and not stale.respond
    grown = session.receive(req(EDS, ["b", "a"], nonce="n7", version="t/3"), 11.0)
    assert grown.kind is SotwKind.ACK and not grown.respond
    assert session.wants(EDS) == names("a", "b")
    # the client's next request replaces the names: one it never asks for is dropped
    session.expect(EDS, frozenset({"c"}))
    session.receive(req(EDS, ["b", "a"], nonce="n7", version="t/3"), 12.0)
    assert session.wants(EDS) == names("a", "b")


@pytest.mark.parametrize("from_bytes", [False, True], ids=["names-read", "names-fingerprinted"])
def test_ack_repeating_the_names_keeps_the_subscription(from_bytes: bool) -> None:
    session = SotwSession()
    first = [req(EDS, ["a", "b"]), Sent(EDS, "n1", {"a": "1", "b": "1"})]
    play(session, first, from_bytes=from_bytes)
    watch = session.watch(EDS)
    assert watch is not None
    subscription = watch.subscription

    def receive(request: discovery_pb2.DiscoveryRequest, now: float) -> SotwDecision:
        return session.receive(request, now, fingerprint(request) if from_bytes else None)

    decision = receive(req(EDS, ["a", "b"], nonce="n1"), 5.0)
    assert decision.kind is SotwKind.ACK and not decision.respond and not decision.added
    assert decision.subscription is subscription
    reordered = receive(req(EDS, ["b", "a"], nonce="n1"), 6.0)
    assert reordered.subscription is subscription and not reordered.respond
    grown = receive(req(EDS, ["b", "a", "c"], nonce="n1"), 7.0)
    assert grown.respond and grown.added == {"c"}
    assert session.wants(EDS) == names("a", "b", "c")
    shrunk = receive(req(EDS, ["c"], nonce="n1"), 8.0)
    assert not shrunk.respond and session.wants(EDS) == names("c")
    # without a fingerprint (a per-type stream's request may carry no type URL)
    unkeyed = session.receive(req(EDS, ["c", "d"], nonce="n1"), 9.0)
    assert unkeyed.respond and unkeyed.added == {"d"}
    again = receive(req(EDS, ["c", "d"], nonce="n1"), 10.0)
    assert not again.respond and again.subscription is session.wants(EDS)


def test_repeated_empty_list_follows_what_the_stream_named_before() -> None:
    session = SotwSession()
    play(session, [req(CDS, []), Sent(CDS, "n1", version="t/1")])
    assert session.receive(req(CDS, [], nonce="n1"), 1.0).subscription == names(wildcard=True)
    play(session, [req(CDS, ["a"], nonce="n1"), Sent(CDS, "n2", version="t/2")])
    after = session.receive(req(CDS, [], nonce="n2"), 2.0)
    assert after.subscription == names() and after.respond
    play(session, [Sent(CDS, "n3", version="t/3")])
    again = session.receive(req(CDS, [], nonce="n3"), 3.0)
    assert again.subscription == names() and not again.respond


def test_names_remembered_after_a_stale_request_are_the_applied_ones() -> None:
    session = SotwSession()
    play(session, [req(EDS, ["a"]), Sent(EDS, "n1"), Sent(EDS, "n2")])
    assert session.receive(req(EDS, ["a", "b"], nonce="n1"), 1.0).kind is SotwKind.STALE
    decision = session.receive(req(EDS, ["a", "b"], nonce="n2"), 2.0)
    assert decision.respond and decision.added == {"b"}
    assert session.wants(EDS) == names("a", "b")


class _NamesUnread:
    """A request whose names must not be read: the session decides from the fingerprint
    (a double, since a protobuf message cannot refuse a field read)."""

    def __init__(self, request: discovery_pb2.DiscoveryRequest) -> None:
        self.request = request

    def __getattr__(self, name: str) -> object:
        if name == "resource_names":
            raise AssertionError("the names were read")
        return getattr(self.request, name)


def test_an_ack_repeating_the_subscription_is_decided_without_reading_a_name() -> None:
    """An ACK naming what the request before named, and Envoy's warming re-request naming
    the same clusters in its own order once another stream made that subscription, are
    ACKs needing no answer, known from the names' fingerprint alone."""
    sets = NameSets()
    first, second = SotwSession(sets), SotwSession(sets)
    for session in (first, second):
        play(
            session, [req(EDS, ["a", "b"]), Sent(EDS, "n1", {"a": "1", "b": "1"})], from_bytes=True
        )
    watch = second.watch(EDS)
    assert watch is not None
    subscription = watch.subscription

    def receive(session: SotwSession, request: discovery_pb2.DiscoveryRequest) -> SotwDecision:
        return session.receive(_NamesUnread(request), 5.0, fingerprint(request))  # type: ignore[arg-type]

    ack = receive(second, req(EDS, ["a", "b"], nonce="n1", version="t/2"))
    assert ack == SotwDecision(EDS, SotwKind.ACK, False, subscription)
    assert watch.nonce_acked == "n1" and watch.version_acked == "t/2"
    # the first stream reads the reordered names once; the second knows them by then
    assert not first.receive(
        req(EDS, ["b", "a"], nonce="n1"), 5.0, fingerprint(req(EDS, ["b", "a"]))
    ).respond
    reordered = receive(second, req(EDS, ["b", "a"], nonce="n1"))
    assert (reordered.kind, reordered.respond) == (SotwKind.ACK, False)
    assert reordered.subscription is subscription
    assert receive(second, req(EDS, ["b", "a"], nonce="n1")).subscription is subscription
    # a stale request (Envoy's re-request carrying the nonce before) takes no names
    kept = len(sets)
    record_sent(second, EDS, "n2")
    stale = second.receive(req(EDS, ["c", "b", "a"], nonce="n1"), 6.0, 1234)
    assert (stale.kind, stale.subscription, len(sets)) == (SotwKind.STALE, subscription, kept)
    assert second.expired_nonces[EDS] == 1
    # an answer owed (the warming flag) or a NACK standing still takes the full table
    second.mark_always_respond(EDS)
    owed = second.receive(req(EDS, ["a", "b"], nonce="n2"), 7.0, fingerprint(req(EDS, ["a", "b"])))
    assert owed.respond and owed.always_respond


def record_sent(session: SotwSession, type_url: str, nonce: str) -> None:
    watch = session.watch(type_url)
    assert watch is not None
    session.record_sent(type_url, f"t/{nonce}", nonce, dict(watch.last_sent), 6.0)
