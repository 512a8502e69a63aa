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

A plan may be limited to some of the types (``--types cds,eds``): the others
are never asked for, so convergence waits only for these.  A type that is
reached through another needs it (Envoy: EDS needs CDS, RDS needs LDS;
grpcio: each type needs the one before it).  An Envoy that asks for no EDS
treats its clusters as warm at once, and one that asks for no CDS asks for
LDS from the start.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

from pilothouse.protocol.client_policy import WILDCARD_SUBSCRIPTION, FollowUpPolicy
from pilothouse.protocol.client_watch import ClientWatch
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS, short_name

ALL_TYPES: Final = frozenset({CDS, EDS, LDS, RDS})
"""Every type a simulated proxy can ask for (the default)."""
_BY_NAME: Final = {short_name(type_url).lower(): type_url for type_url in ALL_TYPES}
ENVOY_NEEDS: Final = {EDS: CDS, RDS: LDS}
GRPC_NEEDS: Final = {RDS: LDS, CDS: RDS, EDS: CDS}


def parse_types(text: str) -> frozenset[str]:
    """``cds,eds`` (case does not matter) → their type URLs; ``ValueError`` if unknown."""
    names = [part.strip().lower() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError("name at least one type: cds, eds, lds, rds")
    unknown = [name for name in names if name not in _BY_NAME]
    if unknown:
        raise ValueError(f"unknown type {unknown[0]!r}: use cds, eds, lds, rds")
    return frozenset(_BY_NAME[name] for name in names)


def check_types(types: Iterable[str], needs: Mapping[str, str]) -> frozenset[str]:
    """``types`` if every type that is reached through another comes with it."""
    chosen = frozenset(types)
    if not chosen:
        raise ValueError("a proxy must ask for at least one type")
    for type_url in sorted(chosen):
        if type_url not in ALL_TYPES:
            raise ValueError(f"a simulated proxy cannot ask for {type_url}")
        parent = needs.get(type_url)
        if parent is not None and parent not in chosen:
            raise ValueError(
                f"{short_name(type_url)} needs {short_name(parent)}: its names come from there"
            )
    return chosen


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
    types: frozenset[str] = field(default=ALL_TYPES)
    """The types it asks for (checked: EDS needs CDS, RDS needs LDS)."""

    def __post_init__(self) -> None:
        types = check_types(self.types, ENVOY_NEEDS)
        object.__setattr__(self, "order", tuple(t for t in self.order if t in types))
        object.__setattr__(self, "decoded_types", self.decoded_types & types)

    def desired(self, states: Mapping[str, ClientWatch]) -> dict[str, Subscription]:
        types = self.types
        want: dict[str, Subscription] = {}
        if CDS in types:
            want[CDS] = WILDCARD_SUBSCRIPTION
            if EDS in types:
                _follow(want, states, CDS, EDS)
        if LDS in types:
            if CDS not in types:
                want[LDS] = WILDCARD_SUBSCRIPTION
            elif (clusters := states[CDS]).acks:
                warm = EDS not in types or not clusters.refs() or states[EDS].acks > 0
                if warm or states[LDS].started:
                    want[LDS] = WILDCARD_SUBSCRIPTION
            if RDS in types:
                _follow(want, states, LDS, RDS)
        return want


@dataclass(frozen=True)
class GrpcPlan:
    """grpcio's proxyless client: LDS (targets) → RDS → CDS → EDS, all by name."""

    targets: frozenset[str]
    order: tuple[str, ...] = (LDS, RDS, CDS, EDS)
    decoded_types: frozenset[str] = frozenset({LDS, RDS, CDS})
    ack_first: bool = True
    types: frozenset[str] = field(default=ALL_TYPES)
    """The types it asks for: LDS, then each next one only with the one before."""

    def __post_init__(self) -> None:
        types = check_types(self.types, GRPC_NEEDS)
        if LDS not in types:
            raise ValueError("a proxyless gRPC client starts from LDS: include lds")
        object.__setattr__(self, "order", tuple(t for t in self.order if t in types))
        object.__setattr__(self, "decoded_types", self.decoded_types & types)

    def desired(self, states: Mapping[str, ClientWatch]) -> dict[str, Subscription]:
        want = {LDS: Subscription(self.targets)}
        for parent, child in ((LDS, RDS), (RDS, CDS), (CDS, EDS)):
            if child in self.types:
                _follow(want, states, parent, child)
        return want
