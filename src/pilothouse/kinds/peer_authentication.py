"""PeerAuthentication: the mutual TLS mode of workloads (mesh, namespace, selector, port).

A change concerns the proxies of its namespace and, from the root namespace, every
proxy (their own inbound mode), and the proxies calling services of its namespace (the
mode auto-mTLS infers for them). Clusters read it (auto-mTLS), listeners read it
(inbound TLS), endpoints read it (a workload's DISABLE takes its endpoints out of
auto-mTLS); routes never do.
"""

from __future__ import annotations

from pilothouse.api.istio.security.v1beta1 import peer_authentication_pb2
from pilothouse.config.validation import validate_peer_authentication
from pilothouse.kinds.groups import security
from pilothouse.kinds.kind import Audience, Kind
from pilothouse.protocol.type_urls import RDS

KIND = Kind(
    name="PeerAuthentication",
    schema=security(
        "PeerAuthentication",
        peer_authentication_pb2.PeerAuthentication,
        "peerauthentications",
        validate_peer_authentication,
    ),
    short_names=("pa",),
    audience=Audience.NAMESPACE_ROOT_OR_SERVICES,
    unread_by=frozenset({RDS}),
    moves_endpoints=True,
    index="peer_authentications",
)
