"""The simulated proxy's parts without a network: wire reading, references, the client
engines fed by hand, request plans, backoff, percentiles and identities."""

from __future__ import annotations

import random
import statistics

import pytest
from envoy.config.cluster.v3 import cluster_pb2
from envoy.service.discovery.v3 import discovery_pb2
from google.protobuf import any_pb2, json_format
from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.loadtest import (
    Backoff,
    DeltaClient,
    EnvoyPlan,
    GrpcPlan,
    ProxyFlavour,
    ResourceReader,
    SotwClient,
    istio_node_id,
    mesh_identity,
    percentile,
    summarize,
)
from pilothouse.loadtest.identity import ProxyNode, node_message
from pilothouse.loadtest.references import (
    cluster_eds_names,
    listener_route_names,
    route_cluster_names,
    string_field,
)
from pilothouse.protocol.client_sotw import RESOURCE_WRAPPER
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.protowire import WireError

from .mesh_fixtures import (
    GRPC_ROUTE,
    GRPC_TARGET,
    REVIEWS,
    api_listener,
    eds_cluster,
    endpoints,
    http_listener,
    route,
    static_cluster,
    tcp_listener,
)

IDENTITY = mesh_identity(ProxyFlavour.SIDECAR, "10.0.0.1", "a-1", "default")
names = st.text(min_size=0, max_size=40)


# -- wire reading and references ------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.tuples(names, st.integers(0, 10**6), st.booleans()), max_size=4))
def test_string_field_agrees_with_protobuf(parts: list[tuple[str, int, bool]]) -> None:
    # Concatenated messages merge, so the name may come after other fields and repeat.
    body = b"".join(
        cluster_pb2.Cluster(
            name=name, connect_timeout={"seconds": seconds}, type=cluster_pb2.Cluster.EDS
        ).SerializeToString()
        if with_name
        else cluster_pb2.Cluster(connect_timeout={"seconds": seconds}).SerializeToString()
        for name, seconds, with_name in parts
    )
    assert string_field(body, 1) == cluster_pb2.Cluster.FromString(body).name


def test_string_field_rejects_truncated_bytes() -> None:
    body = cluster_pb2.Cluster(name="reviews").SerializeToString()
    with pytest.raises(WireError):
        string_field(body[:-2], 1)


def test_cluster_references() -> None:
    assert cluster_eds_names(eds_cluster(REVIEWS).SerializeToString()) == (REVIEWS,)
    assert cluster_eds_names(eds_cluster("c", service_name="").SerializeToString()) == ("c",)
    assert cluster_eds_names(eds_cluster("c", service_name="svc").SerializeToString()) == ("svc",)
    assert cluster_eds_names(static_cluster("s").SerializeToString()) == ()


def test_listener_and_route_references() -> None:
    assert listener_route_names(http_listener(9080, "9080").SerializeToString()) == ("9080",)
    assert listener_route_names(tcp_listener(3306, "c").SerializeToString()) == ()
    api = api_listener(GRPC_TARGET, GRPC_ROUTE).SerializeToString()
    assert listener_route_names(api) == (GRPC_ROUTE,)
    assert route_cluster_names(route("r", "a", "b", "a").SerializeToString()) == ("a", "b")


def test_reader_decodes_each_body_once_and_shares_it() -> None:
    reader = ResourceReader({CDS})
    body = eds_cluster(REVIEWS).SerializeToString()
    first = reader.read(CDS, body)
    second = reader.read(CDS, bytes(bytearray(body)))
    assert first is second
    assert reader.decodes == 1
    assert reader.read(EDS, endpoints(REVIEWS).SerializeToString()).refs == ()
    assert reader.decodes == 1


# -- engines fed by hand ----------------------------------------------------------


def sotw_response(type_url: str, version: str, nonce: str, *messages: object) -> object:
    return discovery_pb2.DiscoveryResponse(
        type_url=type_url,
        version_info=version,
        nonce=nonce,
        resources=[any_pb2.Any(type_url=type_url, value=m.SerializeToString()) for m in messages],
    )


def sotw_engine(identity: ProxyNode = IDENTITY) -> SotwClient:
    plan = EnvoyPlan() if identity.flavour.is_envoy else GrpcPlan(frozenset(identity.targets))
    return SotwClient(identity, plan, ResourceReader(plan.decoded_types))


def test_duplicate_names_are_nacked() -> None:
    engine = sotw_engine()
    engine.open_stream()
    cluster = eds_cluster(REVIEWS)
    (nack,) = engine.on_response(sotw_response(CDS, "v1", "n1", cluster, cluster), 10, 1.0)
    assert "duplicate" in nack.error_detail.message
    assert nack.version_info == ""
    assert engine.state(CDS).held == {}


def test_wrong_type_and_garbage_are_nacked() -> None:
    engine = sotw_engine()
    engine.open_stream()
    wrong = sotw_response(CDS, "v1", "n1")
    wrong.resources.add(type_url=EDS, value=endpoints(REVIEWS).SerializeToString())
    (nack,) = engine.on_response(wrong, 10, 1.0)
    assert nack.error_detail.message.startswith("resource of type")
    garbage = sotw_response(CDS, "v2", "n2")
    garbage.resources.add(type_url=CDS, value=b"\x0a\xff\xff")
    (nack,) = engine.on_response(garbage, 10, 2.0)
    assert nack.error_detail.message.startswith("cannot decode")
    assert engine.state(CDS).counters.nacks == 2


def test_resource_wrapped_sotw_is_accepted() -> None:
    engine = sotw_engine()
    engine.open_stream()
    cluster = eds_cluster(REVIEWS)
    wrapped = discovery_pb2.Resource(
        name=REVIEWS, resource=any_pb2.Any(type_url=CDS, value=cluster.SerializeToString())
    )
    response = discovery_pb2.DiscoveryResponse(
        type_url=CDS,
        version_info="v1",
        nonce="n1",
        resources=[any_pb2.Any(type_url=RESOURCE_WRAPPER, value=wrapped.SerializeToString())],
    )
    eds, ack = engine.on_response(response, 10, 1.0)
    assert (eds.type_url, list(eds.resource_names)) == (EDS, [REVIEWS])
    assert (ack.type_url, ack.version_info, ack.response_nonce) == (CDS, "v1", "n1")


def test_no_eds_clusters_means_lds_follows_cds_at_once() -> None:
    engine = sotw_engine()
    (cds,) = engine.open_stream()
    assert cds.HasField("node") and list(cds.resource_names) == []
    lds, ack = engine.on_response(sotw_response(CDS, "v1", "n1", static_cluster("s")), 10, 1.0)
    assert lds.type_url == LDS and not lds.HasField("node")
    assert ack.type_url == CDS


def test_lds_waits_for_an_accepted_eds() -> None:
    engine = sotw_engine()
    engine.open_stream()
    engine.reject = lambda type_url, resource: "no" if type_url == EDS else None
    engine.on_response(sotw_response(CDS, "v1", "n1", eds_cluster(REVIEWS)), 10, 1.0)
    (nack,) = engine.on_response(sotw_response(EDS, "v1", "n2", endpoints(REVIEWS)), 10, 2.0)
    assert nack.HasField("error_detail")
    assert not engine.state(LDS).started
    engine.reject = None
    lds, ack = engine.on_response(sotw_response(EDS, "v2", "n3", endpoints(REVIEWS)), 10, 3.0)
    assert (lds.type_url, ack.type_url, ack.version_info) == (LDS, EDS, "v2")


def test_sotw_reconnect_skips_types_wanting_nothing() -> None:
    engine = sotw_engine()
    engine.open_stream()
    engine.on_response(sotw_response(CDS, "v1", "n1", eds_cluster(REVIEWS)), 10, 1.0)
    engine.on_response(sotw_response(EDS, "v1", "n2", endpoints(REVIEWS)), 10, 2.0)
    engine.on_response(sotw_response(CDS, "v2", "n3"), 10, 3.0)  # every cluster removed
    assert engine.state(EDS).subscription.empty
    assert engine.state(EDS).held == {}
    requests = engine.open_stream()
    assert [(r.type_url, r.version_info, r.response_nonce) for r in requests] == [
        (CDS, "v2", ""),
        (LDS, "", ""),
    ]
    assert requests[0].HasField("node")


def test_delta_wildcard_reconnect_reports_held_versions() -> None:
    plan = EnvoyPlan()
    engine = DeltaClient(IDENTITY, plan, ResourceReader(plan.decoded_types))
    (first,) = engine.open_stream()
    assert list(first.resource_names_subscribe) == []
    response = discovery_pb2.DeltaDiscoveryResponse(
        type_url=CDS,
        nonce="n1",
        resources=[
            discovery_pb2.Resource(
                name="s",
                version="h1",
                resource=any_pb2.Any(type_url=CDS, value=static_cluster("s").SerializeToString()),
            )
        ],
    )
    lds, ack = engine.on_response(response, 10, 1.0)
    assert lds.type_url == LDS and ack.response_nonce == "n1"
    (cds, lds_again) = engine.open_stream()
    assert dict(cds.initial_resource_versions) == {"s": "h1"}
    assert list(cds.resource_names_subscribe) == [] and cds.HasField("node")
    assert lds_again.type_url == LDS and not lds_again.HasField("node")


def test_grpc_plan_chain() -> None:
    engine = sotw_engine(
        mesh_identity(ProxyFlavour.GRPC, "10.0.0.3", "g-1", "default", targets=(GRPC_TARGET,))
    )
    (lds,) = engine.open_stream()
    assert list(lds.resource_names) == [GRPC_TARGET]
    ack, rds = engine.on_response(
        sotw_response(LDS, "1", "n1", api_listener(GRPC_TARGET, GRPC_ROUTE)), 10, 1.0
    )
    assert (ack.type_url, rds.type_url, list(rds.resource_names)) == (LDS, RDS, [GRPC_ROUTE])
    ack, cds = engine.on_response(
        sotw_response(RDS, "1", "n2", route(GRPC_ROUTE, REVIEWS)), 10, 2.0
    )
    assert (cds.type_url, list(cds.resource_names)) == (CDS, [REVIEWS])


# -- backoff, stats, identity ----------------------------------------------------


def test_backoff_ceilings_grow_like_envoys_and_cap() -> None:
    backoff = Backoff.envoy(initial=0.5, maximum=30.0)
    assert [backoff.ceiling(n) for n in (1, 2, 3, 4)] == [0.5, 1.5, 3.5, 7.5]
    assert backoff.ceiling(7) == 30.0
    assert backoff.ceiling(500) == 30.0
    rng = random.Random(3)
    delays = [backoff.delay(2, rng) for _ in range(200)]
    assert all(0 <= d <= 1.5 for d in delays)
    assert max(delays) > 1.0  # jittered across the range, not fixed
    with pytest.raises(ValueError):
        Backoff.envoy(initial=0)
    with pytest.raises(ValueError):
        backoff.ceiling(0)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(0, 1e4, allow_nan=False), min_size=2, max_size=50))
def test_percentile_matches_inclusive_quantiles(values: list[float]) -> None:
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    for q in (1, 50, 90, 99):
        assert percentile(values, q) == pytest.approx(cuts[q - 1], rel=1e-9, abs=1e-9)
    assert percentile(values, 0) == min(values)
    assert percentile(values, 100) == max(values)


def test_summary_and_errors() -> None:
    summary = summarize([0.004, 0.001, 0.002, 0.003])
    assert (summary.count, summary.minimum, summary.maximum) == (4, 0.001, 0.004)
    assert summary.p50 == pytest.approx(0.0025)
    assert "p99=" in summary.describe()
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_identity_and_node() -> None:
    assert (
        istio_node_id("sidecar", "10.0.0.1", "p", "ns")
        == "sidecar~10.0.0.1~p.ns~ns.svc.cluster.local"
    )
    bare = ProxyNode(node_id="router~1.2.3.4~gw.edge~edge.svc.cluster.local")
    assert bare.namespace == "edge"
    node = node_message(IDENTITY)
    assert node.id == IDENTITY.node_id
    metadata = json_format.MessageToDict(node.metadata)
    assert metadata["NAMESPACE"] == "default" and metadata["LABELS"] == {"app": "a"}
    assert node.user_agent_name == "envoy" and not node.client_features
