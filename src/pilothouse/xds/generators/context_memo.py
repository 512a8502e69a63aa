"""What the generators derive from one PushContext, as typed fields.

One :class:`ContextMemo` hangs off each :class:`~pilothouse.push.context.PushContext`
(:func:`context_memo`) and goes when the context goes. Each field is a map from what
the value is derived from to the value; a value that reads the endpoint index (which
changes without a new context) keeps the versions it was read at and checks them.
What is derived from one proxy scope lives in the scope's memo instead
(:mod:`.scope_memo`), so that it moves with the scope into the next context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pilothouse.config.model import Config
from pilothouse.push.authorization import WorkloadAuthorization
from pilothouse.push.cache import Resource
from pilothouse.push.context import PushContext
from pilothouse.push.peer_authentication import MtlsPolicy
from pilothouse.push.scope import ScopeKey
from pilothouse.registry.model import Labels
from pilothouse.xds.builders.access_control import AccessFilters
from pilothouse.xds.builders.cluster import RestPolling

if TYPE_CHECKING:
    from pilothouse.xds.generators.inbound import InboundPort, LabelledEndpoints

InboundTarget = tuple[int, str, str, int]
"""An inbound cluster's port, protocol, and the application's host and port."""


@dataclass(slots=True)
class ContextMemo:
    """Everything generators remember about one PushContext."""

    scope_clusters: dict[tuple[ScopeKey, RestPolling | None, bool], dict[str, Resource]] = field(
        default_factory=dict
    )
    """A scope's outbound clusters, by scope, transport and whether the proxy proved its
    identity (auto-mTLS)."""
    inbound_clusters: dict[InboundTarget, Resource] = field(default_factory=dict)
    inbound_ports: dict[
        tuple[ScopeKey, tuple[str, ...], Labels], tuple[int, tuple[InboundPort, ...]]
    ] = field(default_factory=dict)
    """A workload's inbound ports, by scope, IP addresses and labels, with the endpoint
    index's revision they were read at."""
    access_filters: dict[WorkloadAuthorization, AccessFilters] = field(default_factory=dict)
    """The listener filters of a workload's AuthorizationPolicies and RequestAuthentications."""
    mtls_policies: dict[tuple[str, Labels], MtlsPolicy] = field(default_factory=dict)
    """The PeerAuthentication policy of a workload, by namespace and labels."""
    labelled_endpoints: dict[str, LabelledEndpoints] = field(default_factory=dict)
    """The labelled endpoints of a namespace's services, by address."""
    grpc_listeners: dict[tuple[ScopeKey, str, bool, Labels], Resource | None] = field(
        default_factory=dict
    )
    """gRPC listeners by scope, name, inline routes and the proxy's labels."""
    grpc_routes: dict[tuple[ScopeKey, str, Labels], Resource | None] = field(default_factory=dict)
    hash_policy_inputs: dict[Config, bytes | None] = field(default_factory=dict)
    """``rule_reads.hash_policy_inputs`` of each DestinationRule read (scope_inputs.py)."""


def context_memo(context: PushContext) -> ContextMemo:
    """The context's memo (made on first use)."""
    return context.derived(ContextMemo)
