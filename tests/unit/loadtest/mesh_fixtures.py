"""Small Envoy resources for the simulated-proxy tests: clusters, endpoints, listeners, routes.

Names follow Istio (``outbound|9080||reviews.default.svc.cluster.local``, route
configs per port), and the mesh mixes in what a simulated proxy must *not*
follow: a STATIC cluster (no EDS) and a TCP listener (no RDS).
"""

from __future__ import annotations

from envoy.config.cluster.v3 import cluster_pb2
from envoy.config.core.v3 import address_pb2, base_pb2, config_source_pb2
from envoy.config.endpoint.v3 import endpoint_components_pb2, endpoint_pb2
from envoy.config.listener.v3 import api_listener_pb2, listener_components_pb2, listener_pb2
from envoy.config.route.v3 import route_components_pb2, route_pb2
from envoy.extensions.filters.http.router.v3 import router_pb2
from envoy.extensions.filters.network.http_connection_manager.v3 import (
    http_connection_manager_pb2 as hcm_pb2,
)
from envoy.extensions.filters.network.tcp_proxy.v3 import tcp_proxy_pb2
from google.protobuf import any_pb2, duration_pb2
from google.protobuf.message import Message

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS

Resources = dict[str, dict[str, Message]]


def pack(message: Message) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def _ads() -> config_source_pb2.ConfigSource:
    return config_source_pb2.ConfigSource(
        ads=config_source_pb2.AggregatedConfigSource(),
        resource_api_version=config_source_pb2.ApiVersion.V3,
    )


def outbound(service: str, port: int, namespace: str = "default") -> str:
    return f"outbound|{port}||{service}.{namespace}.svc.cluster.local"


def eds_cluster(name: str, service_name: str | None = None) -> cluster_pb2.Cluster:
    return cluster_pb2.Cluster(
        name=name,
        type=cluster_pb2.Cluster.EDS,
        connect_timeout=duration_pb2.Duration(seconds=1),
        eds_cluster_config=cluster_pb2.Cluster.EdsClusterConfig(
            eds_config=_ads(), service_name=service_name if service_name is not None else name
        ),
    )


def static_cluster(name: str) -> cluster_pb2.Cluster:
    return cluster_pb2.Cluster(
        name=name,
        type=cluster_pb2.Cluster.STATIC,
        connect_timeout=duration_pb2.Duration(seconds=1),
    )


def endpoints(name: str, *ips: str, port: int = 9080) -> endpoint_pb2.ClusterLoadAssignment:
    return endpoint_pb2.ClusterLoadAssignment(
        cluster_name=name,
        endpoints=[
            endpoint_components_pb2.LocalityLbEndpoints(
                locality=base_pb2.Locality(region="r1"),
                load_balancing_weight={"value": 1},
                lb_endpoints=[
                    endpoint_components_pb2.LbEndpoint(
                        endpoint=endpoint_components_pb2.Endpoint(
                            address=address_pb2.Address(
                                socket_address=address_pb2.SocketAddress(
                                    address=ip, port_value=port
                                )
                            )
                        )
                    )
                    for ip in ips
                ],
            )
        ],
    )


def _manager(route_name: str) -> hcm_pb2.HttpConnectionManager:
    return hcm_pb2.HttpConnectionManager(
        stat_prefix=route_name,
        rds=hcm_pb2.Rds(config_source=_ads(), route_config_name=route_name),
        http_filters=[
            hcm_pb2.HttpFilter(
                name="envoy.filters.http.router", typed_config=pack(router_pb2.Router())
            )
        ],
    )


def http_listener(port: int, route_name: str) -> listener_pb2.Listener:
    return listener_pb2.Listener(
        name=f"0.0.0.0_{port}",
        address=address_pb2.Address(
            socket_address=address_pb2.SocketAddress(address="0.0.0.0", port_value=port)
        ),
        filter_chains=[
            listener_components_pb2.FilterChain(
                filters=[
                    listener_components_pb2.Filter(
                        name="envoy.filters.network.http_connection_manager",
                        typed_config=pack(_manager(route_name)),
                    )
                ]
            )
        ],
    )


def tcp_listener(port: int, cluster: str) -> listener_pb2.Listener:
    return listener_pb2.Listener(
        name=f"0.0.0.0_{port}",
        address=address_pb2.Address(
            socket_address=address_pb2.SocketAddress(address="0.0.0.0", port_value=port)
        ),
        filter_chains=[
            listener_components_pb2.FilterChain(
                filters=[
                    listener_components_pb2.Filter(
                        name="envoy.filters.network.tcp_proxy",
                        typed_config=pack(
                            tcp_proxy_pb2.TcpProxy(stat_prefix=cluster, cluster=cluster)
                        ),
                    )
                ]
            )
        ],
    )


def api_listener(target: str, route_name: str) -> listener_pb2.Listener:
    """A proxyless gRPC client's listener: named as the target, HCM in ``api_listener``."""
    return listener_pb2.Listener(
        name=target,
        api_listener=api_listener_pb2.ApiListener(api_listener=pack(_manager(route_name))),
    )


def route(name: str, *clusters: str) -> route_pb2.RouteConfiguration:
    return route_pb2.RouteConfiguration(
        name=name,
        virtual_hosts=[
            route_components_pb2.VirtualHost(
                name=f"{cluster}-host",
                domains=[f"{cluster}-host", "*"] if index == 0 else [f"{cluster}-host"],
                routes=[
                    route_components_pb2.Route(
                        match=route_components_pb2.RouteMatch(prefix="/"),
                        route=route_components_pb2.RouteAction(cluster=cluster),
                    )
                ],
            )
            for index, cluster in enumerate(clusters)
        ],
    )


REVIEWS = outbound("reviews", 9080)
RATINGS = outbound("ratings", 9080)
DETAILS = outbound("details", 9080)
PRODUCTPAGE = outbound("productpage", 8080)
EDS_CLUSTERS = (REVIEWS, RATINGS, PRODUCTPAGE)
BLACKHOLE = "BlackHoleCluster"
ROUTES = ("9080", "8080")


def sidecar_mesh() -> Resources:
    """What a sidecar in ``default`` sees: 3 EDS clusters + 1 static, 2 HTTP + 1 TCP listeners."""
    return {
        CDS: {
            **{name: eds_cluster(name) for name in EDS_CLUSTERS},
            BLACKHOLE: static_cluster(BLACKHOLE),
        },
        EDS: {
            REVIEWS: endpoints(REVIEWS, "10.1.0.1", "10.1.0.2"),
            RATINGS: endpoints(RATINGS, "10.1.0.3"),
            PRODUCTPAGE: endpoints(PRODUCTPAGE, "10.1.0.4", port=8080),
            DETAILS: endpoints(DETAILS, "10.1.0.5"),
        },
        LDS: {
            "0.0.0.0_9080": http_listener(9080, "9080"),
            "0.0.0.0_8080": http_listener(8080, "8080"),
            "0.0.0.0_3306": tcp_listener(3306, BLACKHOLE),
        },
        RDS: {
            "9080": route("9080", REVIEWS, RATINGS),
            "8080": route("8080", PRODUCTPAGE),
            "unused": route("unused", DETAILS),
        },
    }


GRPC_TARGET = "reviews.default.svc.cluster.local:9080"
GRPC_ROUTE = "reviews.default.svc.cluster.local:9080"


def grpc_mesh() -> Resources:
    """What a proxyless client of ``reviews`` needs, plus resources it must not ask for."""
    mesh = sidecar_mesh()
    mesh[LDS][GRPC_TARGET] = api_listener(GRPC_TARGET, GRPC_ROUTE)
    mesh[RDS][GRPC_ROUTE] = route(GRPC_ROUTE, REVIEWS)
    return mesh
