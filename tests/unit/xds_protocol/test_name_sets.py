"""Streams that request the same names hold one set of them (xds/protocol/name_sets.py)."""

from __future__ import annotations

from collections.abc import Mapping

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.request_bytes import Undecodable, discovery_request_parser
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import CDS, EDS
from pilothouse.push.cache import Resource
from pilothouse.xds.protocol.name_sets import NameSets
from pilothouse.xds.protocol.stream_engine import StreamEngine
from pilothouse.xds.protocol.wire import FanOutResponses


class Nothing:
    version = "v1"

    def generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
        return {}

    def warming(self, added: frozenset[str]) -> frozenset[str]:
        return frozenset()


def asks(engine: StreamEngine, names: list[str]) -> frozenset[str]:
    engine.receive(discovery_pb2.DiscoveryRequest(type_url=EDS, resource_names=names), 1.0)
    subscription = engine.session.wants(EDS)
    assert subscription is not None
    return subscription.names


def test_streams_naming_the_same_hold_one_set() -> None:
    shared = FanOutResponses()
    engines = [
        StreamEngine(Nothing(), delta=False, warming_timeout=5.0, responses=shared)
        for _ in range(3)
    ]
    names = [f"outbound|80||s{i}.ns.svc.cluster.local" for i in range(100)]
    first = asks(engines[0], names)
    second = asks(engines[1], list(reversed(names)))  # same names, another order
    assert second is first and first == frozenset(names)
    other = asks(engines[2], names[:50])
    assert other is not first and other == frozenset(names[:50])
    alone = StreamEngine(Nothing(), delta=False, warming_timeout=5.0)  # a stream of its own
    assert asks(alone, names) == first


def test_the_sets_kept_are_bounded() -> None:
    sets = NameSets(kept=2)
    one, two, three = frozenset({"a"}), frozenset({"b"}), frozenset({"c"})
    assert sets.shared(one) is one and sets.shared(frozenset({"a"})) is one
    sets.shared(two)
    sets.shared(three)  # the least recently used (one) goes
    assert len(sets) == 2
    again = frozenset({"a"})
    assert sets.shared(again) is again


def asks_by_bytes(engine: StreamEngine, names: list[str], nonce: str = "") -> frozenset[str]:
    """As the servicer asks: the request parsed from its bytes, with its names' fingerprint."""
    body = discovery_pb2.DiscoveryRequest(
        type_url=EDS, resource_names=names, response_nonce=nonce
    ).SerializeToString()
    arrival = discovery_request_parser(discovery_pb2.DiscoveryRequest, fingerprint=True)(body)
    assert not isinstance(arrival, Undecodable) and arrival.names is not None
    engine.receive(arrival.request, 1.0, arrival.names)
    subscription = engine.session.wants(EDS)
    assert subscription is not None
    return subscription.names


def test_a_fingerprinted_request_takes_the_subscription_the_same_names_made() -> None:
    shared = FanOutResponses()
    engines = [
        StreamEngine(Nothing(), delta=False, warming_timeout=5.0, responses=shared)
        for _ in range(3)
    ]
    names = [f"outbound|80||s{i}.ns.svc.cluster.local" for i in range(100)]
    first = engines[0].session.watch(EDS)
    assert first is None
    made = asks_by_bytes(engines[0], names)
    assert made == frozenset(names)
    subscription = engines[0].session.wants(EDS)
    assert asks_by_bytes(engines[1], names) is made
    assert engines[1].session.wants(EDS) is subscription  # the very subscription, not re-read
    other = asks_by_bytes(engines[2], names[:50])  # other names: other bytes, read anew
    assert other == frozenset(names[:50]) and other is not made
    assert asks_by_bytes(engines[2], names) is made  # and back to the shared one
    engines[2].receive(discovery_pb2.DiscoveryRequest(type_url=EDS), 1.0)  # unsubscribes
    assert engines[2].session.wants(EDS) is None


def test_the_subscriptions_kept_by_fingerprint_are_bounded() -> None:
    sets = NameSets(kept=2)
    made = [Subscription(frozenset({name})) for name in "abc"]
    for fingerprint, subscription in enumerate(made):
        sets.made(EDS, fingerprint, False, subscription)
    assert sets.subscription(EDS, 0, False) is None  # the least recently used went
    assert sets.subscription(EDS, 2, False) is made[2]
    assert sets.subscription(EDS, 2, True) is None  # named before: another meaning
    assert sets.subscription(CDS, 2, False) is None
