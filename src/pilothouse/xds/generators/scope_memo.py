"""What the generators derive from one proxy scope, as typed fields.

One :class:`ScopeMemo` hangs off each :class:`~pilothouse.push.scope.ProxyScope`
(:func:`scope_memo`), so every proxy of the scope shares it, and it moves with the scope
when a later PushContext takes the scope over (see ``ProxyScope``). A field is None (or
empty) until its generator first needs it. Nothing here reads anything besides the
scope and the context parts that come with it (mesh settings, the VirtualService,
Sidecar and Gateway indexes): values that read endpoints keep the versions they were
read at and check them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pilothouse.config.model import Config, ConfigKey
from pilothouse.push.authorization import WorkloadAuthorization
from pilothouse.push.cache import Resource
from pilothouse.push.indexes import RouteEntry
from pilothouse.push.scope import ProxyScope
from pilothouse.xds.builders.cluster import RestPolling
from pilothouse.xds.generators.routing import LabelKey

if TYPE_CHECKING:
    from pilothouse.xds.generators.cds import ScopeServices
    from pilothouse.xds.generators.eds import Assignments, EdsTarget, ServiceTargets
    from pilothouse.xds.generators.lds import ScopeListeners
    from pilothouse.xds.generators.scope_inputs import ScopeInputs


@dataclass(slots=True)
class ScopeMemo:
    """Everything generators remember about one scope."""

    inputs: ScopeInputs | None = None
    """The inputs of the scope's listeners and routes (scope_inputs.py)."""
    balancers: dict[ConfigKey, tuple[Config, bytes | None]] = field(default_factory=dict)
    """Each DestinationRule's load balancer settings, with the rule they were read from."""
    visible_routes: tuple[RouteEntry, ...] | None = None
    """The VirtualServices the scope sees, oldest first (scope_inputs.py)."""
    cds_services: ScopeServices | None = None
    eds_names: frozenset[str] | None = None
    """Every EDS cluster name of the scope (a wildcard EDS watch)."""
    eds_answers: dict[frozenset[str], Assignments] = field(default_factory=dict)
    eds_targets: dict[str, EdsTarget | None] = field(default_factory=dict)
    eds_services: dict[str, ServiceTargets | None] = field(default_factory=dict)
    listeners: dict[tuple[bool, RestPolling | None, WorkloadAuthorization], ScopeListeners] = field(
        default_factory=dict
    )
    """Outbound listeners by (captures traffic, REST polling, a gateway's access control)."""
    routes: dict[tuple[str, LabelKey], Resource | None] = field(default_factory=dict)
    """Route configurations by (name, label key); None: the name means nothing here."""


def scope_memo(scope: ProxyScope) -> ScopeMemo:
    """The scope's memo (made on first use)."""
    return scope.derived(ScopeMemo)


def predecessor_memo(scope: ProxyScope) -> ScopeMemo | None:
    """What was remembered about the scope's predecessor, if it has one and anything was."""
    previous = scope.predecessor
    return None if previous is None else previous.held(ScopeMemo)
