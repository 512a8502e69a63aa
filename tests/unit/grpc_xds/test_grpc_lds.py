"""LDS for proxyless gRPC: API listeners named as requested, server listeners, nothing else."""

from __future__ import annotations

from typing import Any

from envoy.config.listener.v3 import listener_pb2
from envoy.config.route.v3 import route_pb2
from envoy.extensions.filters.network.http_connection_manager.v3 import (
    http_connection_manager_pb2 as hcm_pb2,
)

from pilothouse.xds.generators.grpc_lds import GrpcListenerGenerator
from tests.unit.grpc_xds.mesh import CLUSTER, FQDN_TARGET, GREETER, Mesh, grpc_proxy

Listener = listener_pb2.Listener
SERVER_NAME = "xds.istio.io/grpc/lds/inbound/127.0.0.1:8080"


def manager_of(listener: Any) -> Any:
    manager = hcm_pb2.HttpConnectionManager()
    assert listener.api_listener.api_listener.Unpack(manager)
    return manager


def test_client_listeners_are_named_exactly_as_requested() -> None:
    names = {FQDN_TARGET, "greeter:50051", "greeter.default:50051", "greeter.default.svc:50051"}
    listeners = Mesh(GREETER).generate(GrpcListenerGenerator(), names, Listener)
    assert set(listeners) == names
    for name, listener in listeners.items():
        assert not listener.HasField("address")
        assert not listener.filter_chains
        manager = manager_of(listener)
        assert manager.rds.route_config_name == name  # RDS of the same name
        assert manager.rds.config_source.HasField("ads")


def test_client_listener_lists_fault_then_router_filters() -> None:
    (listener,) = Mesh(GREETER).generate(GrpcListenerGenerator(), {FQDN_TARGET}, Listener).values()
    filters = [f.name for f in manager_of(listener).http_filters]
    assert filters == ["envoy.filters.http.fault", "envoy.filters.http.router"]


def test_unknown_targets_get_no_listener() -> None:
    names = {"greeter:50052", "nothere:50051", "greeter.other:50051", "outbound|50051||x"}
    assert Mesh(GREETER).generate(GrpcListenerGenerator(), names, Listener) == {}


def test_short_names_depend_on_the_proxy_namespace() -> None:
    mesh = Mesh(GREETER)
    shop = grpc_proxy("shop")
    names = {"greeter:50051", "greeter.default:50051"}
    found = mesh.generate(GrpcListenerGenerator(), names, Listener, shop)
    assert set(found) == {"greeter.default:50051"}


def test_inline_routes_put_the_route_configuration_in_the_listener() -> None:
    generator = GrpcListenerGenerator(inline_routes=True)
    (listener,) = Mesh(GREETER).generate(generator, {"greeter:50051"}, Listener).values()
    manager = manager_of(listener)
    assert not manager.HasField("rds")
    config: route_pb2.RouteConfiguration = manager.route_config
    assert config.name == "greeter:50051"
    (host,) = config.virtual_hosts
    assert host.domains[0] == "greeter:50051"
    assert host.routes[0].route.cluster == CLUSTER


def test_server_listener_serves_locally_on_its_address() -> None:
    listeners = Mesh(GREETER).generate(GrpcListenerGenerator(), {SERVER_NAME}, Listener)
    listener = listeners[SERVER_NAME]
    assert listener.address.socket_address.address == "127.0.0.1"
    assert listener.address.socket_address.port_value == 8080
    (chain,) = listener.filter_chains
    (network_filter,) = chain.filters
    manager = hcm_pb2.HttpConnectionManager()
    assert network_filter.typed_config.Unpack(manager)
    assert [f.name for f in manager.http_filters] == ["envoy.filters.http.router"]
    (route,) = manager.route_config.virtual_hosts[0].routes
    assert route.WhichOneof("action") == "non_forwarding_action"


def test_server_listener_needs_no_service() -> None:
    listeners = Mesh("").generate(GrpcListenerGenerator(), {SERVER_NAME, FQDN_TARGET}, Listener)
    assert set(listeners) == {SERVER_NAME}


def test_wildcard_gives_every_service_port_by_its_fqdn() -> None:
    listeners = Mesh(GREETER).generate(GrpcListenerGenerator(), None, Listener)
    assert set(listeners) == {FQDN_TARGET}
