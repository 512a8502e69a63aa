"""RDS for proxyless gRPC: the route configuration of a listener, in the form gRPC reads."""

from __future__ import annotations

from typing import Any

from envoy.config.route.v3 import route_components_pb2 as rc_pb2
from envoy.config.route.v3 import route_pb2
from google.protobuf import duration_pb2

from pilothouse.xds.generators.grpc_rds import GrpcRouteGenerator, grpc_route
from tests.unit.grpc_xds.mesh import (
    CLUSTER,
    FQDN_TARGET,
    GREETER,
    SUBSETS,
    V1,
    V2,
    Mesh,
    grpc_proxy,
)

RouteConfiguration = route_pb2.RouteConfiguration


def virtual_service(http: str, hosts: str = "[greeter]", extra: str = "") -> str:
    return f"""\
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: greeter, namespace: default}}
spec:
  hosts: {hosts}
{extra}  http:
{http}"""


def routes_for(text: str, name: str = FQDN_TARGET) -> list[Any]:
    configs = Mesh(text).generate(GrpcRouteGenerator(), {name}, RouteConfiguration)
    (host,) = configs[name].virtual_hosts
    return list(host.routes)


def test_route_configuration_is_named_like_the_listener_and_matches_its_authority() -> None:
    names = {FQDN_TARGET, "greeter:50051"}
    configs = Mesh(GREETER).generate(GrpcRouteGenerator(), names, RouteConfiguration)
    assert set(configs) == names
    for name, config in configs.items():
        (host,) = config.virtual_hosts
        assert host.domains[0] == name
        assert "greeter.default.svc.cluster.local:50051" in host.domains
        assert len(set(host.domains)) == len(host.domains)


def test_default_route_goes_to_the_service_cluster() -> None:
    (route,) = routes_for(GREETER)
    assert route.match.prefix == "/"
    assert route.route.cluster == CLUSTER
    assert not route.route.HasField("max_stream_duration")  # no timeout: the caller's deadline
    assert not route.route.HasField("timeout")
    assert route.route.retry_policy.num_retries.value == 2


def test_unknown_names_get_nothing() -> None:
    found = Mesh(GREETER).generate(GrpcRouteGenerator(), {"80", "nothere:1"}, RouteConfiguration)
    assert found == {}


def test_weighted_subsets_header_and_method_matches() -> None:
    http = """\
  - match: [{headers: {x-canary: {exact: "yes"}}}]
    route: [{destination: {host: greeter, subset: v2}}]
  - match: [{uri: {prefix: /helloworld.Greeter/}}]
    route:
    - {destination: {host: greeter, subset: v1}, weight: 80}
    - {destination: {host: greeter, subset: v2}, weight: 20}
"""
    canary, split = routes_for(GREETER + SUBSETS + virtual_service(http))
    (header,) = canary.match.headers
    assert (header.name, header.string_match.exact) == ("x-canary", "yes")
    assert canary.route.cluster == V2
    assert split.match.prefix == "/helloworld.Greeter/"
    weights = {c.name: c.weight.value for c in split.route.weighted_clusters.clusters}
    assert weights == {V1: 80, V2: 20}


def test_timeout_is_the_max_stream_duration() -> None:
    http = """\
  - timeout: 1.5s
    route: [{destination: {host: greeter}}]
"""
    (route,) = routes_for(GREETER + virtual_service(http))
    action = route.route
    expected = duration_pb2.Duration(seconds=1, nanos=500_000_000)
    assert action.max_stream_duration.max_stream_duration == expected
    assert action.max_stream_duration.grpc_timeout_header_max == expected
    assert not action.HasField("timeout")
    assert not action.HasField("max_grpc_timeout")


def test_fault_stays_and_cors_goes() -> None:
    http = """\
  - fault: {abort: {grpcStatus: UNAVAILABLE, percentage: {value: 50}}}
    corsPolicy: {allowOrigins: [{exact: "https://example.com"}]}
    retries: {attempts: 4, retryOn: "unavailable,internal", perTryTimeout: 1s}
    route: [{destination: {host: greeter}}]
"""
    (route,) = routes_for(GREETER + virtual_service(http))
    assert set(route.typed_per_filter_config) == {"envoy.filters.http.fault"}
    policy = route.route.retry_policy
    assert (policy.num_retries.value, policy.retry_on) == (4, "unavailable,internal")


def test_hash_policies_header_stays_source_ip_becomes_the_channel() -> None:
    rule = """\
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: greeter, namespace: default}
spec:
  host: greeter.default.svc.cluster.local
  trafficPolicy: {loadBalancer: {consistentHash: {useSourceIp: true}}}
  subsets:
  - name: v1
    labels: {version: v1}
    trafficPolicy: {loadBalancer: {consistentHash: {httpHeaderName: x-user}}}
"""
    http = """\
  - match: [{headers: {x-pin: {exact: "1"}}}]
    route: [{destination: {host: greeter, subset: v1}}]
  - route: [{destination: {host: greeter}}]
"""
    pinned, default = routes_for(GREETER + rule + virtual_service(http))
    (header,) = pinned.route.hash_policy
    assert header.header.header_name == "x-user"
    (channel,) = default.route.hash_policy
    assert channel.filter_state.key == "io.grpc.channel_id"


def test_gateway_only_virtual_services_do_not_apply() -> None:
    http = """\
  - route: [{destination: {host: greeter, subset: v2}}]
"""
    text = GREETER + SUBSETS + virtual_service(http, extra="  gateways: [ingress]\n")
    (route,) = routes_for(text)
    assert route.route.cluster == CLUSTER


def test_source_labels_select_routes_per_proxy() -> None:
    http = """\
  - match: [{sourceLabels: {app: canary-client}}]
    route: [{destination: {host: greeter, subset: v2}}]
  - route: [{destination: {host: greeter, subset: v1}}]
"""
    mesh = Mesh(GREETER + SUBSETS + virtual_service(http))
    plain = mesh.generate(GrpcRouteGenerator(), {FQDN_TARGET}, RouteConfiguration)
    canary_proxy = grpc_proxy(LABELS='{"app": "canary-client"}')
    canary = mesh.generate(GrpcRouteGenerator(), {FQDN_TARGET}, RouteConfiguration, canary_proxy)
    assert [r.route.cluster for r in plain[FQDN_TARGET].virtual_hosts[0].routes] == [V1]
    assert canary[FQDN_TARGET].virtual_hosts[0].routes[0].route.cluster == V2


def test_grpc_route_leaves_redirects_alone_but_drops_unknown_filter_configs() -> None:
    route = rc_pb2.Route(name="r")
    route.match.prefix = "/"
    route.redirect.host_redirect = "elsewhere"
    route.typed_per_filter_config["envoy.filters.http.cors"].type_url = "x/y"
    out = grpc_route(route)
    assert out.redirect.host_redirect == "elsewhere"
    assert not out.typed_per_filter_config
    assert route.typed_per_filter_config  # the input is not modified
