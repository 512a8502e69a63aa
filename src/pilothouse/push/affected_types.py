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

Other types (EDS, which the connection decides itself, SDS, the MCP-over-xDS kinds) are
never skipped here. A request that changes everything (a mesh config change, the admin
API's full push, ``PushRequest.everything``) or is forced skips nothing. Endpoints are
read too (inbound ports, DNS clusters) and move without a full push: the connection
leaves nothing out of the first full push after they moved. The rows are
checked by ``tests/fuzz/test_push_skips_unaffected_types.py``: for random single-kind
edits, a type the table skips generates exactly what it did before the edit.

Beyond the table, the pipeline compares contexts (istiod cannot: its rdsNeedsPush
pushes routes on every DestinationRule change). Routes read a DestinationRule only for
its consistent-hash load balancers (:mod:`pilothouse.push.route_rules`), so a push whose
changed kinds are DestinationRules and kinds routes never read leaves a scope's routes
alone when the rules' hash-policy bytes are the same for each of its hostnames in the old
and the new context. :func:`inert_for_scope` then marks the changed DestinationRules
inert for RDS in the request queued for the scope's connections (``PushRequest.inert``,
which merging keeps only while every merged change was inert), and
:func:`unaffected_types` skips a type when every changed key is of a kind the type does
not read or inert for it. A rule that changed in a context before a request named it
(:func:`~pilothouse.push.route_rules.moved_rules`) is never marked inert: the comparison
no longer sees its change.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from pilothouse.config.model import ConfigKey
from pilothouse.protocol.type_urls import CDS, LDS, RDS
from pilothouse.push.authorization import AUTHORIZATION_POLICY, REQUEST_AUTHENTICATION
from pilothouse.push.peer_authentication import PEER_AUTHENTICATION
from pilothouse.push.request import PushRequest
from pilothouse.push.route_rules import RuleReads, routes_read_alike
from pilothouse.push.scope import ProxyScope

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
_ROUTES_COMPARED: Final = UNAFFECTED_BY[RDS] | {DESTINATION_RULE}
"""The kinds of a push whose DestinationRules the pipeline may find inert for RDS."""


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


def inert_for_scope(
    request: PushRequest,
    old: ProxyScope,
    new: ProxyScope,
    unsettled: frozenset[ConfigKey],
    reads: RuleReads,
) -> PushRequest:
    """``request`` as queued for the connections of a scope that was ``old`` and is
    ``new``: its DestinationRules marked inert for RDS when the scope's routes read the
    same of the rules in both contexts (and none of them is in ``unsettled``: changed in
    a context before this request named it); else ``request`` itself."""
    if request.forced or request.is_everything or not request.full:
        return request
    rules = [k for k in request.configs_updated if k.kind == DESTINATION_RULE]
    if not rules or not request.kinds() <= _ROUTES_COMPARED:
        return request
    if not unsettled.isdisjoint(rules) or not routes_read_alike(old, new, reads):
        return request
    return request.with_inert(frozenset((RDS, k) for k in rules))
