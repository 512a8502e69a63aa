"""A SotW connection's full push: what is generated, what is sent, what is recorded.

Each push is planned as the push service plans it (:class:`ProxyPushRules`, one per
generation, as one per server) and handed to the connection, which carries it out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from pilothouse.config.model import ConfigKey
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.cache import Resource
from pilothouse.push.proxy import parse_node
from pilothouse.push.proxy_push import ProxyPushRules
from pilothouse.push.request import PushRequest
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.protocol.wire import FanOutResponses
from pilothouse.xds.server.connection import Connection

CLUSTERS = ("outbound|80||a.ns.svc.cluster.local", "outbound|80||b.ns.svc.cluster.local")
RULE = ConfigKey("DestinationRule", "ns", "a")
POLICY = ConfigKey("AuthorizationPolicy", "ns", "deny")
ROUTE = ConfigKey("VirtualService", "ns", "a")


@dataclass
class CountingGenerator:
    """Serves a fixed set of resources and counts how often it is asked."""

    type_url: str
    held: dict[str, Resource]
    calls: int = 0

    def generate(self, given: GenerationInput) -> Mapping[str, Resource]:
        self.calls += 1
        if given.names is None:
            return dict(self.held)
        return {n: r for n, r in self.held.items() if n in given.names}

    def set(self, name: str, version: str) -> None:
        body = any_pb2.Any(type_url=self.type_url, value=f"{name}@{version}".encode())
        self.held[name] = Resource(name, version, body.SerializeToString())


@dataclass
class Endpoints:
    """The one thing a connection reads of the endpoint index itself: its revision."""

    revision: int = 1


class FakeContext:
    def scope(self, proxy: object) -> object:
        return object()


@dataclass
class FakeGeneration:
    generators: dict[str, CountingGenerator]
    version: str = "2030-01-01T00:00:00Z/1"
    context: Any = field(default_factory=FakeContext)
    endpoints: Any = field(default_factory=lambda: Endpoints())
    cache: Any = None
    rules: ProxyPushRules[Connection] = field(init=False)
    """What the push service decides for each connection's push."""

    def __post_init__(self) -> None:
        self.rules = ProxyPushRules(lambda: self.endpoints.revision)

    def generator(self, type_url: str) -> CountingGenerator | None:
        return self.generators.get(type_url)

    def observe_send(self, connection: Connection, type_url: str, size: int) -> None:
        pass


def push(
    generation: FakeGeneration, connection: Connection, pushed: PushRequest, now: float
) -> None:
    """Hand ``connection`` the push its server's rules plan for ``pushed``."""
    connection.push(generation.rules.plan(connection, pushed), now)


def resources(type_url: str, *names: str) -> CountingGenerator:
    generator = CountingGenerator(type_url, {})
    for name in names:
        generator.set(name, "1")
    return generator


def request(type_url: str, names: tuple[str, ...] = (), nonce: str = "") -> Any:
    return discovery_pb2.DiscoveryRequest(
        type_url=type_url, resource_names=list(names), response_nonce=nonce
    )


def responses(connection: Connection) -> list[Any]:
    out = []
    while not connection.outbound.empty():
        queued = connection.outbound.get_nowait()
        assert queued is not None
        out.append(discovery_pb2.DiscoveryResponse.FromString(queued.body))
    return out


def converged(
    generation: FakeGeneration | None = None,
    shared: FanOutResponses | None = None,
    address: str = "10.0.0.1",
) -> tuple[Connection, FakeGeneration]:
    """A sidecar that asked for and ACKed CDS, EDS, LDS and RDS."""
    if generation is None:
        generation = FakeGeneration(
            {
                CDS: resources(CDS, *CLUSTERS),
                EDS: resources(EDS, *CLUSTERS),
                LDS: resources(LDS, "virtualOutbound"),
                RDS: resources(RDS, "80"),
            }
        )
    proxy = parse_node(f"sidecar~{address}~app-1.ns~ns.svc.cluster.local")
    connection = Connection(
        f"c-{address}", "peer", proxy, generation, delta=False, responses=shared
    )
    for type_url, names in ((CDS, ()), (EDS, CLUSTERS), (LDS, ()), (RDS, ("80",))):
        connection.on_request(request(type_url, names), 1.0)
        (answer,) = responses(connection)
        connection.on_request(request(type_url, names, answer.nonce), 2.0)
        assert not responses(connection)
    # a first full push (nothing changed): from here on a push may leave types out
    push(generation, connection, PushRequest.everything(), 2.5)
    assert not responses(connection)
    return connection, generation


def test_cluster_change_generates_clusters_once_and_sends_them_and_their_assignment() -> None:
    connection, generation = converged()
    generation.generators[CDS].set(CLUSTERS[0], "2")
    before = {t: g.calls for t, g in generation.generators.items()}
    push(generation, connection, PushRequest.for_configs([RULE]), 3.0)
    calls = {t: g.calls - before[t] for t, g in generation.generators.items()}
    # EDS once: what changed is found in it, and the changed cluster's assignment sent
    # from it; listeners read no DestinationRule, so they are not generated at all
    assert calls == {CDS: 1, EDS: 1, LDS: 0, RDS: 1}
    sent, refreshed = responses(connection)
    assert sent.type_url == CDS and len(sent.resources) == 2
    # unchanged, but Envoy warms the changed cluster only on a fresh assignment
    assert refreshed.type_url == EDS and len(refreshed.resources) == 1
    assert refreshed.resources[0].value == f"{CLUSTERS[0]}@1".encode()
    assert connection.sotw is not None
    watch = connection.sotw.watch(CDS)
    assert watch is not None and watch.sent_version(CLUSTERS[0]) == "2"
    assert not watch.acked_resource(CLUSTERS[0])
    connection.on_request(request(CDS, (), sent.nonce), 4.0)
    acked = connection.sotw.watch(CDS)
    assert acked is not None and acked.acked_resource(CLUSTERS[0])
    assert not responses(connection)


def test_streams_sent_the_same_content_share_one_response_and_no_stream_sees_a_nonce_twice() -> (
    None
):
    """A push encodes a response once for every stream it sends the same content to
    (the very bytes object is queued on each); a forced resend of the same content to a
    stream gets a nonce that stream has not seen, and every nonce is still ACKed as
    the latest."""
    shared = FanOutResponses()
    first, generation = converged(shared=shared)
    second, _ = converged(generation, shared, "10.0.0.2")
    generation.generators[CDS].set(CLUSTERS[0], "2")
    queued = []
    for connection in (first, second):
        push(generation, connection, PushRequest.for_configs([RULE]), 3.0)
        bodies = []
        while not connection.outbound.empty():
            item = connection.outbound.get_nowait()
            assert item is not None
            bodies.append(item.body)
        queued.append(bodies)
    assert len(queued[0]) == 2 and all(a is b for a, b in zip(*queued, strict=True))

    seen: dict[str, set[str]] = {CDS: set(), EDS: set(), LDS: set(), RDS: set()}
    names: dict[str, tuple[str, ...]] = {CDS: (), EDS: CLUSTERS, LDS: (), RDS: ("80",)}
    for round_ in range(3):
        push(generation, first, PushRequest.everything(forced=True), 4.0 + round_)
        for sent in responses(first):
            assert sent.nonce not in seen[sent.type_url]
            seen[sent.type_url].add(sent.nonce)
            first.on_request(request(sent.type_url, names[sent.type_url], sent.nonce), 4.5 + round_)
            assert first.sotw is not None
            watch = first.sotw.watch(sent.type_url)
            assert watch is not None and watch.nonce_acked == sent.nonce
    assert all(len(nonces) == 3 for nonces in seen.values())


def test_endpoint_change_in_a_full_push_sends_only_the_changed_assignment() -> None:
    connection, generation = converged()
    generation.generators[EDS].set(CLUSTERS[1], "2")
    push(generation, connection, PushRequest.for_configs([RULE]), 3.0)
    (sent,) = responses(connection)
    assert sent.type_url == EDS and len(sent.resources) == 1
    assert sent.resources[0].value == f"{CLUSTERS[1]}@2".encode()


def test_a_forced_push_resends_every_watched_type_though_nothing_changed() -> None:
    connection, generation = converged()
    push(generation, connection, PushRequest.everything(), 3.0)
    assert responses(connection) == [], "an unforced push of unchanged content sends nothing"
    push(generation, connection, PushRequest.everything(forced=True), 4.0)
    sent = responses(connection)
    assert [r.type_url for r in sent] == [CDS, EDS, LDS, RDS]
    assert [len(r.resources) for r in sent] == [2, 2, 1, 1]


def test_a_forced_push_resends_everything_on_a_delta_stream() -> None:
    generation = FakeGeneration({CDS: resources(CDS, *CLUSTERS), LDS: resources(LDS, "l")})
    proxy = parse_node("sidecar~10.0.0.1~app-1.ns~ns.svc.cluster.local")
    connection = Connection("c-2", "peer", proxy, generation, delta=True)

    def delta_responses() -> list[Any]:
        out = []
        while not connection.outbound.empty():
            queued = connection.outbound.get_nowait()
            assert queued is not None
            out.append(discovery_pb2.DeltaDiscoveryResponse.FromString(queued.body))
        return out

    for type_url in (CDS, LDS):
        connection.on_request(discovery_pb2.DeltaDiscoveryRequest(type_url=type_url), 1.0)
        (answer,) = delta_responses()
        ack = discovery_pb2.DeltaDiscoveryRequest(type_url=type_url, response_nonce=answer.nonce)
        connection.on_request(ack, 2.0)
        assert not delta_responses()
    push(generation, connection, PushRequest.everything(), 3.0)
    assert delta_responses() == []
    push(generation, connection, PushRequest.everything(forced=True), 4.0)
    sent = delta_responses()
    assert [(r.type_url, len(r.resources)) for r in sent] == [(CDS, 2), (LDS, 1)]


def _calls(generation: FakeGeneration, push: Any) -> dict[str, int]:
    before = {t: g.calls for t, g in generation.generators.items()}
    push()
    return {t: g.calls - before[t] for t, g in generation.generators.items()}


def test_a_push_generates_only_the_types_its_changed_kinds_can_change() -> None:
    connection, generation = converged()
    policy = _calls(
        generation, lambda: push(generation, connection, PushRequest.for_configs([POLICY]), 3.0)
    )
    assert policy == {CDS: 0, EDS: 0, LDS: 1, RDS: 0}
    route = _calls(
        generation, lambda: push(generation, connection, PushRequest.for_configs([ROUTE]), 4.0)
    )
    assert route == {CDS: 0, EDS: 0, LDS: 1, RDS: 1}
    both = PushRequest.for_configs([POLICY]).merge(PushRequest.for_configs([RULE]))
    merged = _calls(generation, lambda: push(generation, connection, both, 5.0))
    assert merged == {CDS: 1, EDS: 1, LDS: 1, RDS: 1}, "only what every changed kind skips"


def test_a_skipped_type_still_goes_out_when_it_changed_in_a_push_that_can_change_it() -> None:
    connection, generation = converged()
    generation.generators[LDS].set("virtualOutbound", "2")
    push(generation, connection, PushRequest.for_configs([RULE]), 3.0)
    assert responses(connection) == [], "a DestinationRule push leaves listeners alone"
    push(generation, connection, PushRequest.for_configs([POLICY]), 4.0)
    (sent,) = responses(connection)
    assert sent.type_url == LDS and sent.resources[0].value == b"virtualOutbound@2"


def test_everything_and_forced_pushes_generate_every_watched_type() -> None:
    connection, generation = converged()
    everything = _calls(
        generation, lambda: push(generation, connection, PushRequest.everything(), 3.0)
    )
    assert everything == {CDS: 1, EDS: 1, LDS: 1, RDS: 1}
    forced = dataclasses.replace(PushRequest.for_configs([POLICY]), forced=True)
    calls = _calls(generation, lambda: push(generation, connection, forced, 4.0))
    # (EDS in a full push follows whether endpoints can have moved, forced or not)
    assert {t: calls[t] for t in (CDS, LDS, RDS)} == {CDS: 1, LDS: 1, RDS: 1}
    assert [r.type_url for r in responses(connection)] == [CDS, LDS, RDS]


def test_a_delta_stream_skips_the_types_a_push_cannot_change() -> None:
    generation = FakeGeneration({CDS: resources(CDS, *CLUSTERS), LDS: resources(LDS, "l")})
    proxy = parse_node("sidecar~10.0.0.1~app-1.ns~ns.svc.cluster.local")
    connection = Connection("c-3", "peer", proxy, generation, delta=True)
    for type_url in (CDS, LDS):
        connection.on_request(discovery_pb2.DeltaDiscoveryRequest(type_url=type_url), 1.0)
        queued = connection.outbound.get_nowait()
        assert queued is not None
        answer = discovery_pb2.DeltaDiscoveryResponse.FromString(queued.body)
        ack = discovery_pb2.DeltaDiscoveryRequest(type_url=type_url, response_nonce=answer.nonce)
        connection.on_request(ack, 2.0)
    push(generation, connection, PushRequest.everything(), 2.5)
    generation.generators[LDS].set("l", "2")
    generation.generators[CDS].set(CLUSTERS[0], "2")
    calls = _calls(
        generation, lambda: push(generation, connection, PushRequest.for_configs([POLICY]), 3.0)
    )
    assert calls == {CDS: 0, LDS: 1}
    queued = connection.outbound.get_nowait()
    assert queued is not None and queued.type_url == LDS and connection.outbound.empty()


def test_a_push_after_the_endpoints_moved_leaves_no_type_out() -> None:
    """Listeners and clusters read endpoints too (inbound ports, DNS clusters), which an
    EDS push does not regenerate: the first full push after they moved generates all."""
    connection, generation = converged()
    generation.endpoints.revision += 1
    moved = _calls(
        generation, lambda: push(generation, connection, PushRequest.for_configs([POLICY]), 3.0)
    )
    assert moved == {CDS: 1, EDS: 0, LDS: 1, RDS: 1}
    again = _calls(
        generation, lambda: push(generation, connection, PushRequest.for_configs([POLICY]), 4.0)
    )
    assert again == {CDS: 0, EDS: 0, LDS: 1, RDS: 0}
