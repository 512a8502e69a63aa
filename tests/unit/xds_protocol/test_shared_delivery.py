"""Delivering a shared SotW response to one more stream walks none of its resources.

The resources a push generates for a scope are one mapping shared by its streams. Here
that mapping counts every read of a resource (each key iterated, each lookup): once it
is summarised (the second stream to see it), no other stream's delivery, push or ACK
reads any, whether the mapping holds ten resources or a thousand. An operation count,
not a timing: it fails as soon as a per-stream walk comes back.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping

import pytest
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from pilothouse.protocol.type_urls import CDS, EDS, SDS
from pilothouse.push.cache import Resource
from pilothouse.xds.protocol.shared_content import (
    KEPT_CHANGES,
    ContentVersions,
    SharedContents,
    same_content,
)
from pilothouse.xds.protocol.stream_engine import StreamEngine
from pilothouse.xds.protocol.stream_flavour import Outgoing
from pilothouse.xds.protocol.wire import FanOutResponses


class CountedResources(Mapping[str, Resource]):
    """A generated mapping that counts the resources read from it."""

    def __init__(self, resources: dict[str, Resource]) -> None:
        self._resources = resources
        self.reads = 0

    def __getitem__(self, name: str) -> Resource:
        self.reads += 1
        return self._resources[name]

    def __iter__(self) -> Iterator[str]:
        for name in self._resources:
            self.reads += 1
            yield name

    def __len__(self) -> int:
        return len(self._resources)


def clusters(count: int, version: str) -> CountedResources:
    return CountedResources(
        {
            f"outbound|80||s{i}.ns.svc.cluster.local": Resource(
                f"outbound|80||s{i}.ns.svc.cluster.local",
                version,
                any_pb2.Any(type_url=CDS, value=f"{i}@{version}".encode()).SerializeToString(),
            )
            for i in range(count)
        }
    )


class ScopeSource:
    """Every stream of one scope: the same mapping of clusters, whatever the stream."""

    def __init__(self, resources: CountedResources) -> None:
        self.resources = resources
        self.version = "v1"

    def generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
        return self.resources if type_url == CDS else {}

    def warming(self, added: frozenset[str]) -> frozenset[str]:
        return frozenset()


def request(nonce: str = "") -> discovery_pb2.DiscoveryRequest:
    return discovery_pb2.DiscoveryRequest(type_url=CDS, response_nonce=nonce)


def nonce_of(out: list[Outgoing]) -> str:
    (response,) = out
    return str(discovery_pb2.DiscoveryResponse.FromString(response.body).nonce)


@pytest.mark.parametrize("count", [10, 1000])
def test_a_shared_response_reaches_each_further_stream_without_a_walk(count: int) -> None:
    first = clusters(count, "1")
    source = ScopeSource(first)
    shared = FanOutResponses()
    engines = [
        StreamEngine(source, delta=False, warming_timeout=5.0, responses=shared) for _ in range(50)
    ]
    answers = [engine.receive(request(), 1.0) for engine in engines[:2]]
    read_by_two = first.reads  # the first delivery, then the summary: each a walk
    assert read_by_two > 0
    answers += [engine.receive(request(), 1.0) for engine in engines[2:]]
    assert first.reads == read_by_two  # 48 more streams: not one resource read
    assert len({id(out[0].body) for out in answers[1:]}) == 1  # the very same bytes
    for engine, out in zip(engines, answers, strict=True):
        engine.receive(request(nonce_of(out)), 2.0)  # ACKs
    assert first.reads == read_by_two

    second = clusters(count, "2")  # a push: the scope's new clusters
    source.resources = second
    source.version = "v2"
    pushed = [engine.push_full(3.0, endpoints=False) for engine in engines]
    # delivered once as before, compared once with the old clusters, summarised once:
    # a few walks for the scope, none per stream (a walk per stream: 50 × count)
    assert second.reads <= 8 * count
    reads_after_push = second.reads
    assert all(len(out) == 1 and out[0].resources == count for out in pushed)
    assert len({id(out[0].body) for out in pushed[1:]}) == 1
    for engine, out in zip(engines, pushed, strict=True):
        engine.receive(request(nonce_of(out)), 4.0)
    assert second.reads == reads_after_push
    # an unchanged push: a digest comparison per stream, nothing sent, nothing read
    assert all(engine.push_full(5.0, endpoints=False) == [] for engine in engines)
    assert second.reads == reads_after_push
    assert shared.contents.summaries == 2
    for engine in engines:
        assert engine.acked()[CDS] is second  # the shared mapping, by reference


def test_a_shared_response_is_withheld_after_a_nack_until_it_changes() -> None:
    resources = clusters(5, "1")
    source = ScopeSource(resources)
    shared = FanOutResponses()
    engines = [StreamEngine(source, delta=False, warming_timeout=5.0, responses=shared)]
    engines.append(StreamEngine(source, delta=False, warming_timeout=5.0, responses=shared))
    for engine in engines:
        engine.receive(request(), 1.0)
    source.resources = bad = clusters(5, "bad")
    source.version = "v2"
    pushes = [engine.push_full(2.0, endpoints=False) for engine in engines]
    for engine, out in zip(engines, pushes, strict=True):
        nack = request(nonce_of(out))
        nack.error_detail.message = "rejected"
        engine.receive(nack, 3.0)
    source.version = "v3"  # the same bad clusters at a later version: still withheld
    source.resources = CountedResources(dict(bad._resources))
    assert all(engine.push_full(4.0, endpoints=False, resend=False) == [] for engine in engines)
    source.resources = clusters(5, "good")
    source.version = "v4"
    assert all(len(engine.push_full(5.0, endpoints=False)) == 1 for engine in engines)


def test_contents_compare_by_digest_and_the_summaries_are_bounded() -> None:
    one = ContentVersions({"a": "1", "b": "2"})
    same = ContentVersions({"b": "2", "a": "1"})
    other = ContentVersions({"a": "1", "b": "3"})
    assert same_content(one, same) and one == same
    assert not same_content(one, other)
    assert same_content({"a": "1", "b": "2"}, one)  # a plain mapping: compared as one
    assert not same_content(None, one)

    contents = SharedContents(kept=4)
    mappings = [clusters(2, str(i)) for i in range(10)]
    for resources in mappings:
        assert contents.of(resources) is None  # first seen: not summarised
    assert contents.of(mappings[-1]) is not None
    assert contents.of(mappings[0]) is None  # long forgotten: seen anew
    assert contents.difference(mappings[0], mappings[1]) == (
        frozenset(mappings[1]), set(), set()
    )  # fmt: skip
    assert contents.difference(mappings[1], clusters(2, "1")) == (set(), set(), set())  # equal
    assert contents.difference(mappings[1], mappings[1]) == (set(), set(), set())
    assert contents.difference(clusters(1, "1"), mappings[1]).added == {
        "outbound|80||s1.ns.svc.cluster.local"
    }
    assert contents.difference(mappings[1], clusters(1, "1")) == (
        set(), set(), {"outbound|80||s1.ns.svc.cluster.local"}
    )  # fmt: skip


def test_a_scopes_difference_outlives_the_pairs_of_single_streams() -> None:
    contents = SharedContents()
    before, after = clusters(50, "1"), clusters(50, "2")
    found = contents.difference(before, after)
    reads = before.reads + after.reads
    for _ in range(3 * KEPT_CHANGES):  # each stream: its own pair, then the scope's
        contents.difference(clusters(1, "1"), clusters(1, "2"))
        assert contents.difference(before, after) is found
    assert before.reads + after.reads == reads  # worked out once, never again


def test_a_stream_of_its_own_summarises_few_mappings() -> None:
    own = FanOutResponses(kept=2)
    mappings = [clusters(1, str(i)) for i in range(100)]
    for resources in mappings:
        own.contents.of(resources)
        own.contents.of(resources)  # seen twice: summarised
    assert own.contents.summaries == 100
    assert len(own.contents._entries) <= 32 and len(own.contents._seen) <= 32
    for resources in mappings:
        own.contents.of(resources)  # seen once more: no summary kept this long
    assert len(own.contents._entries) <= 32 and len(own.contents._seen) <= 32


def test_a_type_whose_generator_may_answer_more_than_asked_still_takes_the_plan() -> None:
    """Only CDS, EDS, LDS and RDS generators promise to return just the names asked
    for; another type's answer (SDS here) is still narrowed to the subscription, on
    every stream that shares it."""
    resources = clusters(3, "1")
    names = list(resources)

    class Secrets(ScopeSource):
        def generate(self, type_url: str, asked: frozenset[str] | None) -> Mapping[str, Resource]:
            return resources if type_url == SDS else {}

    shared = FanOutResponses()
    source = Secrets(resources)
    for _ in range(3):
        engine = StreamEngine(source, delta=False, warming_timeout=5.0, responses=shared)
        asked = discovery_pb2.DiscoveryRequest(type_url=SDS, resource_names=names[:1])
        assert [o.resources for o in engine.receive(asked, 1.0)] == [1]


# -- EDS in a full push: per stream, only what changed --------------------------------


def assignments(count: int, version: str) -> CountedResources:
    return CountedResources(
        {
            f"s{i}": Resource(
                f"s{i}",
                version,
                any_pb2.Any(type_url=EDS, value=f"s{i}@{version}".encode()).SerializeToString(),
            )
            for i in range(count)
        }
    )


class EndpointSource(ScopeSource):
    """A scope's assignments: the shared mapping for every watched name, a mapping of
    their own for a few."""

    def generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
        if type_url != EDS:
            return {}
        every = self.resources._resources
        if names is None or names == every.keys():
            return self.resources
        return {name: every[name] for name in names if name in every}


def eds_request(names: list[str], nonce: str = "") -> discovery_pb2.DiscoveryRequest:
    return discovery_pb2.DiscoveryRequest(type_url=EDS, resource_names=names, response_nonce=nonce)


@pytest.mark.parametrize("count", [10, 1000])
def test_a_full_push_finds_each_streams_changed_assignments_without_a_walk(count: int) -> None:
    first = assignments(count, "1")
    names = list(first)
    source = EndpointSource(first)
    shared = FanOutResponses()
    engines = [
        StreamEngine(source, delta=False, warming_timeout=5.0, responses=shared) for _ in range(50)
    ]
    for engine in engines:
        engine.receive(eds_request(names, nonce_of(engine.receive(eds_request(names), 1.0))), 1.0)
    one_changed = dict(first._resources)
    one_changed["s0"] = Resource("s0", "2", b"")
    second = CountedResources(one_changed)
    source.resources = second
    pushed = [engine.push_full(2.0, endpoints=True) for engine in engines]
    assert all([o.resources for o in out] == [1] for out in pushed)
    # once name by name for the first stream (it sets its basis), once for the shared
    # difference: not once per stream
    assert second.reads <= 6 * count
    reads = second.reads
    assert all(engine.push_full(3.0, endpoints=True) == [] for engine in engines)
    assert second.reads == reads

    # an endpoint push of one name, then a full push: per stream, that one name is
    # compared (it was sent since the basis), not every name
    moved = dict(second._resources)
    moved["s1"] = Resource("s1", "3", b"")
    moved["s2"] = Resource("s2", "3", b"")
    third = CountedResources(moved)
    source.resources = third
    assert all(
        [o.resources for o in engine.push_endpoints(frozenset({"s1"}), 4.0)] == [1]
        for engine in engines
    )
    pushed = [engine.push_full(5.0, endpoints=True) for engine in engines]
    assert all([o.resources for o in out] == [1] for out in pushed)  # s2 only
    # and s2 is taken from the mapping once for all the streams that send it
    assert third.reads <= 2 * count + 2 * len(engines) + 1


@pytest.mark.parametrize("seed", range(20))
def test_full_pushes_send_exactly_the_assignments_a_stream_holds_at_another_version(
    seed: int,
) -> None:
    """Random pushes (full ones, endpoint ones of a few names, new subscriptions) to
    streams sharing mappings: each full push sends exactly the watched names whose
    version differs from the one that stream was last sent, as a client sees them."""
    rng = random.Random(seed)
    every = [f"s{i}" for i in range(12)]
    versions = dict.fromkeys(every, "0")
    made: dict[tuple[frozenset[str], tuple[tuple[str, str], ...]], Mapping[str, Resource]] = {}

    class Source:
        version = "v1"

        def generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
            asked = frozenset(n for n in (every if names is None else names) if n in versions)
            key = (asked, tuple(sorted((n, versions[n]) for n in asked)))
            if key not in made:  # equal requests share one mapping, as a scope's do
                made[key] = {
                    n: Resource(
                        n,
                        versions[n],
                        any_pb2.Any(
                            type_url=EDS, value=f"{n}@{versions[n]}".encode()
                        ).SerializeToString(),
                    )
                    for n in asked
                }
            return made[key]

        def warming(self, added: frozenset[str]) -> frozenset[str]:
            return frozenset()

    source = Source()
    shared = FanOutResponses()
    streams = []
    for _ in range(4):
        engine = StreamEngine(source, delta=False, warming_timeout=5.0, responses=shared)
        streams.append((engine, {}, rng.sample(every, rng.randint(3, 12))))

    def deliver(engine: StreamEngine, held: dict[str, str], out: list[Outgoing]) -> set[str]:
        got = set()
        for response in out:
            message = discovery_pb2.DiscoveryResponse.FromString(response.body)
            for resource in message.resources:
                name, version = (
                    any_pb2.Any.FromString(resource.SerializeToString()).value.decode().split("@")
                )
                held[name] = version
                got.add(name)
            engine.receive(eds_request(watched_of(engine), message.nonce), 1.0)
        return got

    def watched_of(engine: StreamEngine) -> list[str]:
        return sorted(engine.watched_names(EDS) or ())

    for engine, held, names in streams:
        deliver(engine, held, engine.receive(eds_request(names), 1.0))
    for step in range(40):
        for name in rng.sample(every, rng.randint(0, 4)):
            versions[name] = str(step + 1)
        if rng.random() < 0.3:  # an assignment goes, or comes (back)
            gone = rng.choice(every)
            if versions.pop(gone, None) is None:
                versions[gone] = str(step + 1)
        for engine, held, _ in streams:
            action = rng.random()
            if action < 0.15:
                names = rng.sample(every, rng.randint(3, 12))
                deliver(engine, held, engine.receive(eds_request(names, ""), 1.0))
                continue
            watched = set(watched_of(engine))
            if action < 0.4:
                few = frozenset(rng.sample(sorted(watched), min(2, len(watched))))
                got = deliver(engine, held, engine.push_endpoints(few, 2.0))
                assert got <= few
                continue
            watched &= versions.keys()
            expected = {n for n in watched if held.get(n) != versions[n]}
            got = deliver(engine, held, engine.push_full(2.0, endpoints=True))
            assert got == expected, (step, sorted(got), sorted(expected))
            assert all(held[n] == versions[n] for n in watched)


class ClusterAndEndpointSource:
    """A scope's clusters and their assignments (named alike), counting the EDS
    generator's calls."""

    def __init__(self, clusters: dict[str, Resource], endpoints: dict[str, Resource]) -> None:
        self.clusters = clusters
        self.endpoints = endpoints
        self.version = "v1"
        self.endpoint_calls = 0

    def generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
        if type_url == CDS:
            return self.clusters
        if type_url != EDS:
            return {}
        self.endpoint_calls += 1
        if names is None or names == self.endpoints.keys():
            return self.endpoints
        return {name: self.endpoints[name] for name in names if name in self.endpoints}

    def warming(self, added: frozenset[str]) -> frozenset[str]:
        return added


def assignment(name: str, version: str) -> Resource:
    body = any_pb2.Any(type_url=EDS, value=f"{name}@{version}".encode()).SerializeToString()
    return Resource(name, version, body)


def test_a_cds_push_generates_each_streams_assignments_once() -> None:
    """A cluster changes with its endpoints: the CDS response and, right behind it, the
    changed cluster's assignment, with the EDS generator called once per stream (the
    assignments found changed are the ones sent, not generated again)."""
    names = [f"s{i}" for i in range(20)]
    source = ClusterAndEndpointSource(
        {n: Resource(n, "c1", b"") for n in names}, {n: assignment(n, "e1") for n in names}
    )
    engines = [StreamEngine(source, delta=False, warming_timeout=5.0) for _ in range(5)]
    for engine in engines:
        engine.receive(request(nonce_of(engine.receive(request(), 1.0))), 1.0)
        engine.receive(eds_request(names, nonce_of(engine.receive(eds_request(names), 1.0))), 1.0)
    source.clusters = {**source.clusters, "s3": Resource("s3", "c2", b"")}
    source.endpoints = {**source.endpoints, "s3": assignment("s3", "e2")}
    source.version = "v2"
    source.endpoint_calls = 0
    for engine in engines:
        out = engine.push_full(2.0, endpoints=True)
        assert [(o.type_url, o.resources) for o in out] == [(CDS, 20), (EDS, 1)]
        (sent,) = discovery_pb2.DiscoveryResponse.FromString(out[1].body).resources
        assert sent.value == b"s3@e2"
    assert source.endpoint_calls == len(engines)
    for engine in engines:
        assert engine.acked()[EDS]["s3"].version == "e1"  # not ACKed yet
        assert engine.sotw is not None
        held = engine.sotw.watch(EDS)
        assert held is not None and held.held_versions["s3"] == "e2"
