"""A source session and a sink session driven against each other by Hypothesis.

Random config changes, deliveries in random order between the two directions, stale
requests, and reconnects that lose whatever was in flight. Checked throughout: never a
second response for a collection while one is outstanding, and never a NACKed version
again on the same stream. Checked after quiescence (everything in flight delivered): the
sink holds exactly the source's valid objects at the source's versions, nothing the source
does not have, and no invalid version of anything.
"""

from __future__ import annotations

from collections import deque

from google.protobuf.message import Message
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from pilothouse.api.istio.networking.v1alpha3 import service_entry_pb2, workload_entry_pb2
from pilothouse.config.mcp_resource import content_version
from pilothouse.config.model import Config, Origin
from pilothouse.mcp.messages import EncodedResource, Push, SinkRequest
from pilothouse.mcp.publisher import encode_config
from pilothouse.mcp.sink_session import SinkOptions, SinkSession
from pilothouse.mcp.sink_store import SinkStore
from pilothouse.mcp.snapshot import SnapshotCache
from pilothouse.mcp.source_session import SourceKind, SourceSession
from tests.unit.mcp.builders import FIRST_SEEN, SCHEMAS, SE, over_the_wire

WE = "istio/networking/v1alpha3/workloadentries"
COLLECTIONS = (SE, WE)
KIND = {SE: "ServiceEntry", WE: "WorkloadEntry"}
NAMES = ("a", "b", "c")


def make(collection: str, name: str, variant: int, valid: bool) -> Config:
    if collection == SE:
        se = service_entry_pb2.ServiceEntry()
        if valid:
            se.hosts.append(f"{name}-{variant}.example.com")
        else:
            se.addresses.append(f"10.0.0.{variant}")  # no hosts: invalid
        spec: Message = se
    else:
        spec = workload_entry_pb2.WorkloadEntry(
            address=f"10.1.0.{variant}" if valid else "", weight=variant
        )
    return Config(kind=KIND[collection], name=name, namespace="ns", spec=spec, origin=Origin("t"))


def encode_resource(config: Config) -> EncodedResource:
    return encode_config(config, FIRST_SEEN)


class SourceAgainstSink(RuleBasedStateMachine):
    @initialize(
        source_incremental=st.sets(st.sampled_from(COLLECTIONS)),
        sink_incremental=st.sets(st.sampled_from(COLLECTIONS)),
    )
    def setup(self, source_incremental: set[str], sink_incremental: set[str]) -> None:
        self.source_incremental = frozenset(source_incremental)
        options = SinkOptions(
            collections=COLLECTIONS, incremental=frozenset(sink_incremental), source="sink"
        )
        self.sink = SinkStore(options, SCHEMAS, "sink")
        self.truth: dict[str, dict[str, tuple[Config, bool]]] = {c: {} for c in COLLECTIONS}
        self.cache = SnapshotCache()
        for collection in COLLECTIONS:
            self.cache.publish(collection, [])
        self.connect()

    def connect(self) -> None:
        self.source = SourceSession(
            COLLECTIONS, incremental=self.source_incremental, snapshots=self.cache.snapshots()
        )
        self.sink_session: SinkSession = self.sink.new_session()
        self.to_source: deque[SinkRequest] = deque(self.sink_session.initial_requests())
        self.to_sink: deque[Push] = deque()
        self.outstanding: dict[str, Push | None] = dict.fromkeys(COLLECTIONS)
        self.nacked: set[tuple[str, str]] = set()

    def emit(self, push: Push | None) -> None:
        if push is None:
            return
        assert self.outstanding[push.collection] is None, "second response while one outstanding"
        assert (push.collection, push.system_version_info) not in self.nacked, "NACKed resent"
        self.outstanding[push.collection] = push
        self.to_sink.append(push)

    # --- the source's config changes -------------------------------------------------------

    @rule(
        collection=st.sampled_from(COLLECTIONS),
        name=st.sampled_from(NAMES),
        variant=st.integers(1, 2),
        valid=st.booleans() | st.just(True),
    )
    def put(self, collection: str, name: str, variant: int, valid: bool) -> None:
        self.truth[collection][name] = (make(collection, name, variant, valid), valid)
        self.publish(collection)

    @rule(
        collection=st.sampled_from(COLLECTIONS),
        changes=st.lists(
            st.tuples(st.sampled_from(NAMES), st.integers(0, 2), st.booleans()), max_size=4
        ),
    )
    def put_many(self, collection: str, changes: list[tuple[str, int, bool]]) -> None:
        """Several changes published as one snapshot (as a debounced group publishes)."""
        for name, variant, valid in changes:
            if variant == 0:
                self.truth[collection].pop(name, None)
            else:
                self.truth[collection][name] = (make(collection, name, variant, valid), valid)
        self.publish(collection)

    @rule(collection=st.sampled_from(COLLECTIONS), name=st.sampled_from(NAMES))
    def remove(self, collection: str, name: str) -> None:
        self.truth[collection].pop(name, None)
        self.publish(collection)

    def publish(self, collection: str) -> None:
        resources = [encode_resource(c) for c, _ in self.truth[collection].values()]
        if self.cache.publish(collection, resources):
            snapshot = self.cache.get(collection)
            assert snapshot is not None
            self.emit(self.source.set_snapshot(snapshot))

    # --- the wire ---------------------------------------------------------------------------

    @precondition(lambda self: bool(self.to_source))
    @rule()
    def deliver_to_source(self) -> None:
        request = self.to_source.popleft()
        decision = self.source.receive(request)
        pending = self.outstanding[request.collection]
        if decision.kind in (SourceKind.ACK, SourceKind.NACK):
            assert pending is not None and pending.nonce == request.response_nonce
            self.outstanding[request.collection] = None
            if decision.kind is SourceKind.NACK:
                self.nacked.add((request.collection, pending.system_version_info))
        elif decision.kind is SourceKind.SUBSCRIBE:
            assert pending is None  # this sink subscribes only when the stream opens
        else:
            raise AssertionError(f"unexpected {decision.kind} for {request}")
        self.emit(decision.push)

    @precondition(lambda self: bool(self.to_sink))
    @rule()
    def deliver_to_sink(self) -> None:
        push = self.to_sink.popleft()
        decision = self.sink_session.receive(over_the_wire(push))
        self.sink.apply(self.sink_session, decision)
        self.to_source.append(decision.reply)

    @rule(collection=st.sampled_from(COLLECTIONS), nonce=st.text(min_size=1, max_size=3))
    def stale_request(self, collection: str, nonce: str) -> None:
        pending = self.outstanding[collection]
        if pending is not None and pending.nonce == nonce:
            return
        before = self.source.watch(collection)
        decision = self.source.receive(SinkRequest(collection=collection, response_nonce=nonce))
        assert decision.kind is SourceKind.STALE and decision.push is None
        assert self.source.watch(collection) == before

    @rule()
    def reconnect(self) -> None:
        self.connect()

    @rule()
    def quiesce(self) -> None:
        for _ in range(1000):
            if self.to_sink:
                self.deliver_to_sink()
            elif self.to_source:
                self.deliver_to_source()
            else:
                break
        assert not self.to_sink and not self.to_source
        self.check_converged()

    def check_converged(self) -> None:
        store = self.sink.store
        assert store.has_synced()
        for collection in COLLECTIONS:
            kind = KIND[collection]
            held = {c.name: c for c in store.configs(kind, "ns")}
            assert set(held) <= set(self.truth[collection]), "sink holds what the source dropped"
            for name, (config, valid) in self.truth[collection].items():
                got = held.get(name)
                if valid:
                    assert got is not None and got.same_content(config)
                    assert got.resource_version == content_version(config)
                else:
                    assert got is None or not got.same_content(config)
            assert self.sink.held[collection] == {
                f"ns/{c.name}": c.resource_version for c in held.values()
            }

    @invariant()
    def at_most_one_outstanding(self) -> None:
        for collection in COLLECTIONS:
            in_queue = [p for p in self.to_sink if p.collection == collection]
            assert len(in_queue) <= 1


SourceAgainstSink.TestCase.settings = settings(
    max_examples=200, stateful_step_count=40, deadline=None
)
TestSourceAgainstSink = SourceAgainstSink.TestCase
