"""Streams that request the same names hold one set of them (xds/protocol/name_sets.py)."""

from __future__ import annotations

from collections.abc import Mapping

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.type_urls import EDS
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
