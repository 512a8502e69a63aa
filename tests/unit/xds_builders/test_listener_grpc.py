"""Proxyless gRPC listeners: the client API listener and the xDS server listener."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.config.core.v3 import base_pb2
from envoy.config.route.v3 import route_pb2
from envoy.extensions.filters.network.http_connection_manager.v3 import (
    http_connection_manager_pb2 as hcm_pb2,
)
from google.protobuf import json_format

from pilothouse.xds.builders.listener_grpc import (
    build_grpc_api_listener,
    build_grpc_server_listener,
    grpc_server_listener_name,
    grpc_server_route_config,
)

ROUTER = {
    "name": "envoy.filters.http.router",
    "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"},
}
ADS = {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"}


def as_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def test_listener_grpc_api_listener_over_rds() -> None:
    listener = build_grpc_api_listener("greeter.local:50051", rds_name="greeter.local:50051")
    assert listener.name == "greeter.local:50051"
    assert not listener.HasField("address")
    assert not listener.filter_chains
    packed = listener.api_listener.api_listener
    assert packed.type_url == (
        "type.googleapis.com/"
        "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
    )
    manager = hcm_pb2.HttpConnectionManager()
    assert packed.Unpack(manager)
    assert as_dict(manager) == {
        "stat_prefix": "greeter.local:50051",
        "rds": {"config_source": ADS, "route_config_name": "greeter.local:50051"},
        "http_filters": [ROUTER],
    }


def test_listener_grpc_api_listener_inline_routes() -> None:
    config = route_pb2.RouteConfiguration(name="inline")
    manager = hcm_pb2.HttpConnectionManager()
    listener = build_grpc_api_listener("greeter.local", route_config=config)
    assert listener.api_listener.api_listener.Unpack(manager)
    assert manager.route_config == config
    assert not manager.HasField("rds")


def test_listener_grpc_api_listener_needs_one_route_specifier() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        build_grpc_api_listener("greeter.local")


@pytest.mark.parametrize(
    ("address", "name"),
    [
        ("10.0.0.1", "xds.istio.io/grpc/lds/inbound/10.0.0.1:50051"),
        ("::1", "xds.istio.io/grpc/lds/inbound/[::1]:50051"),
    ],
)
def test_listener_grpc_server_listener_name(address: str, name: str) -> None:
    assert grpc_server_listener_name(address, 50051) == name
    assert grpc_server_listener_name(
        address, 50051, "grpc/server?xds.resource.listening_address=%s"
    ) == name.replace(
        "xds.istio.io/grpc/lds/inbound/", "grpc/server?xds.resource.listening_address="
    )


def test_listener_grpc_server_listener() -> None:
    name = grpc_server_listener_name("127.0.0.1", 50051)
    listener = build_grpc_server_listener(
        name, "127.0.0.1", 50051, grpc_server_route_config("inbound|50051||")
    )
    assert listener.name == name
    assert as_dict(listener.address) == {
        "socket_address": {"address": "127.0.0.1", "port_value": 50051}
    }
    assert listener.traffic_direction == base_pb2.INBOUND
    (chain,) = listener.filter_chains
    manager = hcm_pb2.HttpConnectionManager()
    assert chain.filters[0].typed_config.Unpack(manager)
    assert as_dict(manager) == {
        "stat_prefix": "inbound_127.0.0.1_50051",
        "route_config": {
            "name": "inbound|50051||",
            "virtual_hosts": [
                {
                    "name": "inbound|50051||",
                    "domains": ["*"],
                    "routes": [{"match": {"prefix": "/"}, "non_forwarding_action": {}}],
                }
            ],
        },
        "http_filters": [ROUTER],
    }
