"""The traffic policy that applies to one cluster, merged the way Istio merges it.

A DestinationRule can set a policy in four places, and for the cluster of
service port ``P`` and subset ``S`` they combine in this order:

1. the rule's top-level ``traffic_policy``;
2. its ``port_level_settings`` entry for ``P``, if any.  Such an entry does not
   inherit: it replaces *all four* of ``load_balancer``, ``connection_pool``,
   ``outlier_detection`` and ``tls``, and a component it leaves unset falls back
   to the default, not to the top-level value (Istio's documented rule);
3. subset ``S``'s own ``traffic_policy``: each component it sets replaces the
   one from steps 1-2 whole (the granularity is the component, not the field);
4. that subset policy's ``port_level_settings`` entry for ``P``, which again
   replaces all four components.

``tunnel``, ``proxy_protocol`` and ``retry_budget`` follow the rule of step 3
(a subset value wins) and have no port-level form.  The result is a new
``TrafficPolicy`` without ``port_level_settings``; the inputs are not modified.
"""

from __future__ import annotations

from typing import Final

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2

# Components a port-level entry replaces wholesale.
PORT_LEVEL_COMPONENTS: Final = ("load_balancer", "connection_pool", "outlier_detection", "tls")
# Every component a subset policy can override.
SUBSET_COMPONENTS: Final = (*PORT_LEVEL_COMPONENTS, "tunnel", "proxy_protocol", "retry_budget")


def effective_policy(
    dr_spec: dr_pb2.DestinationRule | None, port: int, subset: str | None
) -> dr_pb2.TrafficPolicy:
    """The merged policy for the cluster of ``port`` (and ``subset``) under ``dr_spec``.

    ``subset`` ``None`` or ``""`` means the service's default cluster.  A subset
    name the rule does not define contributes nothing.  With no rule, or a rule
    without policies, the result is an empty ``TrafficPolicy``.
    """
    merged = dr_pb2.TrafficPolicy()
    if dr_spec is None:
        return merged
    if dr_spec.HasField("traffic_policy"):
        _override_components(merged, dr_spec.traffic_policy, SUBSET_COMPONENTS)
        _apply_port_level(merged, dr_spec.traffic_policy, port)
    if subset:
        for candidate in dr_spec.subsets:
            if candidate.name == subset:
                if candidate.HasField("traffic_policy"):
                    _override_components(merged, candidate.traffic_policy, SUBSET_COMPONENTS)
                    _apply_port_level(merged, candidate.traffic_policy, port)
                break
    return merged


def port_level_settings(
    policy: dr_pb2.TrafficPolicy, port: int
) -> dr_pb2.TrafficPolicy.PortTrafficPolicy | None:
    """The first ``port_level_settings`` entry whose port number is ``port``."""
    for entry in policy.port_level_settings:
        if entry.HasField("port") and entry.port.number == port:
            return entry
    return None


def _override_components(
    target: dr_pb2.TrafficPolicy, source: dr_pb2.TrafficPolicy, components: tuple[str, ...]
) -> None:
    for name in components:
        if source.HasField(name):
            getattr(target, name).CopyFrom(getattr(source, name))


def _apply_port_level(
    target: dr_pb2.TrafficPolicy, source: dr_pb2.TrafficPolicy, port: int
) -> None:
    entry = port_level_settings(source, port)
    if entry is None:
        return
    for name in PORT_LEVEL_COMPONENTS:
        target.ClearField(name)
        if entry.HasField(name):
            getattr(target, name).CopyFrom(getattr(entry, name))
