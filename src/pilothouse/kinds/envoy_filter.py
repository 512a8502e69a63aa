"""EnvoyFilter: patches to the Envoy config generated for the proxies it selects.

Only ``networking.istio.io/v1alpha3`` (Istio serves no other version of it). One in the
mesh's root namespace applies to every proxy, one elsewhere to its namespace's proxies,
narrowed by ``workloadSelector`` or ``targetRefs``: a change concerns the scopes of its
namespace, or every scope from the root (istiod's rule for sidecars; pilothouse applies
it to gateways too). Its patches may change listeners, routes and clusters, so no type
is left out for it; it moves no endpoint (EDS follows the clusters CDS changed).
"""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3 import envoy_filter_pb2
from pilothouse.config.validation import validate_envoy_filter
from pilothouse.kinds.groups import networking
from pilothouse.kinds.kind import Audience, Kind

KIND = Kind(
    name="EnvoyFilter",
    schema=networking(
        "EnvoyFilter",
        envoy_filter_pb2.EnvoyFilter,
        "envoyfilters",
        validate_envoy_filter,
        versions=("v1alpha3",),
    ),
    audience=Audience.NAMESPACE_OR_ROOT,
    index="envoy_filters",
)

GATEWAY_NAME_LABEL = "gateway.networking.k8s.io/gateway-name"
"""The label of a Kubernetes Gateway's proxies that ``targetRefs`` are matched against."""


def target_gateways(spec: envoy_filter_pb2.EnvoyFilter) -> frozenset[str] | None:
    """The names of the Kubernetes Gateways ``spec``'s ``targetRefs`` name (None: it has
    no targetRefs, its workloadSelector decides)."""
    if not spec.target_refs:
        return None
    return frozenset(r.name for r in spec.target_refs if r.kind == "Gateway")
