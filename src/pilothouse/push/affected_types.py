"""Which watched xDS types a full push may leave alone, from the kinds of config it changed.

istiod asks each generator whether a push concerns it (``cdsNeedsPush``, ``ldsNeedsPush``,
``rdsNeedsPush``: a push whose every changed kind is in the generator's skipped set does
not regenerate that type). Here the same question is answered from what pilothouse's own
builders read, so a type is left out of a full push only when no changed kind is among
its inputs:

- CDS reads services, endpoints (DNS clusters), DestinationRules, PeerAuthentications
  (auto-mTLS), Sidecars and the mesh settings; never VirtualServices, Gateways,
  AuthorizationPolicies or RequestAuthentications. (istiod skips the last three too;
  it pushes CDS on VirtualService changes where its Sidecar scoping or its gateway
  cluster filtering reads them, neither of which pilothouse's scopes do.)
- LDS reads services, Sidecars, Gateways, VirtualServices (TCP/TLS routes),
  PeerAuthentications, AuthorizationPolicies, RequestAuthentications, endpoints (inbound)
  and the mesh; never a DestinationRule. (istiod's LDS does read them: AUTO_PASSTHROUGH
  gateway servers get a filter chain per DestinationRule subset. pilothouse leaves such
  servers out; the row must lose DestinationRule when they are built.)
- RDS reads services, VirtualServices, Gateways, Sidecars and DestinationRules (route hash
  policies); never a PeerAuthentication, AuthorizationPolicy or RequestAuthentication.

Other types (SDS, the MCP-over-xDS kinds) are never skipped here; EDS is pushed in full
only when :func:`moves_endpoints` (an endpoint kind changed: services, workloads,
DestinationRule subsets, PeerAuthentications), else only for the clusters CDS changed. A
request that changes everything (a mesh config change, the admin API's full push,
``PushRequest.everything``) or is forced skips nothing. Endpoints are read too (inbound
ports, DNS clusters) and move without a full push: the connection leaves nothing out of
the first full push after they moved. The rows are checked by
``tests/fuzz/test_push_skips_unaffected_types.py``: for random edits, a type the rules
skip generates exactly what it did before the edit.

Beyond the table, the pipeline compares contexts (istiod cannot: its rdsNeedsPush
pushes routes on every DestinationRule change, and every DestinationRule change is an
EDS push there too). Routes read a DestinationRule only for its consistent-hash load
balancers, endpoint assignments only for its subsets (:mod:`pilothouse.push.rule_reads`).
So a push whose changed kinds are DestinationRules and kinds the type never reads leaves
a scope's routes (or assignments) alone when that reading of the rules is the same for
each of its hostnames in the old and the new context (:data:`COMPARED`).
:func:`inert_for_scope` then marks the changed DestinationRules inert for the type in the
request queued for the scope's connections (``PushRequest.inert``, which merging keeps
only while every merged change was inert); :func:`unaffected_types` skips a type when
every changed key is of a kind the type does not read or inert for it, and
:func:`moves_endpoints` ignores keys inert for EDS. A rule that changed in a context
before a request named it (:func:`~pilothouse.push.rule_reads.moved_rules`) is never
marked inert: the comparison no longer sees its change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final

from pilothouse.config.model import ConfigKey
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.authorization import AUTHORIZATION_POLICY, REQUEST_AUTHENTICATION
from pilothouse.push.peer_authentication import PEER_AUTHENTICATION
from pilothouse.push.request import PushRequest
from pilothouse.push.rule_reads import RuleReads, endpoints_read_alike, routes_read_alike
from pilothouse.push.scope import ProxyScope
from pilothouse.registry.model import SERVICE_KIND

ScopesAlike = Callable[[ProxyScope, ProxyScope, RuleReads], bool]

UNAFFECTED_BY: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        CDS: frozenset({"VirtualService", "Gateway", AUTHORIZATION_POLICY, REQUEST_AUTHENTICATION}),
        LDS: frozenset({"DestinationRule"}),
        RDS: frozenset({PEER_AUTHENTICATION, AUTHORIZATION_POLICY, REQUEST_AUTHENTICATION}),
    }
)
"""Type URL → the config kinds whose changes cannot change that type's resources."""

_NOTHING: Final[frozenset[str]] = frozenset()


DESTINATION_RULE: Final = "DestinationRule"
ENDPOINT_KINDS: Final = frozenset(
    {SERVICE_KIND, "ServiceEntry", "WorkloadEntry", DESTINATION_RULE, PEER_AUTHENTICATION}
)
"""Kinds whose change can alter a ClusterLoadAssignment (DestinationRules define subsets;
a workload's PeerAuthentication DISABLE takes its endpoints out of auto-mTLS)."""
COMPARED: Final[Mapping[str, tuple[frozenset[str], ScopesAlike]]] = MappingProxyType(
    {
        RDS: (UNAFFECTED_BY[RDS] | {DESTINATION_RULE}, routes_read_alike),
        EDS: (
            frozenset({DESTINATION_RULE, AUTHORIZATION_POLICY, REQUEST_AUTHENTICATION}),
            endpoints_read_alike,
        ),
    }
)
"""Type URL → the kinds a push may change for the pipeline to compare what the type
reads of its DestinationRules, and the comparison."""


def unaffected_types(request: PushRequest) -> frozenset[str]:
    """The type URLs a full push of ``request`` cannot change: every changed key is of a
    kind the type does not read, or inert for it (``request.inert``). Empty for a forced
    push or one that changes everything."""
    if request.forced or request.is_everything or not request.full:
        return _NOTHING
    kinds = request.kinds()
    found = frozenset(t for t, unread in UNAFFECTED_BY.items() if kinds <= unread)
    inert = request.inert
    if not inert:
        return found
    return found | frozenset(
        t
        for t, unread in UNAFFECTED_BY.items()
        if t not in found
        and all(k.kind in unread or (t, k) in inert for k in request.configs_updated)
    )


def moves_endpoints(request: PushRequest) -> bool:
    """Whether a full push of ``request`` can change a ClusterLoadAssignment: it changes
    everything, or a key of an endpoint kind that is not inert for EDS (inert or not,
    when it is forced)."""
    if request.is_everything:
        return True
    inert = request.inert if not request.forced else frozenset()
    return any(
        k.kind in ENDPOINT_KINDS and (not inert or (EDS, k) not in inert)
        for k in request.configs_updated
    )


def inert_for_scope(
    request: PushRequest,
    old: ProxyScope,
    new: ProxyScope,
    unsettled: frozenset[ConfigKey],
    reads: RuleReads,
) -> PushRequest:
    """``request`` as queued for the connections of a scope that was ``old`` and is
    ``new``: its DestinationRules marked inert for each type of :data:`COMPARED` whose
    reading of the scope's rules is the same in both contexts (when the request changes
    no kind the comparison leaves out, and none of its rules is in ``unsettled``:
    changed in a context before this request named it); ``request`` itself when none is."""
    if request.forced or request.is_everything or not request.full:
        return request
    rules = [k for k in request.configs_updated if k.kind == DESTINATION_RULE]
    if not rules or not unsettled.isdisjoint(rules):
        return request
    kinds = request.kinds()
    inert = frozenset(
        (type_url, key)
        for type_url, (allowed, alike) in COMPARED.items()
        if kinds <= allowed and alike(old, new, reads)
        for key in rules
    )
    return request.with_inert(inert) if inert else request
