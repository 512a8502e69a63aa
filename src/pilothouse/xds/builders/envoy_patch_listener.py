"""EnvoyFilter patches of listeners: LISTENER, LISTENER_FILTER, FILTER_CHAIN,
NETWORK_FILTER and HTTP_FILTER, in istiod's pass order.

Per listener: LISTENER MERGE/REMOVE; LISTENER_FILTER list operations then MERGE; for each
filter chain, FILTER_CHAIN MERGE/REMOVE, NETWORK_FILTER list operations then MERGE, and
inside each HTTP connection manager HTTP_FILTER list operations then MERGE (and the
route-class patches of its inline route configuration, a sidecar's inbound routes); then
FILTER_CHAIN ADD (to listeners matching the listener fields). Then LISTENER ADD (never
inbound when the context is ANY, as istiod avoids duplicates). What an ADD put in is not
patched further. List operations: ADD appends, INSERT_FIRST prepends, INSERT_BEFORE and
INSERT_AFTER go next to the first element named by the match (without a name: first,
last; with a name nothing matches: nowhere), REPLACE swaps the first element so named,
REMOVE drops every one so named (a REMOVE without a name does nothing). MERGE merges the
value's typed config into every element so named (:func:`merge_any`) and renames it when
the value has a name. A MERGE of Anys of different types is skipped and the rest of the
pass goes on (istiod drops the rest of its pass there). MERGE_AND_REPLACE_LIST is a MERGE
whose value's lists replace the ones it merges into, for listeners and filter chains; on
listener, network and HTTP filters it does nothing, as in istiod.

Everything here is pure: protos in, protos out, and the (EnvoyFilter, patch) pairs
that changed something added to ``applied``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableSequence, Sequence
from typing import Any, Final

from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.push.envoy_filters import PatchRule
from pilothouse.xds.builders.envoy_patch_match import (
    Applied,
    chain_matches,
    context_matches,
    filter_name,
    listener_filter_name,
    listener_matches,
    sub_filter_name,
)
from pilothouse.xds.builders.envoy_patch_merge import (
    MergeRefused,
    merge,
    merge_any,
    replaces_lists,
)
from pilothouse.xds.builders.envoy_patch_object import appended, patch_object
from pilothouse.xds.builders.envoy_patch_route import ROUTE_CLASS, patch_route_configuration
from pilothouse.xds.builders.listener import HTTP_CONNECTION_MANAGER

log = logging.getLogger("pilothouse.xds")

Patch = EnvoyFilter.Patch
_INSERTS: Final = frozenset(
    {Patch.INSERT_BEFORE, Patch.INSERT_AFTER, Patch.INSERT_FIRST, Patch.ADD, Patch.REPLACE}
)
_HCM_NAMES: Final = frozenset({HTTP_CONNECTION_MANAGER, "envoy.http_connection_manager"})


def patch_listeners(
    listeners: Sequence[Any], rules: Sequence[PatchRule], context: int, applied: Applied
) -> list[Any]:
    """``listeners`` (changed in place) with the listener-class ``rules`` of ``context``
    applied; REMOVEd ones left out, ADDed ones appended."""
    rules = [r for r in rules if context_matches(r.match, context)]
    if not rules:
        return list(listeners)
    kept = [
        listener for listener in listeners if _patch_listener(listener, rules, context, applied)
    ]
    return kept + appended(_of(rules, EnvoyFilter.LISTENER), context, applied)


def _patch_listener(
    listener: Any, rules: Sequence[PatchRule], context: int, applied: Applied
) -> bool:
    """Patch one listener; False when a LISTENER REMOVE dropped it."""
    if not patch_object(listener, _of(rules, EnvoyFilter.LISTENER), _on, _merge, applied):
        return False
    listener_filters = [
        r
        for r in _of(rules, EnvoyFilter.LISTENER_FILTER)
        if listener_matches(r.match, listener, r.apply_to)
    ]
    _patch_list(listener.listener_filters, listener_filters, listener_filter_name, applied)
    chains = [c for c in listener.filter_chains]
    removed = []
    for chain in chains:
        if not _patch_chain(listener, chain, rules, context, applied):
            removed.append(chain)
    if removed:
        kept = [c for c in listener.filter_chains if not any(c is r for r in removed)]
        del listener.filter_chains[:]
        listener.filter_chains.extend(kept)
    if listener.HasField("default_filter_chain") and not _patch_chain(
        listener, listener.default_filter_chain, rules, context, applied
    ):
        listener.ClearField("default_filter_chain")
    for rule in _of(rules, EnvoyFilter.FILTER_CHAIN):
        if rule.operation == Patch.ADD and listener_matches(rule.match, listener, rule.apply_to):
            listener.filter_chains.add().CopyFrom(rule.value)
            applied.add((rule.key, rule.position))
    return True


def _patch_chain(
    listener: Any, chain: Any, rules: Sequence[PatchRule], context: int, applied: Applied
) -> bool:
    """Patch one filter chain; False when a FILTER_CHAIN REMOVE dropped it."""

    def on_chain(rule: PatchRule, _: Any) -> bool:
        return listener_matches(rule.match, listener, rule.apply_to) and chain_matches(
            rule.match, listener, chain
        )

    if not patch_object(
        chain, _of(rules, EnvoyFilter.FILTER_CHAIN), on_chain, _merge_chain, applied
    ):
        return False
    network = [r for r in _of(rules, EnvoyFilter.NETWORK_FILTER) if _reaches(r, listener, chain)]
    _patch_list(chain.filters, network, filter_name, applied)
    http = [r for r in _of(rules, EnvoyFilter.HTTP_FILTER) if _reaches(r, listener, chain)]
    routes = [r for r in rules if r.apply_to in ROUTE_CLASS]
    if http or routes:
        for network_filter in chain.filters:
            if network_filter.name in _HCM_NAMES and network_filter.typed_config.Is(
                hcm_pb2.HttpConnectionManager.DESCRIPTOR
            ):
                _patch_manager(network_filter, http, routes, context, applied)
    return True


def _reaches(rule: PatchRule, listener: Any, chain: Any) -> bool:
    """Whether a filter patch's listener and chain fields pick ``chain`` of ``listener``
    (its filter name then picks the filters)."""
    return listener_matches(rule.match, listener, rule.apply_to) and chain_matches(
        rule.match, listener, chain, with_filter=False
    )


def _on(rule: PatchRule, listener: Any) -> bool:
    return listener_matches(rule.match, listener, rule.apply_to)


def _merge(listener: Any, rule: PatchRule) -> None:
    merge(listener, rule.value, replace_lists=replaces_lists(rule.operation))


def _merge_chain(chain: Any, rule: PatchRule) -> None:
    """FILTER_CHAIN MERGE: the transport socket's config deep-merged when the names are
    equal, everything else merged."""
    value = rule.value
    replace_lists = replaces_lists(rule.operation)
    socket = value.transport_socket if value.HasField("transport_socket") else None
    if socket is not None and chain.transport_socket.name == socket.name:
        patch = type(value)()
        patch.CopyFrom(value)
        patch.ClearField("transport_socket")
        merge(chain, patch, replace_lists=replace_lists)
        if socket.HasField("typed_config"):
            merge_any(chain.transport_socket.typed_config, socket.typed_config)
        return
    merge(chain, value, replace_lists=replace_lists)


def _patch_manager(
    network_filter: Any,
    http: Sequence[PatchRule],
    routes: Sequence[PatchRule],
    context: int,
    applied: Applied,
) -> None:
    """HTTP_FILTER patches of an HTTP connection manager's filters, and route-class
    patches of its inline route configuration (a sidecar's inbound routes)."""
    manager = hcm_pb2.HttpConnectionManager()
    network_filter.typed_config.Unpack(manager)
    before = manager.SerializeToString(deterministic=True)
    _patch_list(manager.http_filters, http, sub_filter_name, applied)
    if routes and manager.HasField("route_config"):
        patch_route_configuration(manager.route_config, routes, context, (), applied)
    if manager.SerializeToString(deterministic=True) != before:
        network_filter.typed_config.Pack(manager)


def _patch_list(
    items: MutableSequence[Any],
    rules: Sequence[PatchRule],
    name_of: Callable[[Any], str],
    applied: Applied,
) -> None:
    """List operations in patch order, then MERGE into every element named."""
    for rule in rules:
        if rule.operation not in _INSERTS and rule.operation != Patch.REMOVE:
            continue
        name = name_of(rule.match)
        names = [item.name for item in items]
        if rule.operation == Patch.REMOVE:
            if name and name in names:
                kept = [item for item in items if item.name != name]
                del items[:]
                items.extend(kept)
                applied.add((rule.key, rule.position))
            continue
        value = type(rule.value)()
        value.CopyFrom(rule.value)
        if rule.operation == Patch.ADD:
            at = len(items)
        elif rule.operation == Patch.INSERT_FIRST:
            at = 0
        elif not name:
            at = 0 if rule.operation == Patch.INSERT_BEFORE else len(items)
        elif name not in names:
            continue
        elif rule.operation == Patch.REPLACE:
            items[names.index(name)].CopyFrom(value)
            applied.add((rule.key, rule.position))
            continue
        else:
            at = names.index(name) + (1 if rule.operation == Patch.INSERT_AFTER else 0)
        _insert(items, at, value)
        applied.add((rule.key, rule.position))
    for rule in rules:
        name = name_of(rule.match)
        if rule.operation != Patch.MERGE or not name:
            continue
        for item in items:
            if item.name != name or not item.HasField("typed_config"):
                continue
            try:
                if rule.value.HasField("typed_config"):
                    merge_any(item.typed_config, rule.value.typed_config)
            except MergeRefused as refused:
                log.warning(
                    "EnvoyFilter merge skipped",
                    extra={"envoy_filter": rule.filter_name, "reason": str(refused)},
                )
                continue
            if rule.value.name:
                item.name = rule.value.name
            applied.add((rule.key, rule.position))


def _insert(items: MutableSequence[Any], at: int, value: Any) -> None:
    """Insert a message into a repeated message field (which has no insert of its own)."""
    copies = [type(value)() for _ in items]
    for copy, item in zip(copies, items, strict=True):
        copy.CopyFrom(item)
    copies.insert(at, value)
    del items[:]
    items.extend(copies)


def _of(rules: Sequence[PatchRule], apply_to: int) -> list[PatchRule]:
    return [r for r in rules if r.apply_to == apply_to]
