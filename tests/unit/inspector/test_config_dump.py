"""Reading what an Envoy holds from its config dump: which copy of a resource counts."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.config.endpoint.v3 import endpoint_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]
from envoy.config.route.v3 import route_pb2  # type: ignore[import-untyped]

from pilothouse.inspector.config_dump import (
    UNREADABLE,
    BadDump,
    dumped_node_id,
    held_resources,
)
from pilothouse.inspector.digest import bytes_digest
from pilothouse.inspector.message_types import MessageTypes
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.xds.builders.encode import to_any_bytes
from tests.integration.test_digest import as_envoy_dumps

ADMIN = "type.googleapis.com/envoy.admin.v3."
NODE = "sidecar~127.0.0.1~app-1.shop~shop.svc.cluster.local"


def eds_cluster(name: str, timeout: int = 10, service: str = "") -> Any:
    made = cluster_pb2.Cluster(name=name, type=cluster_pb2.Cluster.EDS)
    made.connect_timeout.seconds = timeout
    made.eds_cluster_config.eds_config.ads.SetInParent()
    if service:
        made.eds_cluster_config.service_name = service
    return made


def static_cluster(name: str) -> Any:
    return cluster_pb2.Cluster(name=name, type=cluster_pb2.Cluster.STATIC)


def listener(name: str, port: int) -> Any:
    made = listener_pb2.Listener(name=name)
    made.address.socket_address.address = "0.0.0.0"
    made.address.socket_address.port_value = port
    return made


def assignment(name: str, port: int) -> Any:
    made = endpoint_pb2.ClusterLoadAssignment(cluster_name=name)
    member = made.endpoints.add().lb_endpoints.add()
    member.endpoint.address.socket_address.address = "127.0.0.1"
    member.endpoint.address.socket_address.port_value = port
    return made


def versioned(key: str, message: Any) -> dict[str, Any]:
    return {
        "version_info": "v7",
        key: as_envoy_dumps(message),
        "last_updated": "2026-01-01T00:00:00Z",
    }


DUMP = {
    "configs": [
        {
            "@type": ADMIN + "BootstrapConfigDump",
            "bootstrap": {"node": {"id": NODE, "cluster": "istio-proxy"}},
        },
        {
            "@type": ADMIN + "ClustersConfigDump",
            "static_clusters": [{"cluster": as_envoy_dumps(static_cluster("xds-grpc"))}],
            "dynamic_active_clusters": [
                versioned("cluster", eds_cluster("a")),
                versioned("cluster", static_cluster("b")),
                versioned("cluster", eds_cluster("c", service="c-endpoints")),
            ],
            "dynamic_warming_clusters": [versioned("cluster", eds_cluster("a", timeout=20))],
        },
        {
            "@type": ADMIN + "ListenersConfigDump",
            "dynamic_listeners": [
                {"name": "active", "active_state": versioned("listener", listener("active", 1))},
                {
                    "name": "updating",
                    "active_state": versioned("listener", listener("updating", 2)),
                    "warming_state": versioned("listener", listener("updating", 3)),
                },
                {"name": "going", "draining_state": versioned("listener", listener("going", 4))},
                {
                    "name": "rejected",
                    "active_state": versioned("listener", listener("rejected", 5)),
                    "error_state": {
                        "failed_configuration": as_envoy_dumps(listener("rejected", 6))
                    },
                },
            ],
        },
        {
            "@type": ADMIN + "RoutesConfigDump",
            "dynamic_route_configs": [
                versioned("route_config", route_pb2.RouteConfiguration(name="80"))
            ],
        },
        {
            "@type": ADMIN + "EndpointsConfigDump",
            "static_endpoint_configs": [
                {"endpoint_config": as_envoy_dumps(assignment("xds-grpc", 1))}
            ],
            "dynamic_endpoint_configs": [
                {"endpoint_config": as_envoy_dumps(assignment("a", 10))},
                {"endpoint_config": as_envoy_dumps(assignment("b", 11))},
                {"endpoint_config": as_envoy_dumps(assignment("c", 12))},
            ],
        },
    ]
}


@pytest.fixture(scope="module")
def types() -> MessageTypes:
    return MessageTypes()


def digest(type_url: str, message: Any, types: MessageTypes) -> str:
    return bytes_digest(type_url, to_any_bytes(message), types)


def test_what_counts_as_held(types: MessageTypes) -> None:
    held = held_resources(DUMP, types)
    assert held.digests[CDS] == {
        "a": digest(CDS, eds_cluster("a", timeout=20), types),  # the warming copy
        "b": digest(CDS, static_cluster("b"), types),
        "c": digest(CDS, eds_cluster("c", service="c-endpoints"), types),
    }
    assert held.digests[LDS] == {
        "active": digest(LDS, listener("active", 1), types),
        "updating": digest(LDS, listener("updating", 3), types),
        "rejected": digest(LDS, listener("rejected", 5), types),
    }
    assert held.digests[RDS] == {"80": digest(RDS, route_pb2.RouteConfiguration(name="80"), types)}
    # only EDS clusters' assignments, under their EDS service name
    assert held.digests[EDS] == {
        "a": digest(EDS, assignment("a", 10), types),
        "c-endpoints": digest(EDS, assignment("c", 12), types),
    }
    assert held.static == {CDS: 1, EDS: 1}
    assert held.problems == ()
    assert dumped_node_id(DUMP) == NODE


def test_an_unreadable_resource_is_held_and_named(types: MessageTypes) -> None:
    dump = {
        "configs": [
            {
                "@type": ADMIN + "ClustersConfigDump",
                "dynamic_active_clusters": [
                    {
                        "cluster": {
                            "@type": "type.googleapis.com/envoy.nothing.v3.Cluster",
                            "name": "x",
                        }
                    }
                ],
            }
        ]
    }
    held = held_resources(dump, types)
    assert held.digests[CDS]["x"].startswith(UNREADABLE)
    assert len(held.problems) == 1 and held.problems[0].startswith("x: unknown message type")
    assert held.digests[LDS] == {} and dumped_node_id(dump) is None


@pytest.mark.parametrize("document", [{}, {"configs": "no"}, [], {"configuration": []}])
def test_a_document_that_is_no_config_dump_is_refused(document: Any, types: MessageTypes) -> None:
    with pytest.raises(BadDump):
        held_resources(document, types)
