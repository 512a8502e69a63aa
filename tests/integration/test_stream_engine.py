"""The stream engine, SotW and delta through the same interface, with plain tables.

No grpc, no event loop: requests go in, encoded responses come out, and timed steps
are collected and run by hand.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.cache import Resource
from pilothouse.xds.protocol.stream_engine import Step, StreamEngine
from pilothouse.xds.protocol.stream_flavour import Outgoing
from pilothouse.xds.protocol.wire import FanOutResponses

A = "outbound|80||a.ns.svc.cluster.local"
B = "outbound|80||b.ns.svc.cluster.local"
C = "outbound|80||c.ns.svc.cluster.local"
ROUTE = "80"
LISTENER = "virtualOutbound"
WATCHED = {CDS: (), EDS: (A, B), LDS: (), RDS: (ROUTE,)}


@dataclass
class Source:
    """Resources by type (name → version), a push version, and the clusters that warm."""

    held: dict[str, dict[str, str]] = field(
        default_factory=lambda: {
            CDS: {A: "1", B: "1"},
            EDS: {A: "1", B: "1"},
            LDS: {LISTENER: "1"},
            RDS: {ROUTE: "1"},
        }
    )
    version: str = "v1"

    def generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
        out = {}
        for name, version in self.held.get(type_url, {}).items():
            if names is None or name in names:
                body = any_pb2.Any(type_url=type_url, value=f"{name}@{version}".encode())
                out[name] = Resource(name, version, body.SerializeToString())
        return out

    def warming(self, added: frozenset[str]) -> frozenset[str]:
        return added


@dataclass(frozen=True)
class Sent:
    type_url: str
    nonce: str
    names: tuple[str, ...]
    removed: tuple[str, ...] = ()


class Client:
    """Speaks SotW or delta to an engine; every response is decoded into :class:`Sent`."""

    def __init__(self, delta: bool, source: Source | None = None) -> None:
        self.delta = delta
        self.source = source or Source()
        self.timers: list[tuple[float, Step]] = []
        self.engine = StreamEngine(
            self.source,
            delta=delta,
            warming_timeout=5.0,
            schedule=lambda delay, step: self.timers.append((delay, step)),
        )
        self.names: dict[str, tuple[str, ...]] = {}

    def decode(self, out: list[Outgoing]) -> list[Sent]:
        sent = []
        for response in out:
            if self.delta:
                message = discovery_pb2.DeltaDiscoveryResponse.FromString(response.body)
                names = tuple(r.name for r in message.resources)
                sent.append(
                    Sent(message.type_url, message.nonce, names, tuple(message.removed_resources))
                )
            else:
                message = discovery_pb2.DiscoveryResponse.FromString(response.body)
                names = tuple(
                    any_pb2.Any.FromString(r.SerializeToString()).value.decode().split("@")[0]
                    for r in message.resources
                )
                sent.append(Sent(message.type_url, message.nonce, names))
            assert response.type_url == sent[-1].type_url
            assert response.resources == len(names)
        return sent

    def request(
        self,
        type_url: str,
        names: tuple[str, ...] | None = None,
        nonce: str = "",
        error: str = "",
        now: float = 1.0,
    ) -> list[Sent]:
        if names is not None:
            self.names[type_url] = names
        names = self.names.get(type_url, ())
        message: Any
        if self.delta:
            message = discovery_pb2.DeltaDiscoveryRequest(type_url=type_url, response_nonce=nonce)
            if not nonce:
                message.resource_names_subscribe.extend(names)
        else:
            message = discovery_pb2.DiscoveryRequest(
                type_url=type_url, resource_names=list(names), response_nonce=nonce
            )
        if error:
            message.error_detail.message = error
        return self.decode(self.engine.receive(message, now))

    def ack(self, sent: Sent) -> list[Sent]:
        return self.request(sent.type_url, nonce=sent.nonce)

    def converge(self) -> None:
        for type_url, names in WATCHED.items():
            (answer,) = self.request(type_url, names)
            assert self.ack(answer) == []

    def push(self, endpoints: bool = True) -> list[Sent]:
        return self.decode(self.engine.push_full(2.0, endpoints=endpoints))


PROTOCOLS = pytest.mark.parametrize("delta", [False, True], ids=["sotw", "delta"])


@PROTOCOLS
def test_initial_request_is_answered_and_its_ack_is_not(delta: bool) -> None:
    client = Client(delta)
    (answer,) = client.request(CDS, ())
    assert answer.type_url == CDS and sorted(answer.names) == [A, B]
    assert client.ack(answer) == []
    (endpoints,) = client.request(EDS, (A,))
    assert endpoints.names == (A,)
    assert client.ack(endpoints) == []


@PROTOCOLS
def test_nack_is_recorded_and_not_resent_until_changed(delta: bool) -> None:
    client = Client(delta)
    client.converge()
    client.source.held[CDS][A] = "2"
    update, refreshed = client.push()
    assert update.type_url == CDS
    assert (refreshed.type_url, refreshed.names) == (EDS, (A,))  # warms the changed A
    assert client.request(CDS, nonce=update.nonce, error="bad cluster") == []
    assert client.engine.session.rejects == {CDS: 1}
    assert client.push() == []  # nothing changed since the NACK: nothing resent
    client.source.held[CDS][A] = "3"
    fixed, _ = client.push()
    assert fixed.type_url == CDS and A in fixed.names


@PROTOCOLS
def test_stale_nonce_is_ignored(delta: bool) -> None:
    client = Client(delta)
    client.converge()
    client.source.held[CDS][A] = "2"
    update, _ = client.push()
    assert client.request(CDS, nonce="never-sent") == []
    assert client.engine.session.expired_nonces == {CDS: 1}
    assert client.ack(update) == []
    assert client.engine.session.expired_nonces == {CDS: 1}
    assert client.push() == []


@PROTOCOLS
def test_routes_wait_for_new_clusters_endpoints_ack(delta: bool) -> None:
    client = Client(delta)
    client.converge()
    source = client.source
    for type_url in (CDS, EDS):
        source.held[type_url][C] = "1"
    source.held[RDS][ROUTE] = "2"
    source.held[LDS][LISTENER] = "2"
    clusters, endpoints = client.push()  # C's assignment right behind it, unasked
    assert clusters.type_url == CDS and C in clusters.names
    assert (endpoints.type_url, endpoints.names) == (EDS, (C,))
    assert client.engine.settling
    assert client.ack(clusters) == []  # routes still wait: C's endpoints are not ACKed
    assert client.engine.settling
    client.names[EDS] = (A, B, C)  # Envoy's ACK names the cluster it now warms
    released = client.ack(endpoints)  # C was sent already: no second answer
    assert [s.type_url for s in released] == [LDS, RDS]
    for sent in released:
        assert client.ack(sent) == []
    assert not client.engine.settling


@PROTOCOLS
def test_full_push_goes_cds_eds_lds_rds(delta: bool) -> None:
    client = Client(delta)
    client.converge()
    for type_url, name in ((CDS, A), (EDS, A), (LDS, LISTENER), (RDS, ROUTE)):
        client.source.held[type_url][name] = "2"
    assert [s.type_url for s in client.push()] == [CDS, EDS, LDS, RDS]


@PROTOCOLS
def test_warming_gives_up_after_the_timeout(delta: bool) -> None:
    client = Client(delta)
    client.converge()
    client.source.held[CDS][C] = "1"
    client.source.held[RDS][ROUTE] = "2"
    (clusters,) = client.push()  # C has no assignment to send: nothing behind it
    assert clusters.type_url == CDS
    ((delay, give_up),) = client.timers
    assert delay == 5.0
    assert [s.type_url for s in client.decode(give_up(7.0))] == [RDS]


@PROTOCOLS
def test_removed_clusters_linger_until_routes_are_acked(delta: bool) -> None:
    client = Client(delta)
    client.converge()
    del client.source.held[CDS][B]
    del client.source.held[EDS][B]
    client.source.held[RDS][ROUTE] = "2"
    (routes,) = client.push()  # CDS, B kept, is what the proxy holds: not resent
    assert routes.type_url == RDS
    assert client.engine.settling
    final = client.ack(routes)  # no route uses B any more: now it goes
    # with its cluster only: EDS is per name, the proxy drops B's assignment with it
    assert [s.type_url for s in final] == [CDS]
    if delta:
        assert final[0].removed == (B,)
    else:
        assert B not in final[0].names
    assert not client.engine.settling
    assert client.ack(final[0]) == []


def test_the_engine_imports_nothing_from_grpc() -> None:
    code = "import sys, pilothouse.xds.protocol.stream_engine; sys.exit('grpc' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@PROTOCOLS
@pytest.mark.parametrize("endpoints", [False, True])
def test_a_changed_cluster_gets_its_unchanged_assignment_again(
    delta: bool, endpoints: bool
) -> None:
    """Envoy keeps an updated EDS cluster warming until it gets a fresh assignment, even
    an unchanged one (xds-protocol.md §2.8): the push sends it, and only it, right
    behind CDS; that is the fresh response, so the EDS ACK that follows is not
    answered again (tests/e2e/test_xds_envoy.py checks this against a real Envoy)."""
    client = Client(delta)
    client.converge()
    client.source.held[CDS][A] = "2"  # say auto-mTLS turned on: endpoints stay the same
    clusters, refreshed = client.push(endpoints=endpoints)
    assert clusters.type_url == CDS
    assert (refreshed.type_url, refreshed.names, refreshed.removed) == (EDS, (A,), ())
    assert client.ack(clusters) == []
    assert client.ack(refreshed) == []
    assert client.push(endpoints=endpoints) == []  # nothing changed since


@PROTOCOLS
def test_a_pushed_cluster_removal_warms_nothing_and_clears_the_warming_flag(
    delta: bool,
) -> None:
    """A CDS push that only removes a cluster: no EDS response behind it, and no answer
    to the EDS request with narrowed names that Envoy sends next (xds-protocol.md §5:
    a stale request, then an ACK); the warming flag has nothing to answer."""
    client = Client(delta)
    client.converge()
    del client.source.held[CDS][B]
    (clusters,) = client.push(endpoints=False)
    assert clusters.type_url == CDS and B not in clusters.names
    watch = client.engine.session.watch(EDS)
    assert watch is not None and not watch.always_respond
    assert client.ack(clusters) == []
    if delta:
        message = discovery_pb2.DeltaDiscoveryRequest(type_url=EDS)
        message.resource_names_unsubscribe.append(B)
        assert client.engine.receive(message, 3.0) == []
    else:
        assert client.request(EDS, (A,), nonce="stale-nonce") == []
        assert client.request(EDS, (A,), nonce=client.engine.session.watch(EDS).nonce_sent) == []


@PROTOCOLS
def test_an_added_cluster_gets_its_assignment_in_the_same_push(delta: bool) -> None:
    """CDS adds C: its assignment follows right behind, though the proxy has not asked
    for it yet, and the proxy's request for it (SotW: the EDS ACK with the grown names,
    after a stale one; delta: its subscribe) is not answered again."""
    client = Client(delta)
    client.converge()
    for type_url in (CDS, EDS):
        client.source.held[type_url][C] = "1"
    clusters, endpoints = client.push(endpoints=False)
    assert clusters.type_url == CDS and C in clusters.names
    assert (endpoints.type_url, endpoints.names, endpoints.removed) == (EDS, (C,), ())
    assert client.ack(clusters) == []
    if delta:
        assert client.request(EDS, (C,)) == []  # its subscribe crossed the assignment
    else:
        old = Sent(EDS, "earlier-nonce", ())
        assert client.request(EDS, (A, B, C), nonce=old.nonce) == []  # stale
    client.names[EDS] = (A, B, C) if not delta else (C,)
    assert client.ack(endpoints) == []
    assert client.push() == []
    client.source.held[EDS][C] = "2"  # C's endpoints move: it is watched like the others
    (moved,) = client.push()
    assert (moved.type_url, moved.names) == (EDS, (C,))


@PROTOCOLS
def test_a_cluster_subscribed_again_after_its_removal_is_answered(delta: bool) -> None:
    """Names counted requested ahead of the proxy are only skipped once sent: a cluster
    removed and added back, whose subscribe comes after the proxy dropped it, is sent."""
    client = Client(delta)
    client.converge()
    for type_url in (CDS, EDS):
        client.source.held[type_url][C] = "1"
    clusters, endpoints = client.push(endpoints=False)
    assert client.ack(clusters) == [] and endpoints.names == (C,)
    if delta:
        assert client.request(EDS, (C,)) == []
        assert client.ack(endpoints) == []
        unsubscribe = discovery_pb2.DeltaDiscoveryRequest(type_url=EDS)
        unsubscribe.resource_names_unsubscribe.append(C)
        assert client.engine.receive(unsubscribe, 3.0) == []
        (again,) = client.request(EDS, (C,))
    else:
        client.names[EDS] = (A, B, C)
        assert client.ack(endpoints) == []
        client.names[EDS] = (A, B)
        assert client.ack(endpoints) == []  # narrowed: C dropped
        client.names[EDS] = (A, B, C)
        (again,) = client.ack(endpoints)
    assert (again.type_url, C in again.names) == (EDS, True)


@PROTOCOLS
def test_an_unchanged_cluster_push_refreshes_no_assignment(delta: bool) -> None:
    client = Client(delta)
    client.converge()
    client.source.held[LDS][LISTENER] = "2"
    (listeners,) = client.push()
    assert listeners.type_url == LDS


def test_proxies_of_a_scope_share_the_assignments_sent_ahead() -> None:
    """Two SotW streams of one scope (one source, the server's shared responses): the
    EDS response a cluster addition sends ahead is the very same bytes on both."""
    responses = FanOutResponses()
    source = Source()
    clients = [Client(False, source) for _ in range(2)]
    for client in clients:
        client.engine = StreamEngine(source, delta=False, warming_timeout=5.0, responses=responses)
        client.converge()
    for type_url in (CDS, EDS):
        source.held[type_url][C] = "1"
    pushed = [client.engine.push_full(2.0, endpoints=False) for client in clients]
    assert [[o.type_url for o in out] for out in pushed] == [[CDS, EDS], [CDS, EDS]]
    assert pushed[0][0].body is pushed[1][0].body
    assert pushed[0][1].body is pushed[1][1].body
    assert clients[0].decode(pushed[0])[1].names == (C,)
