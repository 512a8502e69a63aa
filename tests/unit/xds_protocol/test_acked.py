"""What a proxy ACKed: the record itself, and the stream engine keeping it for both protocols."""

from __future__ import annotations

import random
from collections.abc import Mapping

import pytest
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.cache import Resource
from pilothouse.xds.protocol.acked import MAX_WAITING, AckedResources
from pilothouse.xds.protocol.stream_engine import StreamEngine
from tests.integration.test_stream_engine import (
    LISTENER,
    ROUTE,
    A,
    B,
    C,
    Client,
    Source,
)

ALL = Subscription(wildcard=True)


def resource(name: str, version: str = "1") -> Resource:
    return Resource(name, version, f"{name}@{version}".encode())


def versions(held: Mapping[str, Resource]) -> dict[str, str]:
    return {name: r.version for name, r in held.items()}


# -- the record -------------------------------------------------------------------------


def test_nothing_is_held_until_the_ack_and_then_the_very_mapping_sent() -> None:
    record = AckedResources()
    sent = {A: resource(A), B: resource(B)}
    record.sent(CDS, "n1", sent, replace=True)
    assert record.held(CDS, ALL) == {}
    record.answered(CDS, "n1", rejected=False, subscription=ALL)
    assert record.held(CDS, ALL) is sent  # a reference: nothing copied


def test_a_full_state_response_replaces_and_a_stale_ack_changes_nothing() -> None:
    record = AckedResources()
    record.sent(CDS, "n1", {A: resource(A)}, replace=True)
    record.answered(CDS, "n1", rejected=False, subscription=ALL)
    record.sent(CDS, "n2", {A: resource(A, "2")}, replace=True)
    record.sent(CDS, "n3", {B: resource(B)}, replace=True)
    record.answered(CDS, "n2", rejected=False, subscription=ALL)  # superseded by n3
    assert versions(record.held(CDS, ALL)) == {A: "1"}
    record.answered(CDS, "n3", rejected=False, subscription=ALL)
    assert versions(record.held(CDS, ALL)) == {B: "1"}


def test_per_name_responses_add_up_and_an_ack_settles_the_earlier_ones() -> None:
    record = AckedResources()
    names = Subscription(frozenset({A, B}))
    record.sent(EDS, "n1", {A: resource(A)}, replace=False)
    record.sent(EDS, "n2", {B: resource(B)}, replace=False)
    record.answered(EDS, "n2", rejected=False, subscription=names)
    assert versions(record.held(EDS, names)) == {A: "1", B: "1"}


def test_a_nack_keeps_the_last_good_version_and_settles_the_earlier_ones() -> None:
    record = AckedResources()
    names = Subscription(frozenset({A, B}))
    record.sent(EDS, "n1", {A: resource(A)}, replace=False)
    record.answered(EDS, "n1", rejected=False, subscription=names)
    record.sent(EDS, "n2", {B: resource(B)}, replace=False)
    record.sent(EDS, "n3", {A: resource(A, "bad")}, replace=False)
    record.answered(EDS, "n3", rejected=True, subscription=names)
    assert versions(record.held(EDS, names)) == {A: "1", B: "1"}
    record.answered(EDS, "n3", rejected=False, subscription=names)  # Envoy repeats the nonce
    assert versions(record.held(EDS, names)) == {A: "1", B: "1"}


def test_delta_removals_and_a_sent_mapping_shared_with_others_is_never_changed() -> None:
    record = AckedResources()
    first = {A: resource(A), B: resource(B)}
    record.sent(CDS, "n1", first, replace=False)
    record.answered(CDS, "n1", rejected=False, subscription=ALL)
    record.sent(CDS, "n2", {C: resource(C)}, frozenset({A}), replace=False)
    record.answered(CDS, "n2", rejected=False, subscription=ALL)
    assert versions(record.held(CDS, ALL)) == {B: "1", C: "1"}
    assert set(first) == {A, B}


def test_names_no_longer_subscribed_are_not_held() -> None:
    record = AckedResources()
    both = Subscription(frozenset({A, B}))
    record.sent(EDS, "n1", {A: resource(A), B: resource(B)}, replace=False)
    record.answered(EDS, "n1", rejected=False, subscription=both)
    only_b = Subscription(frozenset({B}))
    assert versions(record.held(EDS, only_b)) == {B: "1"}
    assert record.held(EDS, None) == {}
    record.sent(EDS, "n2", {B: resource(B, "2")}, replace=False)
    record.answered(EDS, "n2", rejected=False, subscription=only_b)  # pruned now
    assert versions(record.held(EDS, both)) == {B: "2"}


def test_a_response_carrying_every_name_is_held_as_it_is_and_others_on_top() -> None:
    record = AckedResources()
    names = Subscription(frozenset({A, B}))
    first = {A: resource(A), B: resource(B)}
    record.sent(EDS, "n1", first, replace=False)
    record.answered(EDS, "n1", rejected=False, subscription=names)
    assert record.held(EDS, ALL) is first  # shared, as generated for the whole scope
    record.sent(EDS, "n2", {A: resource(A, "2")}, replace=False)
    record.answered(EDS, "n2", rejected=False, subscription=names)
    assert versions(record.held(EDS, names)) == {A: "2", B: "1"}
    assert set(first) == {A, B} and first[A].version == "1"  # the shared one untouched
    again = {A: resource(A, "3"), B: resource(B, "3")}
    record.sent(EDS, "n3", again, replace=False)
    record.answered(EDS, "n3", rejected=False, subscription=names)
    assert record.held(EDS, ALL) is again


def test_removals_and_many_changes_on_top_of_a_shared_state() -> None:
    record = AckedResources()
    many = [f"outbound|80||s{i}.ns.svc.cluster.local" for i in range(40)]
    record.sent(CDS, "n0", {n: resource(n) for n in many}, replace=False)
    record.answered(CDS, "n0", rejected=False, subscription=ALL)
    record.sent(CDS, "n1", {}, frozenset({many[0]}), replace=False)
    record.answered(CDS, "n1", rejected=False, subscription=ALL)
    assert many[0] not in record.held(CDS, ALL) and len(record.held(CDS, ALL)) == 39
    for index, name in enumerate(many):  # enough to fold the changes into one mapping
        record.sent(CDS, f"c{index}", {name: resource(name, "2")}, replace=False)
        record.answered(CDS, f"c{index}", rejected=False, subscription=ALL)
    assert versions(record.held(CDS, ALL)) == dict.fromkeys(many, "2")


def test_a_client_that_never_answers_cannot_grow_the_record() -> None:
    record = AckedResources()
    names = Subscription(frozenset({A, B}))
    nonces = [f"n{i}" for i in range(10 * MAX_WAITING)]
    for index, nonce in enumerate(nonces):
        name = A if index % 2 else B
        record.sent(EDS, nonce, {name: resource(name, str(index))}, replace=False)
        assert len(record._waiting[EDS]) <= MAX_WAITING
    record.answered(EDS, nonces[-1], rejected=False, subscription=names)
    last = len(nonces) - 1
    assert versions(record.held(EDS, names)) == {A: str(last), B: str(last - 1)}


def test_seeded_resources_are_held() -> None:
    record = AckedResources()
    record.seed(CDS, {A: resource(A)})
    assert versions(record.held(CDS, ALL)) == {A: "1"}


# -- the stream engine ------------------------------------------------------------------


class SharedSource(Source):
    """A source that hands out the same Resource object for the same content, as the
    resource cache does."""

    def __init__(self) -> None:
        super().__init__()
        self.built: dict[tuple[str, str, str], Resource] = {}

    def generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
        out = {}
        for name, made in super().generate(type_url, names).items():
            out[name] = self.built.setdefault((type_url, name, made.version), made)
        return out


PROTOCOLS = pytest.mark.parametrize("delta", [False, True], ids=["sotw", "delta"])


@PROTOCOLS
def test_the_engine_keeps_references_to_the_resources_acked(delta: bool) -> None:
    source = SharedSource()
    client = Client(delta, source)
    client.converge()
    acked = client.engine.acked()
    assert set(acked) == {CDS, EDS, LDS, RDS}
    assert versions(acked[CDS]) == {A: "1", B: "1"}
    assert versions(acked[LDS]) == {LISTENER: "1"} and versions(acked[RDS]) == {ROUTE: "1"}
    for type_url, held in acked.items():
        for name, found in held.items():
            assert found is source.built[(type_url, name, found.version)]


@PROTOCOLS
def test_a_push_is_acked_only_when_the_proxy_acks_it(delta: bool) -> None:
    client = Client(delta, SharedSource())
    client.converge()
    client.source.held[CDS][A] = "2"
    client.source.held[EDS][B] = "2"
    clusters, endpoints = client.push()
    assert versions(client.engine.acked()[CDS])[A] == "1"
    client.ack(clusters)
    assert versions(client.engine.acked()[CDS]) == {A: "2", B: "1"}
    assert versions(client.engine.acked()[EDS])[B] == "1"
    client.ack(endpoints)
    assert versions(client.engine.acked()[EDS]) == {A: "1", B: "2"}


@PROTOCOLS
def test_a_nacked_push_leaves_the_last_acked_resources(delta: bool) -> None:
    client = Client(delta, SharedSource())
    client.converge()
    client.source.held[CDS][A] = "2"
    clusters, refreshed = client.push(endpoints=False)  # A's assignment again, to warm it
    assert (refreshed.type_url, refreshed.names) == (EDS, (A,))
    client.request(CDS, nonce=clusters.nonce, error="bad cluster")
    assert versions(client.engine.acked()[CDS]) == {A: "1", B: "1"}


@PROTOCOLS
def test_a_removed_cluster_is_no_longer_acked_once_the_removal_is(delta: bool) -> None:
    client = Client(delta, SharedSource())
    client.converge()
    del client.source.held[CDS][B]
    (clusters,) = client.push(endpoints=False)
    client.ack(clusters)
    assert set(client.engine.acked()[CDS]) == {A}


@PROTOCOLS
def test_unsubscribed_endpoints_are_not_acked(delta: bool) -> None:
    client = Client(delta, SharedSource())
    client.converge()
    if delta:
        message = discovery_pb2.DeltaDiscoveryRequest(type_url=EDS, resource_names_unsubscribe=[B])
        client.decode(client.engine.receive(message, 3.0))
    else:
        client.request(EDS, (A,), nonce=client.engine.session.watches[EDS].nonce_sent)
    assert set(client.engine.acked()[EDS]) == {A}


def test_a_reconnecting_delta_client_holds_what_it_reports_at_the_current_version() -> None:
    source = SharedSource()
    engine = StreamEngine(source, delta=True, warming_timeout=5.0)
    current = source.generate(CDS, None)
    request = discovery_pb2.DeltaDiscoveryRequest(
        type_url=CDS, initial_resource_versions={A: current[A].version, B: "stale"}
    )
    (answer,) = engine.receive(request, 1.0)
    response = discovery_pb2.DeltaDiscoveryResponse.FromString(answer.body)
    assert [r.name for r in response.resources] == [B]  # A is held as it is now
    assert engine.acked()[CDS] == {A: current[A]}
    ack = discovery_pb2.DeltaDiscoveryRequest(type_url=CDS, response_nonce=response.nonce)
    engine.receive(ack, 2.0)
    assert engine.acked()[CDS] == {A: current[A], B: current[B]}


# -- against a plain model --------------------------------------------------------------

POOL = [f"outbound|80||s{i}.ns.svc.cluster.local" for i in range(45)]


class Model:
    """The same record kept the plain way: dict copies, every response answered in turn."""

    def __init__(self) -> None:
        self.held: dict[str, Resource] = {}
        self.waiting: list[tuple[str, Mapping[str, Resource], frozenset[str], bool]] = []

    def sent(
        self, nonce: str, resources: Mapping[str, Resource], removed: frozenset[str], replace: bool
    ) -> None:
        self.waiting = (
            [(nonce, resources, removed, replace)]
            if replace
            else [*self.waiting, (nonce, resources, removed, replace)]
        )

    def answered(self, nonce: str, rejected: bool) -> None:
        nonces = [entry[0] for entry in self.waiting]
        if nonce not in nonces:
            return
        index = nonces.index(nonce)
        settled = self.waiting[:index] if rejected else self.waiting[: index + 1]
        self.waiting = self.waiting[index + 1 :]
        for _, resources, removed, replace in settled:
            if replace:
                self.held = dict(resources)
                continue
            self.held.update(resources)
            for name in removed:
                self.held.pop(name, None)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize(
    "subscription", [ALL, Subscription(frozenset(POOL))], ids=["wildcard", "named"]
)
def test_the_record_agrees_with_a_plain_model(seed: int, subscription: Subscription) -> None:
    rng = random.Random(seed)
    record, model = AckedResources(), Model()
    shared: dict[str, Resource] = {}  # a scope's generated state, replaced as a whole
    sent: list[str] = []
    for step in range(300):
        roll = rng.random()
        if roll < 0.45 or not sent:
            nonce = f"n{step}"
            kind = rng.random()
            removed: frozenset[str] = frozenset()
            replace = False
            if kind < 0.15:  # the whole state again (a new generated mapping)
                shared = {n: resource(n, str(step)) for n in rng.sample(POOL, rng.randint(20, 45))}
                resources: Mapping[str, Resource] = shared
                replace = rng.random() < 0.5
            elif kind < 0.8:  # a few changed
                resources = {n: resource(n, str(step)) for n in rng.sample(POOL, rng.randint(1, 4))}
            else:  # a delta removal, maybe with a change
                removed = frozenset(rng.sample(POOL, rng.randint(1, 3)))
                resources = {
                    n: resource(n, str(step)) for n in rng.sample(POOL, 1) if n not in removed
                }
            record.sent(CDS, nonce, resources, removed, replace=replace)
            model.sent(nonce, resources, removed, replace)
            sent.append(nonce)
        else:  # an answer, mostly to the oldest unanswered response, sometimes stale
            nonce = (
                rng.choice(sent[-3:])
                if rng.random() < 0.2
                else (model.waiting or [(sent[-1],)])[0][0]
            )
            rejected = rng.random() < 0.15
            record.answered(CDS, nonce, rejected=rejected, subscription=subscription)
            model.answered(nonce, rejected)
        assert dict(record.held(CDS, subscription)) == model.held, f"step {step}"
