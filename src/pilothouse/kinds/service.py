"""Service: a service of the registry, and the plain Kubernetes kind it may come from.

Not served as Istio config: a Kubernetes Service in a manifest is skipped by
``validate``. In pushes, ``Service`` keys (``ServiceKey.config_key``) name the services
a registry update touched (a ServiceEntry's hosts, a Kubernetes Service and its
EndpointSlices); such a change concerns the scopes holding that service, and can move
endpoints.
"""

from __future__ import annotations

from pilothouse.config.schema import PlainKind
from pilothouse.kinds.kind import Audience, Kind

KIND = Kind(
    name="Service",
    plain=PlainKind("Service", ("v1",)),
    short_names=("svc",),
    audience=Audience.SCOPE_SERVICES,
    moves_endpoints=True,
    index="services",
)
