"""What one config kind declares: its schema row and every rule the pipeline keeps about it.

A :class:`Kind` is plain data. The stages after config read it through the table
(:mod:`pilothouse.kinds.table`) and interpret it themselves: the push scope reads
:attr:`Kind.audience`, the selected-workload rules (for the kinds whose audience is
:attr:`Audience.SELECTED_WORKLOADS`) :attr:`Kind.index`, :attr:`Kind.changed_types` and
:attr:`Kind.uncompared_audience`, the affected-types rules :attr:`Kind.unread_by` and
:attr:`Kind.moves_endpoints`, change classification :attr:`Kind.in_registry`, the push
context :attr:`Kind.index`, the CLI :attr:`Kind.short_names`, and the RBAC file
(:mod:`pilothouse.kinds.rbac`) the schema row's group and plural. None of them spells a
kind's name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pilothouse.config.schema import PlainKind, Schema


class Audience(Enum):
    """Which proxies a change to a kind concerns: a rule over a proxy scope that
    :meth:`pilothouse.push.scope.ProxyScope.sees` interprets, or (for
    :attr:`SELECTED_WORKLOADS`) one :mod:`pilothouse.push.selected_workloads` asks of
    each proxy."""

    EVERY_PROXY = "every proxy"
    """Any change may matter to any proxy (the rule for a kind no other rule fits)."""
    SCOPE_SERVICES = "a service of the scope"
    """The changed key names a service (``ServiceKey.config_key``) the scope holds."""
    SERVICE_SOURCES = "the config declaring a service of the scope"
    """The changed key declared one of the services the scope holds."""
    SELECTED_RULES = "a rule the scope picked for one of its services"
    """The changed key is a rule the scope chose for one of its services."""
    EXPORTED_ROUTES = "a route exported to the scope and admitted by its egress"
    """The changed key is among the routes the scope holds (exportTo and egress applied)."""
    SELECTED_GATEWAYS = "a gateway selecting the proxy"
    """The changed key is one of the gateways the scope's proxies are selected by."""
    NAMESPACE_OR_ROOT = "the proxy's namespace or the root namespace"
    """The changed key is in the proxies' namespace or the mesh-wide root namespace."""
    NAMESPACE_ROOT_OR_SERVICES = "the proxy's namespace, the root or a called namespace"
    """As :attr:`NAMESPACE_OR_ROOT`, or in a namespace one of the scope's services is from."""
    OWN_NAMESPACE = "the proxy's own namespace"
    """The changed key is in the proxies' namespace."""
    TRANSLATED_FROM = "an object the scope's generated gateways and routes were made from"
    """The changed key is among the Gateway API objects the Istio Gateways selecting the
    scope's proxies, the routes bound to them or (for sidecars) the mesh routes the scope
    sees were translated from (:mod:`pilothouse.kinds.gateway_api.audience`)."""
    REFERENCED_NAMESPACE = "a namespace the scope's generated config refers into"
    """The changed key is in a namespace a reference of that generated config crosses
    into (where the ReferenceGrants deciding it live)."""
    SELECTED_WORKLOADS = "the workloads its version before or after the change selects"
    """No scope sees it: the proxies whose workload the object's old or new version
    selects (by namespace or the root, then its selector), each proxy asked of the
    kind's :attr:`Kind.index` in the old and the new push context
    (:mod:`pilothouse.push.selected_workloads`)."""
    NO_PROXY = "no proxy's xDS resources"
    """It changes no xDS resource (it is applied in bootstraps): no scope sees it."""


@dataclass(frozen=True, slots=True)
class Kind:
    """Everything pilothouse knows about one kind, served or not."""

    name: str
    """The ``kind`` field, and the kind of the ConfigKeys that name its objects."""
    schema: Schema | None = None
    """Its schema row (wire names and validator); None: not served as Istio config."""
    plain: PlainKind | None = None
    """For a plain Kubernetes kind: the apiVersions ``validate`` recognises and skips."""
    short_names: tuple[str, ...] = ()
    """kubectl's short names (``vs``)."""
    audience: Audience = Audience.EVERY_PROXY
    """Which proxies a change concerns."""
    unread_by: frozenset[str] = frozenset()
    """The xDS type URLs whose resources no change of this kind can alter."""
    moves_endpoints: bool = False
    """Whether a change can alter a ClusterLoadAssignment (an EDS push in full)."""
    in_registry: bool = False
    """Whether the registry turns its objects into services and endpoints (its changes
    reach pushes as registry updates)."""
    index: str | None = None
    """The PushContext field that indexes it (None: the push context holds no index of
    it; the registry's endpoint index, or nothing)."""
    changed_types: Callable[[Any], frozenset[str]] | None = None
    """For a :attr:`Audience.SELECTED_WORKLOADS` kind whose objects each change only some
    of CDS, LDS and RDS: the types one object's spec can change. A push for a change
    leaves the types neither its old nor its new version changes alone (None: every
    type not in :attr:`unread_by`)."""
    uncompared_audience: Audience | None = None
    """For a :attr:`Audience.SELECTED_WORKLOADS` kind: the audience of a change whose old
    and new versions cannot be compared (the change reached a push context before the
    request naming it did, or the mesh settings changed), every type pushed. None: its
    versions are always compared (a change is not tracked across contexts)."""

    @property
    def served(self) -> bool:
        """Whether pilothouse serves it as Istio config (validates, stores, pushes)."""
        return self.schema is not None
