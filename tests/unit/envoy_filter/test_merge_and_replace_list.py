"""MERGE_AND_REPLACE_LIST (Istio master): a MERGE whose value's lists replace the lists
they are merged into, at every depth, except inside a ``typed_config`` (still appended)
and on listener, network and HTTP filters (no effect), as istiod does."""

from __future__ import annotations

from typing import Any

from envoy.config.cluster.v3 import cluster_pb2
from envoy.config.route.v3 import route_components_pb2, route_pb2
from envoy.extensions.transport_sockets.tls.v3 import tls_pb2
from google.protobuf.json_format import MessageToDict, ParseDict

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.xds.builders.envoy_patch_cluster import patch_clusters
from pilothouse.xds.builders.envoy_patch_listener import patch_listeners
from pilothouse.xds.builders.envoy_patch_match import Applied
from pilothouse.xds.builders.envoy_patch_merge import merge
from pilothouse.xds.builders.envoy_patch_route import patch_route_configuration
from pilothouse.xds.builders.listener_sidecar import build_outbound_listener

from .patching import ROUTER, http_filter_match, rules

OUTBOUND = EnvoyFilter.SIDECAR_OUTBOUND
TLS = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
ROUTER_TYPE = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"


def host(**fields: Any) -> Any:
    return ParseDict(fields, route_components_pb2.VirtualHost())


HELD = {
    "name": "a",
    "domains": ["a", "a:80"],
    "retry_policy": {"retry_on": "5xx", "retriable_status_codes": [502, 503]},
    "typed_per_filter_config": {
        "one": {"@type": ROUTER_TYPE},
        "two": {"@type": ROUTER_TYPE},
    },
}
VALUE = {
    "domains": ["b"],
    "retry_policy": {"retriable_status_codes": [504]},
    "typed_per_filter_config": {"three": {"@type": ROUTER_TYPE}},
}


def test_merge_appends_lists_and_replace_lists_replaces_them_at_every_depth() -> None:
    appended = host(**HELD)
    merge(appended, host(**VALUE))
    assert list(appended.domains) == ["a", "a:80", "b"]
    assert list(appended.retry_policy.retriable_status_codes) == [502, 503, 504]
    replaced = host(**HELD)
    merge(replaced, host(**VALUE), replace_lists=True)
    assert list(replaced.domains) == ["b"]
    assert list(replaced.retry_policy.retriable_status_codes) == [504]  # nested list too
    assert replaced.retry_policy.retry_on == "5xx"  # the rest still merges
    assert replaced.name == "a"
    # a map is no list: its entries still merge by key
    assert sorted(replaced.typed_per_filter_config) == ["one", "three", "two"]


def test_a_list_the_value_leaves_unset_is_kept() -> None:
    held = host(**HELD)
    merge(held, host(retry_policy={"retry_on": "reset"}), replace_lists=True)
    assert list(held.domains) == ["a", "a:80"]
    assert list(held.retry_policy.retriable_status_codes) == [502, 503]


def route_config() -> Any:
    return ParseDict(
        {
            "name": "8080",
            "virtual_hosts": [
                {
                    "name": "a:8080",
                    "domains": ["a", "a:8080"],
                    "routes": [{"name": "r", "match": {"prefix": "/"}, "route": {"cluster": "a"}}],
                    "request_headers_to_remove": ["x-a", "x-b"],
                }
            ],
            "internal_only_headers": ["x-internal"],
        },
        route_pb2.RouteConfiguration(),
    )


def test_route_class_patches_replace_lists() -> None:
    config = route_config()
    applied: Applied = set()
    patches = rules(
        {
            "applyTo": "ROUTE_CONFIGURATION",
            "patch": {
                "operation": "MERGE_AND_REPLACE_LIST",
                "value": {"internal_only_headers": ["x-other"]},
            },
        },
        {
            "applyTo": "VIRTUAL_HOST",
            "match": {"routeConfiguration": {"vhost": {"name": "a:8080"}}},
            "patch": {"operation": "MERGE_AND_REPLACE_LIST", "value": {"domains": ["only"]}},
        },
        {
            "applyTo": "HTTP_ROUTE",
            "match": {"routeConfiguration": {"vhost": {"route": {"name": "r"}}}},
            "patch": {
                "operation": "MERGE_AND_REPLACE_LIST",
                "value": {"request_headers_to_remove": ["x-c"]},
            },
        },
    )
    patch_route_configuration(config, patches, OUTBOUND, (), applied)
    assert list(config.internal_only_headers) == ["x-other"]
    (vhost,) = config.virtual_hosts
    assert list(vhost.domains) == ["only"]
    assert list(vhost.request_headers_to_remove) == ["x-a", "x-b"]  # not in the value
    assert list(vhost.routes[0].request_headers_to_remove) == ["x-c"]
    assert len(applied) == 3


def tls_cluster() -> Any:
    context = tls_pb2.UpstreamTlsContext(sni="db")
    context.common_tls_context.alpn_protocols.append("h2")
    found = cluster_pb2.Cluster(name="outbound|5432||db.shop.svc.cluster.local")
    found.dns_resolvers.add().socket_address.address = "10.0.0.53"
    found.transport_socket.name = "envoy.transport_sockets.tls"
    found.transport_socket.typed_config.Pack(context)
    return found


def test_a_cluster_replaces_its_lists_but_a_transport_socket_config_still_appends() -> None:
    applied: Applied = set()
    (patched,) = patch_clusters(
        [tls_cluster()],
        rules(
            {
                "applyTo": "CLUSTER",
                "match": {"cluster": {"service": "db.shop.svc.cluster.local"}},
                "patch": {
                    "operation": "MERGE_AND_REPLACE_LIST",
                    "value": {
                        "dns_resolvers": [{"socket_address": {"address": "10.0.0.54"}}],
                        "transport_socket": {
                            "name": "envoy.transport_sockets.tls",
                            "typed_config": {
                                "@type": TLS,
                                "common_tls_context": {"alpn_protocols": ["http/1.1"]},
                            },
                        },
                    },
                },
            }
        ),
        OUTBOUND,
        applied,
    )
    assert [r.socket_address.address for r in patched.dns_resolvers] == ["10.0.0.54"]
    context = tls_pb2.UpstreamTlsContext()
    patched.transport_socket.typed_config.Unpack(context)
    assert list(context.common_tls_context.alpn_protocols) == ["h2", "http/1.1"]
    assert context.sni == "db"
    assert len(applied) == 1


def test_filter_chain_match_lists_are_replaced() -> None:
    listener = build_outbound_listener("0.0.0.0", 8080, "HTTP", capture_none=False)
    listener.filter_chains[0].filter_chain_match.server_names.extend(["a", "b"])
    applied: Applied = set()
    (patched,) = patch_listeners(
        [listener],
        rules(
            {
                "applyTo": "FILTER_CHAIN",
                "match": {"listener": {"portNumber": 8080}},
                "patch": {
                    "operation": "MERGE_AND_REPLACE_LIST",
                    "value": {"filter_chain_match": {"server_names": ["c"]}},
                },
            }
        ),
        OUTBOUND,
        applied,
    )
    assert list(patched.filter_chains[0].filter_chain_match.server_names) == ["c"]
    assert len(applied) == 1


def test_on_an_http_filter_it_does_nothing() -> None:
    listener = build_outbound_listener("0.0.0.0", 8080, "HTTP", capture_none=False)
    before = MessageToDict(listener)
    patch = {
        "applyTo": "HTTP_FILTER",
        "match": http_filter_match(ROUTER),
        "patch": {
            "operation": "MERGE_AND_REPLACE_LIST",
            "value": {
                "name": "renamed",
                "typed_config": {"@type": ROUTER_TYPE, "suppress_envoy_headers": True},
            },
        },
    }
    applied: Applied = set()
    (patched,) = patch_listeners([listener], rules(patch), OUTBOUND, applied)
    assert MessageToDict(patched) == before  # validation warns it has no effect
    assert not applied
