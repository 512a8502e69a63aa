"""The part of a ClusterLoadAssignment that Envoy's ``/config_dump`` can be compared on.

Envoy does not dump the ClusterLoadAssignment it received: ``/config_dump?include_eds``
rebuilds one from the cluster's hosts as they are now (seen with Envoy 1.40). So what
it shows differs from what was sent in ways that say nothing about being in sync:

- ``health_status`` is the host's *current* coarse health: configured ``UNKNOWN`` and
  ``HEALTHY`` both show ``HEALTHY``, and active health checks and outlier detection
  change it. Not compared.
- ``endpoint.health_check_config`` is filled in from the host (``{}`` when unset). Not
  compared.
- Defaults are written out: an endpoint's ``load_balancing_weight`` 1, a locality's 0,
  ``policy.overprovisioning_factor`` 140, an empty ``locality``. Compared with those
  defaults applied to both sides.
- Endpoints are grouped by (priority, locality) in the order Envoy keeps its localities
  (its own locality first). Compared as sets: localities, and endpoints within one,
  sorted.
- ``cluster_name`` is the cluster's name, where EDS may use its ``service_name``; the
  name is the key the assignment is compared under, so it is left out.
- Only the policy's overprovisioning factor is dumped; drop overloads and the other
  policy fields are not compared.

Compared: per priority and locality, the locality's weight, and each endpoint's
address (and additional addresses), hostname, weight and metadata.
"""

from __future__ import annotations

from typing import Any, Final

from envoy.config.endpoint.v3 import (  # type: ignore[import-untyped]
    endpoint_components_pb2,
    endpoint_pb2,
)
from google.protobuf.message import Message

DEFAULT_OVERPROVISIONING: Final = 140
"""Envoy's ``overprovisioning_factor`` when none is given."""


def comparable_assignment(received: Message) -> Message:
    """A ClusterLoadAssignment holding only what can be compared, defaults applied."""
    source: Any = received
    groups: dict[tuple[int, bytes], Any] = {}
    for group in source.endpoints:
        locality = _locality(group)
        key = (group.priority, locality.SerializeToString(deterministic=True))
        target = groups.get(key)
        if target is None:
            target = endpoint_components_pb2.LocalityLbEndpoints(priority=group.priority)
            target.locality.CopyFrom(locality)
            groups[key] = target
        if group.load_balancing_weight.value:
            target.load_balancing_weight.value = group.load_balancing_weight.value
        target.lb_endpoints.extend(_endpoint(member) for member in group.lb_endpoints)
    result = endpoint_pb2.ClusterLoadAssignment()
    for _key, group in sorted(groups.items(), key=lambda item: item[0]):
        members = sorted(group.lb_endpoints, key=lambda m: m.SerializeToString(deterministic=True))
        del group.lb_endpoints[:]
        group.lb_endpoints.extend(members)
        result.endpoints.append(group)
    policy = source.policy
    factor = DEFAULT_OVERPROVISIONING
    if policy.HasField("overprovisioning_factor"):
        factor = policy.overprovisioning_factor.value
    result.policy.overprovisioning_factor.value = factor
    message: Message = result
    return message


def _locality(group: Any) -> Any:
    locality = group.locality
    return type(locality)(region=locality.region, zone=locality.zone, sub_zone=locality.sub_zone)


def _endpoint(member: Any) -> Any:
    kept = endpoint_components_pb2.LbEndpoint()
    endpoint = member.endpoint
    if endpoint.HasField("address"):
        kept.endpoint.address.CopyFrom(endpoint.address)
    if endpoint.hostname:
        kept.endpoint.hostname = endpoint.hostname
    kept.endpoint.additional_addresses.extend(endpoint.additional_addresses)
    kept.load_balancing_weight.value = member.load_balancing_weight.value or 1
    if member.HasField("metadata"):
        kept.metadata.CopyFrom(member.metadata)
    return kept
