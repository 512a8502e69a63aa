"""A full push to a delta stream compares only the names its mapping changed.

The resources a push generates for a scope are one mapping shared by its streams, and a
delta stream that last took a whole mapping holds, of its subscribed names, exactly
that mapping (its basis, :mod:`pilothouse.xds.protocol.delta_basis`). Here the
mapping counts every read of a resource: a full push to fifty streams reads it a few
times for the whole scope, not once per stream, and each stream is sent exactly the
names that changed, were added or were removed. A randomised run then drives streams
through full pushes, endpoint pushes, subscription changes and NACKs against a client
that applies what it is sent: whenever nothing is rejected, what the client holds is
exactly the current mapping's subscribed names.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping

import pytest
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from pilothouse.protocol.type_urls import CDS, EDS
from pilothouse.push.cache import Resource
from pilothouse.xds.protocol.stream_engine import StreamEngine
from pilothouse.xds.protocol.stream_flavour import Outgoing
from pilothouse.xds.protocol.wire import FanOutResponses


class CountedResources(Mapping[str, Resource]):
    """A generated mapping that counts the resources read from it."""

    def __init__(self, resources: dict[str, Resource]) -> None:
        self.plain = resources
        self.reads = 0

    def __getitem__(self, name: str) -> Resource:
        self.reads += 1
        return self.plain[name]

    def __iter__(self) -> Iterator[str]:
        for name in self.plain:
            self.reads += 1
            yield name

    def __len__(self) -> int:
        return len(self.plain)


def resource(type_url: str, name: str, version: str) -> Resource:
    body = any_pb2.Any(type_url=type_url, value=f"{name}@{version}".encode())
    return Resource(name, version, body.SerializeToString())


def mapping(type_url: str, versions: Mapping[str, str]) -> CountedResources:
    return CountedResources({n: resource(type_url, n, v) for n, v in versions.items()})


class ScopeSource:
    """Every stream of one scope: the same mapping, and for a set of names the same
    mapping of those (as the EDS generator answers equal name sets)."""

    def __init__(self, type_url: str, resources: CountedResources) -> None:
        self.type_url = type_url
        self.resources = resources
        self.version = "v1"
        self._named: dict[frozenset[str], tuple[CountedResources, Mapping[str, Resource]]] = {}

    def generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
        if type_url != self.type_url:
            return {}
        every = self.resources
        if names is None or names == every.plain.keys():
            return every
        found = self._named.get(names)
        if found is None or found[0] is not every:
            found = self._named[names] = (
                every, {n: every.plain[n] for n in names if n in every.plain}
            )  # fmt: skip
        return found[1]

    def warming(self, added: frozenset[str]) -> frozenset[str]:
        return frozenset()


def decoded(out: Outgoing) -> discovery_pb2.DeltaDiscoveryResponse:
    return discovery_pb2.DeltaDiscoveryResponse.FromString(out.body)


def ack(engine: StreamEngine, type_url: str, out: list[Outgoing], now: float) -> None:
    for response in out:
        nonce = decoded(response).nonce
        request = discovery_pb2.DeltaDiscoveryRequest(type_url=type_url, response_nonce=nonce)
        assert engine.receive(request, now) == []


@pytest.mark.parametrize("count", [10, 1000])
def test_a_delta_full_push_reads_only_what_changed(count: int) -> None:
    versions = {f"c{i}": "1" for i in range(count)}
    first = mapping(CDS, versions)
    source = ScopeSource(CDS, first)
    shared = FanOutResponses()
    engines = [
        StreamEngine(source, delta=True, warming_timeout=5.0, responses=shared) for _ in range(50)
    ]
    for engine in engines:
        subscribe = discovery_pb2.DeltaDiscoveryRequest(type_url=CDS)  # legacy wildcard
        out = engine.receive(subscribe, 1.0)
        assert [o.resources for o in out] == [count]
        ack(engine, CDS, out, 1.0)

    versions = {**versions, "c1": "2", "new": "1"}
    del versions["c0"]
    second = mapping(CDS, versions)
    source.resources = second
    source.version = "v2"
    reads = first.reads
    pushed = [engine.push_full(2.0, endpoints=False) for engine in engines]
    # the difference of the two mappings, once for the scope (a walk per stream: 50 × count)
    assert second.reads + first.reads - reads <= 5 * count + 50 * 10
    for out in pushed:
        (response,) = out
        body = decoded(response)
        assert {r.name: r.version for r in body.resources} == {"c1": "2", "new": "1"}
        assert list(body.removed_resources) == ["c0"]
    for engine, out in zip(engines, pushed, strict=True):
        ack(engine, CDS, out, 3.0)
    reads = second.reads
    assert all(engine.push_full(4.0, endpoints=False) == [] for engine in engines)
    assert second.reads - reads <= 50 * 2  # nothing changed: nothing read per stream
    for engine in engines:
        assert dict(engine.acked()[CDS]) == second.plain


class Client:
    """What a delta client subscribed to EDS names holds: it applies each response for
    the names it subscribes to, and ACKs it (or NACKs it and keeps what it held)."""

    def __init__(self, engine: StreamEngine, names: set[str]) -> None:
        self.engine = engine
        self.names = set(names)
        self.held: dict[str, str] = {}
        self.rejected = False

    def take(self, out: list[Outgoing], now: float, *, nack: bool = False) -> None:
        for response in out:
            body = decoded(response)
            request = discovery_pb2.DeltaDiscoveryRequest(type_url=EDS, response_nonce=body.nonce)
            if nack:
                request.error_detail.message = "rejected"
                self.rejected = True
            else:
                for item in body.resources:
                    if item.name in self.names:
                        self.held[item.name] = item.version
                for name in body.removed_resources:
                    self.held.pop(name, None)
            follow = self.engine.receive(request, now)
            self.take(follow, now)

    def change(self, subscribe: list[str], unsubscribe: list[str], now: float) -> None:
        self.names |= set(subscribe)
        self.names -= set(unsubscribe)
        for name in unsubscribe:
            self.held.pop(name, None)
        request = discovery_pb2.DeltaDiscoveryRequest(
            type_url=EDS, resource_names_subscribe=subscribe,
            resource_names_unsubscribe=unsubscribe,
        )  # fmt: skip
        self.take(self.engine.receive(request, now), now)

    def expected(self, resources: Mapping[str, Resource]) -> dict[str, str]:
        return {n: r.version for n, r in resources.items() if n in self.names}


@pytest.mark.parametrize("seed", range(12))
def test_delta_streams_hold_exactly_the_current_assignments(seed: int) -> None:
    rng = random.Random(seed)
    pool = [f"s{i}" for i in range(24)]
    versions = {name: "0" for name in pool[:16]}
    source = ScopeSource(EDS, mapping(EDS, versions))
    shared = FanOutResponses()
    clients = []
    for index in range(4):
        engine = StreamEngine(source, delta=True, warming_timeout=5.0, responses=shared)
        names = set(pool[:16]) if index < 3 else set(rng.sample(pool, 10))
        client = Client(engine, set())
        client.change(sorted(names), [], 1.0)
        clients.append(client)
    serial = 0
    now = 2.0
    moved_from: dict[str, str] = {}
    """Names an endpoint push moved since the last full push, and their versions before."""
    for _step in range(60):
        now += 1.0
        serial += 1
        roll = rng.random()
        if roll < 0.5:  # a full push: some versions change, a name comes, a name goes
            for name in rng.sample(sorted(versions), min(3, len(versions))):
                versions[name] = str(serial)
            if rng.random() < 0.4:
                versions[rng.choice(pool)] = str(serial)
            if rng.random() < 0.5:  # endpoints moved back: the versions they had before
                versions.update((n, v) for n, v in moved_from.items() if n in versions)
            moved_from = {}
            if rng.random() < 0.3 and len(versions) > 4:
                del versions[rng.choice(sorted(versions))]
            source.resources = mapping(EDS, versions)
            source.version = f"v{serial}"
            nacking = rng.random() < 0.1
            for client in clients:
                nack = nacking and client is clients[0]
                client.take(client.engine.push_full(now, endpoints=True), now, nack=nack)
        elif roll < 0.75:  # an endpoint push of a few names
            moved = rng.sample(sorted(versions), min(2, len(versions)))
            for name in moved:
                moved_from.setdefault(name, versions[name])
                versions[name] = str(serial)
            source.resources = mapping(EDS, versions)
            source.version = f"v{serial}"
            for client in clients:
                client.take(client.engine.push_endpoints(frozenset(moved), now), now)
        else:  # one stream subscribes to a name, or drops one
            client = rng.choice(clients)
            if rng.random() < 0.5:
                client.change([rng.choice(pool)], [], now)
            elif client.names:
                client.change([], [rng.choice(sorted(client.names))], now)
        if roll < 0.5 and not any(c.rejected for c in clients):
            for client in clients:
                assert client.held == client.expected(source.resources), (seed, _step)
        if roll < 0.5:
            # a push that changes every name heals a rejected response
            for name in versions:
                versions[name] = f"{serial}h"
            source.resources = mapping(EDS, versions)
            serial += 1
            source.version = f"v{serial}"
            now += 1.0
            for client in clients:
                client.rejected = False
                client.take(client.engine.push_full(now, endpoints=True), now)
                assert client.held == client.expected(source.resources), (seed, _step)
