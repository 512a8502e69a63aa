"""Pure builders: frozen inputs in, Envoy protobuf messages (and their encodings) out.

Nothing here reads a registry, a push context or the clock; the generators
under ``xds/generators`` gather the inputs and cache the encoded results.
"""

from pilothouse.xds.builders.cluster import (
    ClusterInputs,
    Discovery,
    build_blackhole_cluster,
    build_cluster,
    build_passthrough_cluster,
)
from pilothouse.xds.builders.encode import content_hash, to_any_bytes
from pilothouse.xds.builders.endpoint import (
    LbEndpointInput,
    build_dns_load_assignment,
    build_load_assignment,
)
from pilothouse.xds.builders.load_balancer import hash_policy
from pilothouse.xds.builders.names import (
    BLACKHOLE_CLUSTER,
    PASSTHROUGH_CLUSTER,
    ClusterName,
    inbound_cluster_name,
    outbound_cluster_name,
    parse_cluster_name,
)
from pilothouse.xds.builders.traffic_policy import effective_policy

__all__ = [
    "BLACKHOLE_CLUSTER",
    "PASSTHROUGH_CLUSTER",
    "ClusterInputs",
    "ClusterName",
    "Discovery",
    "LbEndpointInput",
    "build_blackhole_cluster",
    "build_cluster",
    "build_dns_load_assignment",
    "build_load_assignment",
    "build_passthrough_cluster",
    "content_hash",
    "effective_policy",
    "hash_policy",
    "inbound_cluster_name",
    "outbound_cluster_name",
    "parse_cluster_name",
    "to_any_bytes",
]
