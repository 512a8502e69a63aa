"""EnvoyFilter patches applied to what a generator built, cached by their inputs.

The one hook the LDS, RDS and CDS generators call after generating: :func:`patched`
takes the resources a generator built for a proxy and the pass's context (GATEWAY for a
router; SIDECAR_OUTBOUND or SIDECAR_INBOUND for a sidecar's two sets) and returns them
with the patches of the EnvoyFilters that apply to the proxy
(:meth:`~pilothouse.push.selections.ProxySelections.patches`) of that type's
applyTos. A proxy with none gets the very mapping it gave, at the cost of one lookup.

Otherwise the result is kept in the resource cache under :class:`PatchedInputs`: the
generated resources (their bytes), the patches (which name their EnvoyFilters'
revisions, so an edit evicts the entry) and the context. Proxies that get the same
resources and the same patches share one patched result; nothing here is a key written
by hand. Each patched resource is decoded from its ``Any`` bytes, patched
(:mod:`~pilothouse.xds.builders.envoy_patch_listener`, ``…_route``, ``…_cluster``) and
encoded again; the patches that changed something are kept beside the result
(:attr:`PatchedSet.applied`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]
from envoy.config.route.v3 import route_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.config.model import ConfigKey
from pilothouse.kinds.envoy_filter import PATCHED_TYPES
from pilothouse.protocol.type_urls import CDS, LDS, RDS
from pilothouse.push.cache import Resource
from pilothouse.push.envoy_filters import ProxyPatches
from pilothouse.xds.builders.encode import content_hash, to_any_bytes
from pilothouse.xds.builders.envoy_patch_cluster import patch_clusters
from pilothouse.xds.builders.envoy_patch_listener import patch_listeners
from pilothouse.xds.builders.envoy_patch_match import Applied
from pilothouse.xds.builders.envoy_patch_route import patch_route_configuration
from pilothouse.xds.generators.base import GenerationInput, Resources

GATEWAY: Final = EnvoyFilter.GATEWAY
SIDECAR_INBOUND: Final = EnvoyFilter.SIDECAR_INBOUND
SIDECAR_OUTBOUND: Final = EnvoyFilter.SIDECAR_OUTBOUND

APPLY_TO: Final[Mapping[str, frozenset[int]]] = {
    type_url: frozenset(a for a, t in PATCHED_TYPES.items() if t == type_url)
    for type_url in (LDS, RDS, CDS)
}
"""Type URL → the applyTos whose patches change its resources."""

_MESSAGES: Final[Mapping[str, Any]] = {
    LDS: listener_pb2.Listener,
    RDS: route_pb2.RouteConfiguration,
    CDS: cluster_pb2.Cluster,
}


@dataclass(frozen=True, slots=True)
class PatchedInputs:
    """What a patched set of resources is made from: the type, the generated resources,
    the patches, the pass's context and (for routes) the proxy's gateways."""

    type_url: str
    resources: tuple[Resource, ...]
    patches: ProxyPatches
    context: int
    gateways: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PatchedSet:
    """Patched resources by name, and the (EnvoyFilter, patch position) pairs applied."""

    resources: Mapping[str, Resource]
    applied: frozenset[tuple[ConfigKey, int]]


def proxy_patches(given: GenerationInput, type_url: str, context: int) -> ProxyPatches:
    """The patches of the EnvoyFilters that apply to the proxy, of ``type_url``'s
    applyTos (a sidecar's inbound listeners also take the route-class ones: their routes
    are inline, as istiod patches them)."""
    every = given.context.selections.patches(given.proxy, given.cache)
    if not every:  # the common case: no EnvoyFilter applies, nothing to sort out
        return every
    wanted = APPLY_TO[type_url]
    if type_url == LDS and context == SIDECAR_INBOUND:
        wanted = wanted | APPLY_TO[RDS]
    return every.of(wanted)


def patched(given: GenerationInput, type_url: str, resources: Resources, context: int) -> Resources:
    """``resources`` of ``type_url`` with the proxy's patches of ``context`` applied."""
    patches = proxy_patches(given, type_url, context)
    if not patches:
        return resources
    gateways: tuple[str, ...] = ()
    if type_url == RDS:
        gateways = tuple(sorted(f"{g.namespace}/{g.name}" for g in given.scope.gateways))
    inputs = PatchedInputs(type_url, tuple(resources.values()), patches, context, gateways)
    result = given.cache.value(inputs, lambda: patch_resources(inputs))
    given.context.envoy_filters.outcomes.record(
        ((r.key, r.position) for r in patches.rules), result.applied
    )
    return result.resources


def patch_resources(inputs: PatchedInputs) -> PatchedSet:
    """Decode, patch and encode again (resources no patch changed keep their bytes)."""
    kind = _MESSAGES[inputs.type_url]
    messages = []
    for resource in inputs.resources:
        message = kind()
        any_pb2.Any.FromString(resource.body).Unpack(message)
        messages.append(message)
    applied: Applied = set()
    rules = inputs.patches.rules
    if inputs.type_url == LDS:
        messages = patch_listeners(messages, rules, inputs.context, applied)
    elif inputs.type_url == CDS:
        messages = patch_clusters(messages, rules, inputs.context, applied)
    else:
        for message in messages:
            patch_route_configuration(message, rules, inputs.context, inputs.gateways, applied)
    held = {r.name: r for r in inputs.resources}
    out: dict[str, Resource] = {}
    for message in messages:
        body = to_any_bytes(message)
        known = held.get(message.name)
        out[message.name] = (
            known
            if known is not None and known.body == body
            else Resource(message.name, content_hash(body), body)
        )
    return PatchedSet(out, frozenset(applied))
