"""EnvoyFilter: patches to the Envoy config generated for the proxies it selects.

Only ``networking.istio.io/v1alpha3`` (Istio serves no other version of it). One in the
mesh's root namespace applies to every proxy, one elsewhere to its namespace's proxies,
narrowed by ``workloadSelector`` or ``targetRefs``: a change concerns the proxies its old
or new version selects (asked of the push context's ``envoy_filters`` index), and only
the types the patches of either version change (:func:`patched_types`; listeners,
routes, clusters). One that reached a push context before the request naming it did
cannot be compared: it concerns every proxy of its namespace, or every proxy from the
root, every type (istiod's rule for sidecars; pilothouse applies it to gateways too).
It moves no endpoint (EDS follows the clusters CDS changed).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from pilothouse.api.istio.networking.v1alpha3 import envoy_filter_pb2
from pilothouse.config.validation import validate_envoy_filter
from pilothouse.kinds.groups import networking
from pilothouse.kinds.kind import Audience, Kind
from pilothouse.protocol.type_urls import CDS, LDS, RDS

GATEWAY_NAME_LABEL = "gateway.networking.k8s.io/gateway-name"
"""The label of a Kubernetes Gateway's proxies that ``targetRefs`` are matched against."""


def target_gateways(spec: envoy_filter_pb2.EnvoyFilter) -> frozenset[str] | None:
    """The names of the Kubernetes Gateways ``spec``'s ``targetRefs`` name (None: it has
    no targetRefs, its workloadSelector decides)."""
    if not spec.target_refs:
        return None
    return frozenset(r.name for r in spec.target_refs if r.kind == "Gateway")


_EF = envoy_filter_pb2.EnvoyFilter
PATCHED_TYPES: Final[Mapping[int, str]] = MappingProxyType(
    {
        _EF.LISTENER: LDS,
        _EF.LISTENER_FILTER: LDS,
        _EF.FILTER_CHAIN: LDS,
        _EF.NETWORK_FILTER: LDS,
        _EF.HTTP_FILTER: LDS,
        _EF.ROUTE_CONFIGURATION: RDS,
        _EF.VIRTUAL_HOST: RDS,
        _EF.HTTP_ROUTE: RDS,
        _EF.CLUSTER: CDS,
    }
)
"""applyTo → the xDS type whose resources its patches change (BOOTSTRAP changes none that
pilothouse serves; EXTENSION_CONFIG ADDs are extension configs served over ECDS, a type
every change of a selected proxy regenerates)."""


def patched_types(spec: envoy_filter_pb2.EnvoyFilter) -> frozenset[str]:
    """The xDS types ``spec``'s patches can change: a route-class patch whose context
    takes in a sidecar's inbound side changes LDS too (inbound routes are inline)."""
    found = set()
    for patch in spec.config_patches:
        type_url = PATCHED_TYPES.get(patch.apply_to)
        if type_url is None:
            continue
        found.add(type_url)
        inbound = (_EF.ANY, _EF.SIDECAR_INBOUND)
        if type_url == RDS and (not patch.HasField("match") or patch.match.context in inbound):
            found.add(LDS)
    return frozenset(found)


KIND = Kind(
    name="EnvoyFilter",
    schema=networking(
        "EnvoyFilter",
        envoy_filter_pb2.EnvoyFilter,
        "envoyfilters",
        validate_envoy_filter,
        versions=("v1alpha3",),
    ),
    short_names=("ef",),
    audience=Audience.SELECTED_WORKLOADS,
    index="envoy_filters",
    changed_types=patched_types,
    uncompared_audience=Audience.NAMESPACE_OR_ROOT,
)
