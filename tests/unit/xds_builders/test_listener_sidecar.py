"""Sidecar listeners: capture-less egress ports, virtualOutbound, per-port inbound."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from envoy.config.core.v3 import base_pb2
from envoy.extensions.filters.network.http_connection_manager.v3 import (
    http_connection_manager_pb2 as hcm_pb2,
)
from envoy.extensions.filters.network.tcp_proxy.v3 import tcp_proxy_pb2
from envoy.extensions.transport_sockets.tls.v3 import tls_pb2
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import gateway_pb2
from pilothouse.xds.builders.filter_chain import WeightedCluster
from pilothouse.xds.builders.listener_sidecar import (
    build_inbound_listener,
    build_outbound_listener,
    build_virtual_outbound_listener,
    inbound_route_config,
)


def as_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def unpack(chain: Any, message: Any) -> Any:
    (network_filter,) = chain.filters
    assert network_filter.typed_config.Unpack(message)
    return message


def test_listener_sidecar_egress_http_binds_the_port_itself() -> None:
    listener = build_outbound_listener("127.0.0.1", 9080, "HTTP")
    assert listener.name == "127.0.0.1_9080"
    assert as_dict(listener.address) == {
        "socket_address": {"address": "127.0.0.1", "port_value": 9080}
    }
    assert listener.traffic_direction == base_pb2.OUTBOUND
    assert not listener.HasField("use_original_dst")
    assert not listener.HasField("bind_to_port")  # Envoy's default: bind
    assert listener.continue_on_listener_filters_timeout is True
    assert listener.HasField("listener_filters_timeout")
    assert listener.listener_filters_timeout.ToTimedelta() == timedelta(0)
    (chain,) = listener.filter_chains
    assert chain.filters[0].name == "envoy.filters.network.http_connection_manager"
    manager = unpack(chain, hcm_pb2.HttpConnectionManager())
    assert manager.rds.route_config_name == "9080"
    assert manager.stat_prefix == "outbound_127.0.0.1_9080"
    assert manager.use_remote_address.value is False
    assert not manager.HasField("http2_protocol_options")


def test_listener_sidecar_egress_grpc_and_custom_route_name() -> None:
    listener = build_outbound_listener("127.0.0.1", 50051, "GRPC", rds_name="greeter:50051")
    manager = unpack(listener.filter_chains[0], hcm_pb2.HttpConnectionManager())
    assert manager.rds.route_config_name == "greeter:50051"
    assert manager.HasField("http2_protocol_options")


@pytest.mark.parametrize("protocol", ["TCP", "TLS", "HTTPS", "MONGO"])
def test_listener_sidecar_egress_tcp(protocol: str) -> None:
    listener = build_outbound_listener(
        "127.0.0.1",
        5432,
        protocol,
        destinations=[WeightedCluster("outbound|5432||db.example.com")],
        idle_timeout=timedelta(minutes=30),
    )
    (chain,) = listener.filter_chains
    assert chain.filters[0].name == "envoy.filters.network.tcp_proxy"
    assert as_dict(unpack(chain, tcp_proxy_pb2.TcpProxy())) == {
        "stat_prefix": "outbound|5432||db.example.com",
        "cluster": "outbound|5432||db.example.com",
        "idle_timeout": "1800s",
    }


def test_listener_sidecar_egress_weighted_tcp() -> None:
    listener = build_outbound_listener(
        "127.0.0.1",
        5432,
        "TCP",
        destinations=[WeightedCluster("outbound|5432|a|db", 80), WeightedCluster("b", 20)],
    )
    proxy = unpack(listener.filter_chains[0], tcp_proxy_pb2.TcpProxy())
    assert proxy.stat_prefix == "outbound_127.0.0.1_5432"
    assert [(item.name, item.weight) for item in proxy.weighted_clusters.clusters] == [
        ("outbound|5432|a|db", 80),
        ("b", 20),
    ]


def test_listener_sidecar_egress_captured_does_not_bind() -> None:
    listener = build_outbound_listener("0.0.0.0", 9080, "HTTP", capture_none=False)
    assert listener.HasField("bind_to_port")
    assert listener.bind_to_port.value is False
    assert listener.name == "0.0.0.0_9080"


def test_listener_sidecar_egress_unix_socket() -> None:
    listener = build_outbound_listener("unix:///var/run/egress.sock", 0, "HTTP", rds_name="egress")
    assert as_dict(listener.address) == {"pipe": {"path": "/var/run/egress.sock"}}


@pytest.mark.parametrize(
    ("protocol", "kwargs", "message"),
    [
        ("", {}, "protocol sniffing is not supported"),
        ("UNSUPPORTED", {}, "protocol sniffing is not supported"),
        ("TCP", {}, "at least one destination"),
        ("TCP", {"destinations": [WeightedCluster("a"), WeightedCluster("b", 0)]}, "weights"),
    ],
)
def test_listener_sidecar_egress_rejects(
    protocol: str, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        build_outbound_listener("127.0.0.1", 9000, protocol, **kwargs)


@pytest.mark.parametrize(
    ("allow_any", "catch_all"), [(True, "PassthroughCluster"), (False, "BlackHoleCluster")]
)
def test_listener_sidecar_virtual_outbound(allow_any: bool, catch_all: str) -> None:
    listener = build_virtual_outbound_listener(allow_any=allow_any)
    assert listener.name == "virtualOutbound"
    assert listener.use_original_dst.value is True
    assert as_dict(listener.address) == {
        "socket_address": {"address": "0.0.0.0", "port_value": 15001}
    }
    blackhole, rest = listener.filter_chains
    assert blackhole.name == "virtualOutbound-blackhole"
    assert blackhole.filter_chain_match.destination_port.value == 15001
    assert unpack(blackhole, tcp_proxy_pb2.TcpProxy()).cluster == "BlackHoleCluster"
    assert rest.name == "virtualOutbound-catchall-tcp"
    assert not rest.HasField("filter_chain_match")
    assert unpack(rest, tcp_proxy_pb2.TcpProxy()).cluster == catch_all


def test_listener_sidecar_inbound_http() -> None:
    listener = build_inbound_listener("10.0.0.1", 8080, "HTTP")
    assert listener.name == "10.0.0.1_8080"
    assert listener.traffic_direction == base_pb2.INBOUND
    (chain,) = listener.filter_chains
    assert chain.name == "10.0.0.1_8080"
    assert chain.filter_chain_match.destination_port.value == 8080
    assert not chain.HasField("transport_socket")
    assert not chain.HasField("transport_socket_connect_timeout")
    manager = unpack(chain, hcm_pb2.HttpConnectionManager())
    assert manager.stat_prefix == "inbound_10.0.0.1_8080"
    assert manager.forward_client_cert_details == hcm_pb2.HttpConnectionManager.APPEND_FORWARD
    assert manager.route_config == inbound_route_config(8080, "inbound|8080||")


def test_listener_sidecar_inbound_route_config() -> None:
    assert as_dict(inbound_route_config(8080, "inbound|8080||")) == {
        "name": "inbound|8080||",
        "virtual_hosts": [
            {
                "name": "inbound|http|8080",
                "domains": ["*"],
                "routes": [
                    {
                        "name": "default",
                        "match": {"prefix": "/"},
                        "route": {
                            "cluster": "inbound|8080||",
                            "timeout": "0s",
                            "max_stream_duration": {
                                "max_stream_duration": "0s",
                                "grpc_timeout_header_max": "0s",
                            },
                        },
                    }
                ],
            }
        ],
        "validate_clusters": False,
    }


def test_listener_sidecar_inbound_tcp_to_given_cluster() -> None:
    listener = build_inbound_listener("127.0.0.1", 6379, "REDIS", cluster="inbound|6379|redis|")
    proxy = unpack(listener.filter_chains[0], tcp_proxy_pb2.TcpProxy())
    assert (proxy.stat_prefix, proxy.cluster) == ("inbound|6379|redis|", "inbound|6379|redis|")


def test_listener_sidecar_inbound_tls() -> None:
    tls = json_format.ParseDict(
        {"mode": "SIMPLE", "serverCertificate": "/c.pem", "privateKey": "/k.pem"},
        gateway_pb2.ServerTLSSettings(),
    )
    listener = build_inbound_listener("127.0.0.1", 8443, "GRPC", tls=tls)
    chain = listener.filter_chains[0]
    context = tls_pb2.DownstreamTlsContext()
    assert chain.transport_socket.typed_config.Unpack(context)
    assert list(context.common_tls_context.alpn_protocols) == ["h2", "http/1.1"]
    assert unpack(chain, hcm_pb2.HttpConnectionManager()).HasField("http2_protocol_options")


def test_listener_sidecar_inbound_rejects_sniffing() -> None:
    with pytest.raises(ValueError, match="sniffing"):
        build_inbound_listener("127.0.0.1", 8080, "")
