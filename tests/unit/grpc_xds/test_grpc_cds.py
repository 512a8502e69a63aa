"""CDS for proxyless gRPC: the named clusters, with load balancing and discovery gRPC accepts."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.config.cluster.v3 import cluster_pb2

from pilothouse.xds.generators.cds import ClusterGenerator
from pilothouse.xds.generators.grpc_cds import GrpcClusterGenerator
from tests.unit.grpc_xds.mesh import CLUSTER, GREETER, SUBSETS, V1, V2, Mesh, grpc_proxy

Cluster = cluster_pb2.Cluster

DNS_SERVICE = """\
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: search, namespace: default}
spec:
  hosts: [search.example.com]
  location: MESH_EXTERNAL
  resolution: DNS
  ports: [{name: grpc, number: 443, protocol: GRPC}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: anything, namespace: default}
spec:
  hosts: [passthrough.example.com]
  location: MESH_EXTERNAL
  resolution: NONE
  ports: [{name: grpc, number: 443, protocol: GRPC}]
"""


def rule(policy: str, subset_policy: str = "") -> str:
    subset = f"\n    trafficPolicy: {subset_policy}" if subset_policy else ""
    return f"""\
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: greeter, namespace: default}}
spec:
  host: greeter.default.svc.cluster.local
  trafficPolicy: {policy}
  subsets:
  - name: v1
    labels: {{version: v1}}{subset}
"""


def clusters(text: str, names: set[str] | None) -> dict[str, Any]:
    return Mesh(text).generate(GrpcClusterGenerator(), names, Cluster)


def test_only_the_named_clusters_are_sent() -> None:
    unknown = {
        "outbound|50051|v3|greeter.default.svc.cluster.local",  # no such subset
        "outbound|1|v1|greeter.default.svc.cluster.local",  # no such port
        "inbound|50051||",
        "BlackHoleCluster",
    }
    assert set(clusters(GREETER + SUBSETS, {V1, *unknown})) == {V1}


def test_wildcard_gives_every_outbound_cluster() -> None:
    assert set(clusters(GREETER + SUBSETS, None)) == {CLUSTER, V1, V2}


def test_eds_over_ads_round_robin_without_tls() -> None:
    cluster = clusters(GREETER, {CLUSTER})[CLUSTER]
    assert cluster.type == Cluster.EDS
    assert cluster.eds_cluster_config.eds_config.HasField("ads")
    assert cluster.eds_cluster_config.service_name == CLUSTER
    assert cluster.lb_policy == Cluster.ROUND_ROBIN  # Istio's default LEAST_REQUEST is not gRPC's
    assert not cluster.HasField("transport_socket")


def test_envoy_proxies_keep_istio_default() -> None:
    envoy = grpc_proxy(GENERATOR="envoy")
    found = Mesh(GREETER).generate(ClusterGenerator(), {CLUSTER}, Cluster, envoy)
    assert found[CLUSTER].lb_policy == Cluster.LEAST_REQUEST


@pytest.mark.parametrize("simple", ["LEAST_REQUEST", "LEAST_CONN", "RANDOM", "PASSTHROUGH"])
def test_balancers_grpc_lacks_become_round_robin(simple: str) -> None:
    cluster = clusters(GREETER + rule(f"{{loadBalancer: {{simple: {simple}}}}}"), {CLUSTER})
    assert cluster[CLUSTER].lb_policy == Cluster.ROUND_ROBIN
    assert cluster[CLUSTER].type == Cluster.EDS


def test_consistent_hash_is_ring_hash_and_maglev_becomes_ring_hash() -> None:
    text = GREETER + rule(
        "{loadBalancer: {consistentHash: {httpHeaderName: x-user, "
        "ringHash: {minimumRingSize: 2048}}}}",
        "{loadBalancer: {consistentHash: {httpHeaderName: x-user, maglev: {tableSize: 65537}}}}",
    )
    found = clusters(text, {CLUSTER, V1})
    assert found[CLUSTER].lb_policy == Cluster.RING_HASH
    assert found[CLUSTER].ring_hash_lb_config.minimum_ring_size.value == 2048
    assert found[V1].lb_policy == Cluster.RING_HASH
    assert not found[V1].HasField("maglev_lb_config")


def test_tls_is_dropped_outlier_detection_and_request_limit_stay() -> None:
    policy = (
        "{tls: {mode: SIMPLE}, connectionPool: {http: {http2MaxRequests: 77}}, "
        "outlierDetection: {consecutive5xxErrors: 3, interval: 5s, baseEjectionTime: 20s, "
        "maxEjectionPercent: 50}, loadBalancer: {simple: ROUND_ROBIN, warmupDurationSecs: 10s}}"
    )
    cluster = clusters(GREETER + rule(policy), {CLUSTER})[CLUSTER]
    assert not cluster.HasField("transport_socket")
    outlier = cluster.outlier_detection
    assert (outlier.interval.seconds, outlier.base_ejection_time.seconds) == (5, 20)
    assert outlier.max_ejection_percent.value == 50
    (threshold,) = cluster.circuit_breakers.thresholds
    assert threshold.max_requests.value == 77
    assert not cluster.round_robin_lb_config.HasField("slow_start_config")


def test_dns_services_are_logical_dns_and_passthrough_ones_do_not_exist() -> None:
    dns = "outbound|443||search.example.com"
    none = "outbound|443||passthrough.example.com"
    found = clusters(GREETER + DNS_SERVICE, {dns, none})
    assert set(found) == {dns}
    cluster = found[dns]
    assert cluster.type == Cluster.LOGICAL_DNS
    (locality,) = cluster.load_assignment.endpoints
    (endpoint,) = locality.lb_endpoints
    address = endpoint.endpoint.address.socket_address
    assert (address.address, address.port_value) == ("search.example.com", 443)
