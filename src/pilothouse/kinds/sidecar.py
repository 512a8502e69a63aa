"""Sidecar: what the proxies of a namespace (or of a selector in it) see and listen on.

A change concerns every proxy of its namespace, and every proxy when it sits in the
mesh's root namespace (the mesh-wide default). Clusters, listeners and routes all read
it (it narrows the services a scope holds).
"""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3 import sidecar_pb2
from pilothouse.config.validation import validate_sidecar
from pilothouse.kinds.groups import networking
from pilothouse.kinds.kind import Audience, Kind

KIND = Kind(
    name="Sidecar",
    schema=networking("Sidecar", sidecar_pb2.Sidecar, "sidecars", validate_sidecar),
    audience=Audience.NAMESPACE_OR_ROOT,
    index="sidecars",
)
