"""ServiceEntry: services (and their endpoints) declared in config.

The registry turns it into services and endpoints, so its changes reach pushes as
registry updates (full: reason ``service``). It concerns the proxies whose scope holds a
service it declares. Every type may read its services; a change can move endpoints.
"""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3 import service_entry_pb2
from pilothouse.config.validation import validate_service_entry
from pilothouse.kinds.groups import networking
from pilothouse.kinds.kind import Audience, Kind

KIND = Kind(
    name="ServiceEntry",
    schema=networking(
        "ServiceEntry", service_entry_pb2.ServiceEntry, "serviceentries", validate_service_entry
    ),
    short_names=("se",),
    audience=Audience.SERVICE_SOURCES,
    moves_endpoints=True,
    in_registry=True,
    index="services",
)
