"""What a simulated proxy subscribes to, given what it holds: Envoy's order and grpcio's.

A ``RequestPlan`` is the follow-up policy (``xds/protocol/client_policy``) the
client engine runs for a simulated proxy: it maps the proxy's per-type watches
to the subscription it wants for every type it should be watching now, and the
engine sends the difference from what it last asked for.

Envoy (sidecar and router), reference §5:

1. CDS wildcard (the legacy empty list) from the start;
2. EDS for the EDS names of the clusters held, once CDS was accepted;
3. LDS wildcard once the clusters have warmed: EDS accepted once, or no EDS
   cluster at all;
4. RDS for the route names of the listeners held, once LDS was accepted.

Envoy sends these follow-ups before it ACKs the response that caused them.

Proxyless gRPC, reference §6: LDS for its targets, then RDS for the listeners'
route names, CDS for the clusters the routes use, EDS for the clusters' EDS
names, each ACKed before the next type is requested.

Once a type has been asked for it stays in the plan, with an empty
subscription if nothing refers to it any more.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from pilothouse.xds.protocol.client_policy import WILDCARD_SUBSCRIPTION, FollowUpPolicy
from pilothouse.xds.protocol.client_watch import ClientWatch
from pilothouse.xds.protocol.subscriptions import Subscription
from pilothouse.xds.protocol.type_urls import CDS, EDS, LDS, RDS


class RequestPlan(FollowUpPolicy, Protocol):
    """A follow-up policy that also says which types' content it reads references from."""

    @property
    def decoded_types(self) -> frozenset[str]:
        """Types whose content must be decoded to find the next subscriptions."""
        ...


def _follow(
    want: dict[str, Subscription],
    states: Mapping[str, ClientWatch],
    parent: str,
    child: str,
) -> None:
    """Subscribe ``child`` to what the held ``parent`` resources refer to, once accepted."""
    parent_state = states[parent]
    if not parent_state.acks:
        return
    names = parent_state.refs()
    if names or states[child].started:
        want[child] = Subscription(names)


@dataclass(frozen=True)
class EnvoyPlan:
    """Envoy 1.40: wildcard CDS → EDS → (clusters warm) wildcard LDS → RDS."""

    order: tuple[str, ...] = (CDS, EDS, LDS, RDS)
    decoded_types: frozenset[str] = frozenset({CDS, LDS})
    ack_first: bool = False

    def desired(self, states: Mapping[str, ClientWatch]) -> dict[str, Subscription]:
        want = {CDS: WILDCARD_SUBSCRIPTION}
        _follow(want, states, CDS, EDS)
        clusters = states[CDS]
        if clusters.acks:
            warm = not clusters.refs() or states[EDS].acks > 0
            if warm or states[LDS].started:
                want[LDS] = WILDCARD_SUBSCRIPTION
        _follow(want, states, LDS, RDS)
        return want


@dataclass(frozen=True)
class GrpcPlan:
    """grpcio's proxyless client: LDS (targets) → RDS → CDS → EDS, all by name."""

    targets: frozenset[str]
    order: tuple[str, ...] = (LDS, RDS, CDS, EDS)
    decoded_types: frozenset[str] = frozenset({LDS, RDS, CDS})
    ack_first: bool = True

    def desired(self, states: Mapping[str, ClientWatch]) -> dict[str, Subscription]:
        want = {LDS: Subscription(self.targets)}
        _follow(want, states, LDS, RDS)
        _follow(want, states, RDS, CDS)
        _follow(want, states, CDS, EDS)
        return want
