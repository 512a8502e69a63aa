"""Which watched xDS types a full push may leave alone, from the kinds of config it changed.

istiod asks each generator whether a push concerns it (``cdsNeedsPush``, ``ldsNeedsPush``,
``rdsNeedsPush``: a push whose every changed kind is in the generator's skipped set does
not regenerate that type). Here the same question is answered from what pilothouse's own
builders read, so a type is left out of a full push only when no changed kind is among
its inputs. Each kind declares the types it can never change in its own module
(:attr:`~pilothouse.kinds.kind.Kind.unread_by`, with the reasoning beside it, including
where istiod differs), and :data:`UNAFFECTED_BY` gathers them by type: today CDS never
reads VirtualServices, Gateways, AuthorizationPolicies or RequestAuthentications, LDS
never a DestinationRule, RDS never a PeerAuthentication, AuthorizationPolicy or
RequestAuthentication.

Other types (SDS, the MCP-over-xDS kinds) are never skipped here; EDS is pushed in full
only when :func:`moves_endpoints` (a kind that declares
:attr:`~pilothouse.kinds.kind.Kind.moves_endpoints` changed: services, workloads,
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
marked inert: the comparison no longer sees its change. One entry compares no
reading, only the scope: a sidecar's listeners read no VirtualService (only a gateway's
do, for TCP and TLS routes), so VirtualService changes are inert for LDS in a scope
that is a sidecar's in both contexts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from pilothouse.config.model import ConfigKey
from pilothouse.kinds import destination_rule, virtual_service
from pilothouse.kinds.table import KINDS
from pilothouse.protocol.type_urls import EDS, LDS, RDS
from pilothouse.push.authorization import AUTHORIZATION_POLICY, REQUEST_AUTHENTICATION
from pilothouse.push.proxy import ProxyType
from pilothouse.push.request import PushRequest
from pilothouse.push.rule_reads import RuleReads, endpoints_read_alike, routes_read_alike
from pilothouse.push.scope import ProxyScope

ScopesAlike = Callable[[ProxyScope, ProxyScope, RuleReads], bool]

UNAFFECTED_BY: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        type_url: frozenset(k.name for k in KINDS if type_url in k.unread_by)
        for type_url in dict.fromkeys(t for k in KINDS for t in sorted(k.unread_by))
    }
)
"""Type URL → the config kinds whose changes cannot change that type's resources (each
kind's :attr:`~pilothouse.kinds.kind.Kind.unread_by`)."""

_NOTHING: Final[frozenset[str]] = frozenset()


DESTINATION_RULE: Final = destination_rule.KIND.name
ENDPOINT_KINDS: Final = frozenset(k.name for k in KINDS if k.moves_endpoints)
"""Kinds whose change can alter a ClusterLoadAssignment (each kind's
:attr:`~pilothouse.kinds.kind.Kind.moves_endpoints`: services and workloads, the subsets
DestinationRules define, a workload's PeerAuthentication DISABLE taking its endpoints out
of auto-mTLS)."""
VIRTUAL_SERVICE: Final = virtual_service.KIND.name


@dataclass(frozen=True, slots=True)
class Comparison:
    """When changes of ``kind`` may leave ``type_url`` alone for a scope: the push changes
    no kind but ``kind`` and ``alongside`` (kinds the type never reads), and ``alike``
    holds for the scope in the old and the new context."""

    type_url: str
    kind: str
    alongside: frozenset[str]
    alike: ScopesAlike


def sidecar_listeners(old: ProxyScope, new: ProxyScope, reads: RuleReads) -> bool:
    """Whether the scope is a sidecar scope in both contexts: a sidecar's listeners
    (outbound from its Sidecar's egress or the services' ports, inbound from its own
    workload) read no VirtualService; only a gateway's do (its TCP and TLS routes)."""
    return old.key == new.key and new.key.proxy_type is ProxyType.SIDECAR


COMPARED: Final[tuple[Comparison, ...]] = (
    Comparison(RDS, DESTINATION_RULE, UNAFFECTED_BY[RDS], routes_read_alike),
    Comparison(
        EDS,
        DESTINATION_RULE,
        frozenset({AUTHORIZATION_POLICY, REQUEST_AUTHENTICATION}),
        endpoints_read_alike,
    ),
    Comparison(LDS, VIRTUAL_SERVICE, UNAFFECTED_BY[LDS], sidecar_listeners),
)
"""The per-scope comparisons the pipeline makes beyond the kind table."""


@functools.lru_cache(maxsize=64)
def unaffected_types(request: PushRequest) -> frozenset[str]:
    """The type URLs a full push of ``request`` cannot change: every changed key is of a
    kind the type does not read, or inert for it (``request.inert``). Empty for a forced
    push or one that changes everything. Remembered for the last requests: every
    connection a request is queued for asks, with the very same request."""
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


def moves_endpoints(request: PushRequest, *, trust_inert: bool = True) -> bool:
    """Whether a full push of ``request`` can change a ClusterLoadAssignment: it changes
    everything, or a key of an endpoint kind that is not inert for EDS (inert or not,
    when it is forced or not ``trust_inert``: the connection's first full push, or the
    first after endpoints moved, as for :func:`unaffected_types`)."""
    if request.is_everything:
        return True
    inert = request.inert if trust_inert and not request.forced else frozenset()
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
    ``new``: for each :data:`COMPARED` entry that holds for the scope, its changed keys of
    the entry's kind marked inert for the entry's type (when the request changes no
    other kind than those the entry allows, and none of those keys is in ``unsettled``:
    changed in a context before this request named it); ``request`` itself when no key
    is marked."""
    if request.forced or request.is_everything or not request.full:
        return request
    kinds = request.kinds()
    inert: set[tuple[str, ConfigKey]] = set()
    for comparison in COMPARED:
        if comparison.kind not in kinds or not kinds <= comparison.alongside | {comparison.kind}:
            continue
        keys = [k for k in request.configs_updated if k.kind == comparison.kind]
        if unsettled.isdisjoint(keys) and comparison.alike(old, new, reads):
            inert.update((comparison.type_url, k) for k in keys)
    return request.with_inert(frozenset(inert)) if inert else request
