"""VirtualService: routes for hosts, bound to sidecars (``mesh``) or gateways.

A change concerns the scopes it is exported to whose Sidecar egress admits one of its
hosts. Routes read it, and a gateway's listeners (TCP and TLS routes). Clusters never
do: istiod pushes CDS on VirtualService changes where its Sidecar scoping or its
gateway cluster filtering reads them, neither of which pilothouse's scopes do. A
sidecar's listeners read none either (compared per scope:
:data:`pilothouse.push.affected_types.COMPARED`).
"""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2
from pilothouse.config.validation import validate_virtual_service
from pilothouse.kinds.groups import networking
from pilothouse.kinds.kind import Audience, Kind
from pilothouse.protocol.type_urls import CDS

KIND = Kind(
    name="VirtualService",
    schema=networking(
        "VirtualService",
        virtual_service_pb2.VirtualService,
        "virtualservices",
        validate_virtual_service,
    ),
    short_names=("vs",),
    audience=Audience.EXPORTED_ROUTES,
    unread_by=frozenset({CDS}),
    index="virtual_services",
)
