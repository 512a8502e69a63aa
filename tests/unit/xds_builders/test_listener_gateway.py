"""Gateway listeners: naming, merging servers per port, chains per kind, conflicts."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.config.core.v3 import base_pb2
from envoy.config.listener.v3 import listener_pb2
from envoy.extensions.filters.network.http_connection_manager.v3 import (
    http_connection_manager_pb2 as hcm_pb2,
)
from envoy.extensions.filters.network.tcp_proxy.v3 import tcp_proxy_pb2
from envoy.extensions.transport_sockets.tls.v3 import tls_pb2
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import gateway_pb2
from pilothouse.xds.builders.filter_chain import WeightedCluster, server_names
from pilothouse.xds.builders.listener_gateway import (
    GatewayServer,
    ServerKind,
    SniRoute,
    build_gateway_listeners,
    gateway_route_name,
    plan_gateway_listeners,
)

TLS_INSPECTOR = "envoy.filters.listener.tls_inspector"
FILES = {"serverCertificate": "/certs/cert.pem", "privateKey": "/certs/key.pem"}


def server(spec: dict[str, Any]) -> gateway_pb2.Server:
    return json_format.ParseDict(spec, gateway_pb2.Server())


def http_server(port: int = 80, protocol: str = "HTTP", **extra: Any) -> gateway_pb2.Server:
    return server(
        {"port": {"number": port, "name": f"http-{port}", "protocol": protocol}, **extra}
        | {"hosts": extra.get("hosts", ["*"])}
    )


def https_server(hosts: list[str], name: str = "https-443", **tls: Any) -> gateway_pb2.Server:
    return server(
        {
            "port": {"number": 443, "name": name, "protocol": "HTTPS"},
            "hosts": hosts,
            "tls": {"mode": "SIMPLE", **FILES, **tls},
        }
    )


def gw(spec: gateway_pb2.Server, **inputs: Any) -> GatewayServer:
    return GatewayServer(spec, inputs.pop("gateway_name", "ingress"), "istio-system", **inputs)


def manager(chain: Any) -> hcm_pb2.HttpConnectionManager:
    (network_filter,) = chain.filters
    assert network_filter.name == "envoy.filters.network.http_connection_manager"
    result = hcm_pb2.HttpConnectionManager()
    assert network_filter.typed_config.Unpack(result)
    return result


def tcp_proxy(chain: Any) -> tcp_proxy_pb2.TcpProxy:
    (network_filter,) = chain.filters
    assert network_filter.name == "envoy.filters.network.tcp_proxy"
    result = tcp_proxy_pb2.TcpProxy()
    assert network_filter.typed_config.Unpack(result)
    return result


def tls_context(chain: Any) -> tls_pb2.DownstreamTlsContext:
    assert chain.transport_socket.name == "envoy.transport_sockets.tls"
    result = tls_pb2.DownstreamTlsContext()
    assert chain.transport_socket.typed_config.Unpack(result)
    return result


def only(listeners: list[listener_pb2.Listener]) -> listener_pb2.Listener:
    assert len(listeners) == 1, [item.name for item in listeners]
    return listeners[0]


def test_listener_gateway_http_servers_share_one_chain() -> None:
    listener = only(
        build_gateway_listeners(
            [
                gw(http_server(hosts=["a.example.com"])),
                gw(http_server(hosts=["b.example.com"]), gateway_name="other"),
            ]
        )
    )
    assert listener.name == "0.0.0.0_80"
    assert listener.address.socket_address.address == "0.0.0.0"
    assert listener.address.socket_address.port_value == 80
    assert listener.traffic_direction == base_pb2.OUTBOUND
    assert not listener.listener_filters
    (chain,) = listener.filter_chains
    assert not chain.HasField("filter_chain_match")
    assert not chain.HasField("transport_socket")
    assert chain.transport_socket_connect_timeout.seconds == 15
    hcm = manager(chain)
    assert hcm.rds.route_config_name == "http.80"
    assert hcm.stat_prefix == "outbound_0.0.0.0_80"
    assert hcm.use_remote_address.value is True
    assert hcm.server_name == "istio-envoy"


def test_listener_gateway_address_from_caller_and_bind() -> None:
    listeners = build_gateway_listeners(
        [
            gw(http_server(8080), address="127.0.0.1"),
            gw(http_server(8081, bind="127.0.0.2"), address="127.0.0.1"),
        ]
    )
    assert [item.name for item in listeners] == ["127.0.0.1_8080", "127.0.0.2_8081"]
    assert [manager(item.filter_chains[0]).rds.route_config_name for item in listeners] == [
        "http.8080",
        "http.8081.127.0.0.2",
    ]


def test_listener_gateway_listen_port_overrides_server_port() -> None:
    listener = only(build_gateway_listeners([gw(http_server(80), listen_port=8080)]))
    assert listener.name == "0.0.0.0_8080"
    assert manager(listener.filter_chains[0]).rds.route_config_name == "http.8080"


def test_listener_gateway_http2_ports_get_http2_options() -> None:
    listener = only(build_gateway_listeners([gw(http_server(80, "GRPC"))]))
    assert manager(listener.filter_chains[0]).HasField("http2_protocol_options")


def test_listener_gateway_http_flavours_merge() -> None:
    plain = only(build_gateway_listeners([gw(http_server(80)), gw(http_server(80, "HTTP"))]))
    assert not manager(plain.filter_chains[0]).HasField("http2_protocol_options")
    plan = plan_gateway_listeners(
        [gw(http_server(80)), gw(http_server(80, "HTTP2")), gw(http_server(80, "GRPC-Web"))]
    )
    assert plan.skipped == ()
    (chain,) = only(list(plan.listeners)).filter_chains
    hcm = manager(chain)
    assert hcm.HasField("http2_protocol_options")
    assert hcm.http_filters[0].name == "envoy.filters.http.grpc_web"


def test_listener_gateway_https_chain_per_server() -> None:
    listener = only(
        build_gateway_listeners(
            [
                gw(https_server(["istio-system/b.example.com", "a.example.com"])),
                gw(https_server(["*.internal.example.com"], name="https-internal")),
                gw(https_server(["*"], name="https-any")),
            ]
        )
    )
    assert listener.name == "0.0.0.0_443"
    assert [item.name for item in listener.listener_filters] == [TLS_INSPECTOR]
    assert [list(chain.filter_chain_match.server_names) for chain in listener.filter_chains] == [
        ["a.example.com", "b.example.com"],
        ["*.internal.example.com"],
        [],
    ]
    assert [manager(chain).rds.route_config_name for chain in listener.filter_chains] == [
        "https.443.https-443.ingress.istio-system",
        "https.443.https-internal.ingress.istio-system",
        "https.443.https-any.ingress.istio-system",
    ]
    for chain in listener.filter_chains:
        context = tls_context(chain)
        assert list(context.common_tls_context.alpn_protocols) == ["h2", "http/1.1"]
        assert context.common_tls_context.tls_certificates[0].private_key.filename == (
            "/certs/key.pem"
        )
        assert chain.transport_socket_connect_timeout.seconds == 15


def test_listener_gateway_https_stat_prefix_is_the_server_name() -> None:
    named = https_server(["a.example.com"])
    named.name = "public-https"
    listener = only(build_gateway_listeners([gw(named), gw(https_server(["b"], name="b"))]))
    assert [manager(chain).stat_prefix for chain in listener.filter_chains] == [
        "public-https",
        "outbound_0.0.0.0_443",
    ]


def test_listener_gateway_istio_mutual_https() -> None:
    spec = server(
        {
            "port": {"number": 15443, "name": "tls-mesh", "protocol": "HTTPS"},
            "hosts": ["*.svc.cluster.local"],
            "tls": {"mode": "ISTIO_MUTUAL"},
        }
    )
    listener = only(build_gateway_listeners([gw(spec)]))
    context = tls_context(listener.filter_chains[0])
    assert [
        item.name for item in context.common_tls_context.tls_certificate_sds_secret_configs
    ] == ["default"]
    assert context.require_client_certificate.value is True


def test_listener_gateway_passthrough_routes_by_sni() -> None:
    spec = server(
        {
            "port": {"number": 443, "name": "tls", "protocol": "TLS"},
            "hosts": ["*.example.com"],
            "tls": {"mode": "PASSTHROUGH"},
        }
    )
    routes = (
        SniRoute(("a.example.com",), (WeightedCluster("outbound|443||a.example.com"),)),
        SniRoute(
            ("b.example.com", "c.example.com"),
            (
                WeightedCluster("outbound|443|v1|b.example.com", 90),
                WeightedCluster("outbound|443|v2|b.example.com", 10),
            ),
        ),
        SniRoute(("d.example.com",), ()),
    )
    listener = only(build_gateway_listeners([gw(spec, tls_routes=routes)]))
    assert [item.name for item in listener.listener_filters] == [TLS_INSPECTOR]
    first, second = listener.filter_chains
    assert list(first.filter_chain_match.server_names) == ["a.example.com"]
    assert not first.HasField("transport_socket")
    assert json_format.MessageToDict(tcp_proxy(first), preserving_proto_field_name=True) == {
        "stat_prefix": "outbound|443||a.example.com",
        "cluster": "outbound|443||a.example.com",
    }
    assert list(second.filter_chain_match.server_names) == ["b.example.com", "c.example.com"]
    assert json_format.MessageToDict(tcp_proxy(second), preserving_proto_field_name=True) == {
        "stat_prefix": "outbound_0.0.0.0_443",
        "weighted_clusters": {
            "clusters": [
                {"name": "outbound|443|v1|b.example.com", "weight": 90},
                {"name": "outbound|443|v2|b.example.com", "weight": 10},
            ]
        },
    }


def test_listener_gateway_tcp_server() -> None:
    spec = server({"port": {"number": 3306, "name": "mysql", "protocol": "MYSQL"}, "hosts": ["*"]})
    listener = only(
        build_gateway_listeners(
            [gw(spec, tcp_route=(WeightedCluster("outbound|3306||db.example.com"),))]
        )
    )
    assert listener.name == "0.0.0.0_3306"
    assert not listener.listener_filters
    (chain,) = listener.filter_chains
    assert not chain.HasField("filter_chain_match")
    assert tcp_proxy(chain).cluster == "outbound|3306||db.example.com"


def test_listener_gateway_tls_terminated_tcp() -> None:
    spec = server(
        {
            "port": {"number": 9443, "name": "tls-db", "protocol": "TLS"},
            "hosts": ["db.example.com"],
            "tls": {"mode": "SIMPLE", **FILES},
        }
    )
    listener = only(
        build_gateway_listeners([gw(spec, tcp_route=(WeightedCluster("outbound|5432||db"),))])
    )
    (chain,) = listener.filter_chains
    assert list(chain.filter_chain_match.server_names) == ["db.example.com"]
    assert tcp_proxy(chain).cluster == "outbound|5432||db"
    assert not tls_context(chain).common_tls_context.alpn_protocols
    assert [item.name for item in listener.listener_filters] == [TLS_INSPECTOR]


def test_listener_gateway_listeners_sorted_by_address_then_port_number() -> None:
    listeners = build_gateway_listeners(
        [
            gw(http_server(9000)),
            gw(https_server(["a"])),
            gw(http_server(80)),
            gw(http_server(80), address="127.0.0.1"),
        ]
    )
    assert [item.name for item in listeners] == [
        "0.0.0.0_80",
        "0.0.0.0_443",
        "0.0.0.0_9000",
        "127.0.0.1_80",
    ]


@pytest.mark.parametrize(
    ("first", "second", "reason"),
    [
        (http_server(443), https_server(["a"]), "TLS and plaintext servers cannot share a port"),
        (https_server(["a"]), http_server(443), "plaintext and TLS servers cannot share a port"),
        (https_server(["a"]), https_server(["a"], name="again"), "a chain with SNI ['a'] exists"),
        (https_server(["*"]), https_server(["*"], name="again"), "a chain with SNI * exists"),
    ],
)
def test_listener_gateway_conflicts_first_server_wins(
    first: gateway_pb2.Server, second: gateway_pb2.Server, reason: str
) -> None:
    loser = gw(second, gateway_name="late")
    plan = plan_gateway_listeners([gw(first), loser])
    assert len(plan.listeners) == 1
    assert len(plan.listeners[0].filter_chains) == 1
    (skipped,) = plan.skipped
    assert skipped.server == loser
    assert reason in skipped.reason


def test_listener_gateway_tcp_servers_do_not_share_ports() -> None:
    tcp = server({"port": {"number": 9000, "name": "tcp", "protocol": "TCP"}, "hosts": ["*"]})
    route = (WeightedCluster("c"),)
    plan = plan_gateway_listeners(
        [
            gw(tcp, tcp_route=route),
            gw(tcp, tcp_route=route, gateway_name="b"),
            gw(http_server(9000)),
        ]
    )
    assert len(plan.listeners[0].filter_chains) == 1
    assert [item.reason for item in plan.skipped] == [
        "a TCP server cannot share its port on 0.0.0.0_9000",
        "an HTTP server cannot share a port with a TCP server on 0.0.0.0_9000",
    ]


def test_listener_gateway_unsupported_or_unroutable_servers_are_reported() -> None:
    auto = server(
        {
            "port": {"number": 15443, "name": "tls", "protocol": "TLS"},
            "hosts": ["*.local"],
            "tls": {"mode": "AUTO_PASSTHROUGH"},
        }
    )
    tcp = server({"port": {"number": 9000, "name": "tcp", "protocol": "TCP"}, "hosts": ["*"]})
    bad = https_server(["a"])
    bad.tls.private_key = ""
    plan = plan_gateway_listeners([gw(auto), gw(tcp), gw(bad)])
    assert plan.listeners == ()
    assert [item.reason for item in plan.skipped] == [
        "SIMPLE TLS needs serverCertificate and privateKey (or credentialName)",
        "tcp server has no route",
        "AUTO_PASSTHROUGH is not supported yet",
    ]


def test_listener_gateway_a_failed_first_server_does_not_claim_the_port() -> None:
    tcp = server({"port": {"number": 80, "name": "tcp", "protocol": "TCP"}, "hosts": ["*"]})
    plan = plan_gateway_listeners([gw(tcp), gw(http_server(80))])
    assert [item.name for item in plan.listeners] == ["0.0.0.0_80"]
    assert manager(plan.listeners[0].filter_chains[0]).rds.route_config_name == "http.80"


@pytest.mark.parametrize(
    ("spec", "kind", "route"),
    [
        (http_server(80), ServerKind.HTTP, "http.80"),
        (http_server(80, "GRPC-Web"), ServerKind.HTTP, "http.80"),
        (https_server(["a"]), ServerKind.HTTPS, "https.443.https-443.ingress.istio-system"),
        (https_server(["a"], mode="PASSTHROUGH"), ServerKind.PASSTHROUGH, None),
        (https_server(["a"], mode="AUTO_PASSTHROUGH"), ServerKind.AUTO_PASSTHROUGH, None),
        (
            https_server(["a"], mode="ISTIO_MUTUAL"),
            ServerKind.HTTPS,
            "https.443.https-443.ingress.istio-system",
        ),
        (server({"port": {"number": 1, "protocol": "TCP"}}), ServerKind.TCP, None),
        (
            server({"port": {"number": 1, "protocol": "TLS"}, "tls": {"mode": "MUTUAL"}}),
            ServerKind.TLS_TERMINATED,
            None,
        ),
    ],
)
def test_listener_gateway_server_kind_and_route_name(
    spec: gateway_pb2.Server, kind: ServerKind, route: str | None
) -> None:
    item = gw(spec)
    assert item.kind == kind
    assert item.route_name == route


def test_listener_gateway_route_names_follow_istiod() -> None:
    https = https_server(["a"])
    assert gateway_route_name(https, "gw", "ns") == "https.443.https-443.gw.ns"
    https.bind = "10.0.0.1"
    assert gateway_route_name(https, "gw", "ns") == "https.443.https-443.gw.ns.10.0.0.1"
    assert gateway_route_name(http_server(80), "gw", "ns", 8080) == "http.8080"
    passthrough = https_server(["a"], mode="PASSTHROUGH")
    assert gateway_route_name(passthrough, "gw", "ns") is None


def test_listener_gateway_https_redirect_flag() -> None:
    redirecting = gw(http_server(80, tls={"httpsRedirect": True}))
    assert redirecting.https_redirect is True
    assert redirecting.kind == ServerKind.HTTP
    assert gw(http_server(80)).https_redirect is False
    listener = only(build_gateway_listeners([redirecting]))
    assert not listener.filter_chains[0].HasField("transport_socket")


def test_listener_gateway_server_inputs_compare_by_content() -> None:
    assert gw(https_server(["a"])) == gw(https_server(["a"]))
    assert hash(gw(https_server(["a"]))) == hash(gw(https_server(["a"])))
    assert gw(https_server(["a"])) != gw(https_server(["b"]))


@pytest.mark.parametrize(
    ("hosts", "names"),
    [
        (
            ["ns/b.example.com", "a.example.com", "a.example.com"],
            ["a.example.com", "b.example.com"],
        ),
        (["*.example.com"], ["*.example.com"]),
        (["a.example.com", "*/*"], []),
        (["*"], []),
    ],
)
def test_listener_gateway_server_names(hosts: list[str], names: list[str]) -> None:
    assert server_names(hosts) == names
