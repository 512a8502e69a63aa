"""Gateway: the servers (ports, hosts, TLS) of the gateway proxies it selects.

A change concerns the scopes of the gateway proxies it selects. Listeners and routes
read it; clusters never do (istiod skips CDS for it too).
"""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3 import gateway_pb2
from pilothouse.config.validation import validate_gateway
from pilothouse.kinds.groups import networking
from pilothouse.kinds.kind import Audience, Kind
from pilothouse.protocol.type_urls import CDS

KIND = Kind(
    name="Gateway",
    schema=networking("Gateway", gateway_pb2.Gateway, "gateways", validate_gateway),
    short_names=("gw",),
    audience=Audience.SELECTED_GATEWAYS,
    unread_by=frozenset({CDS}),
    index="gateways",
)
