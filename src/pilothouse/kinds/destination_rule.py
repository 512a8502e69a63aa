"""DestinationRule: traffic policy and subsets for the services of a host.

A scope picks one rule per service (exportTo, the proxy's namespace first, label
selectors); a change concerns the scopes that picked it. Clusters read it (policies,
subsets), endpoints read it (subsets are ClusterLoadAssignments of their own), routes
read it for consistent-hash load balancers. Listeners never read it: istiod's LDS does
(AUTO_PASSTHROUGH gateway servers get a filter chain per subset), but pilothouse leaves
such servers out; LDS must leave :attr:`Kind.unread_by` when they are built. Whether a
change leaves a scope's routes or endpoints alone is compared per scope beyond this
row (:data:`pilothouse.push.affected_types.COMPARED`).
"""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2
from pilothouse.config.validation import validate_destination_rule
from pilothouse.kinds.groups import networking
from pilothouse.kinds.kind import Audience, Kind
from pilothouse.protocol.type_urls import LDS

KIND = Kind(
    name="DestinationRule",
    schema=networking(
        "DestinationRule",
        destination_rule_pb2.DestinationRule,
        "destinationrules",
        validate_destination_rule,
    ),
    short_names=("dr",),
    audience=Audience.SELECTED_RULES,
    unread_by=frozenset({LDS}),
    moves_endpoints=True,
    index="destination_rules",
)
