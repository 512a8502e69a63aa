"""Who a simulated proxy is: its flavour, Istio node id, cluster and metadata, as a ``Node``.

Node ids follow Istio's ``type~ip~pod.ns~ns.svc.cluster.local``.  The flavour
says how the proxy behaves on the wire: a sidecar and a router are Envoys
(wildcard CDS and LDS, differing only in node type), a ``GRPC`` proxy is
grpcio's proxyless client (everything named, LDS first, SotW only in reality).
Only the first request on a stream carries the node
(``set_node_on_first_message_only``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from envoy.config.core.v3 import base_pb2  # type: ignore[import-untyped]
from envoy.type.v3 import semantic_version_pb2  # type: ignore[import-untyped]

ENVOY_VERSION: Final = (1, 40, 0)
GRPC_USER_AGENT: Final = "gRPC C-core linux Python"
GRPC_VERSION: Final = "1.85.1"
GRPC_CLIENT_FEATURES: Final = (
    "envoy.lb.does_not_support_overprovisioning",
    "xds.config.resource-in-sotw",
)
ISTIO_VERSION: Final = "1.28.0"


class ProxyFlavour(enum.Enum):
    """How the simulated proxy talks xDS."""

    SIDECAR = "sidecar"
    ROUTER = "router"
    GRPC = "grpc"

    @property
    def node_type(self) -> str:
        """The first part of the node id (proxyless gRPC registers as a sidecar)."""
        return "router" if self is ProxyFlavour.ROUTER else "sidecar"

    @property
    def is_envoy(self) -> bool:
        return self is not ProxyFlavour.GRPC


def _no_metadata() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class ProxyNode:
    """The node a simulated proxy presents; ``targets`` are the gRPC flavour's LDS names."""

    node_id: str
    flavour: ProxyFlavour = ProxyFlavour.SIDECAR
    cluster: str = ""
    metadata: Mapping[str, Any] = field(default_factory=_no_metadata)
    targets: tuple[str, ...] = ()

    @property
    def namespace(self) -> str:
        """``NAMESPACE`` from the metadata, else the first label of the id's domain."""
        declared = self.metadata.get("NAMESPACE")
        if isinstance(declared, str) and declared:
            return declared
        parts = self.node_id.split("~")
        return parts[3].split(".", 1)[0] if len(parts) == 4 else ""


def istio_node_id(node_type: str, ip: str, pod: str, namespace: str) -> str:
    """``type~ip~pod.ns~ns.svc.cluster.local``."""
    return f"{node_type}~{ip}~{pod}.{namespace}~{namespace}.svc.cluster.local"


def mesh_identity(
    flavour: ProxyFlavour,
    ip: str,
    pod: str,
    namespace: str,
    *,
    app: str = "",
    targets: tuple[str, ...] = (),
    extra_metadata: Mapping[str, Any] | None = None,
) -> ProxyNode:
    """An identity with the metadata istio-agent would send for a pod."""
    app = app or pod.rsplit("-", 1)[0]
    metadata: dict[str, Any] = {
        "NAMESPACE": namespace,
        "CLUSTER_ID": "Kubernetes",
        "ISTIO_VERSION": ISTIO_VERSION,
        "INSTANCE_IPS": ip,
        "NAME": pod,
        "LABELS": {"app": app},
        "WORKLOAD_NAME": app,
    }
    if flavour is ProxyFlavour.GRPC:
        metadata["GENERATOR"] = "grpc"
    if extra_metadata:
        metadata.update(extra_metadata)
    return ProxyNode(
        node_id=istio_node_id(flavour.node_type, ip, pod, namespace),
        flavour=flavour,
        cluster=f"{app}.{namespace}",
        metadata=MappingProxyType(metadata),
        targets=targets,
    )


def node_message(identity: ProxyNode) -> Any:
    """The ``envoy.config.core.v3.Node`` for the identity (metadata becomes a ``Struct``)."""
    node = base_pb2.Node(id=identity.node_id, cluster=identity.cluster)
    if identity.metadata:
        node.metadata.update(_plain(identity.metadata))
    if identity.flavour.is_envoy:
        node.user_agent_name = "envoy"
        major, minor, patch = ENVOY_VERSION
        node.user_agent_build_version.version.CopyFrom(
            semantic_version_pb2.SemanticVersion(
                major_number=major, minor_number=minor, patch=patch
            )
        )
    else:
        node.user_agent_name = GRPC_USER_AGENT
        node.user_agent_version = GRPC_VERSION
        node.client_features.extend(GRPC_CLIENT_FEATURES)
    return node


def _plain(value: Any) -> Any:
    """Mappings and tuples turned into dicts and lists, as ``Struct.update`` wants."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value
