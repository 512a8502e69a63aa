"""EnvoyFilter patches of route configurations: ROUTE_CONFIGURATION, VIRTUAL_HOST and
HTTP_ROUTE, in istiod's pass order.

Per route configuration: ROUTE_CONFIGURATION MERGE; for each virtual host, VIRTUAL_HOST
REMOVE, MERGE and REPLACE, then its routes (HTTP_ROUTE MERGE and REMOVE of matching
routes; ADD appends; INSERT_FIRST prepends, or with a route match puts the value before
the first matching route; INSERT_BEFORE and INSERT_AFTER next to the first matching
route); then VIRTUAL_HOST ADDs. REPLACE of a route is not implemented by istiod and does
nothing here either.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.push.envoy_filters import PatchRule
from pilothouse.xds.builders.envoy_patch_match import (
    Applied,
    context_matches,
    route_configuration_matches,
    route_match,
    route_matches,
    virtual_host_matches,
)
from pilothouse.xds.builders.envoy_patch_merge import MERGES, merge, replaces_lists
from pilothouse.xds.builders.envoy_patch_object import patch_object

Patch = EnvoyFilter.Patch
ROUTE_CLASS: Final = frozenset(
    {EnvoyFilter.ROUTE_CONFIGURATION, EnvoyFilter.VIRTUAL_HOST, EnvoyFilter.HTTP_ROUTE}
)


def patch_route_configuration(
    config: Any,
    rules: Sequence[PatchRule],
    context: int,
    gateways: Iterable[str],
    applied: Applied,
) -> None:
    """Apply the route-class ``rules`` of ``context`` to ``config``, in place."""
    gateway_names = tuple(gateways)
    rules = [
        r
        for r in rules
        if context_matches(r.match, context)
        and route_configuration_matches(r.match, config, gateway_names)
    ]
    if not rules:
        return
    for rule in _of(rules, EnvoyFilter.ROUTE_CONFIGURATION):
        if rule.operation in MERGES:
            merge(config, rule.value, replace_lists=replaces_lists(rule.operation))
            applied.add((rule.key, rule.position))
    hosts = []
    for host in config.virtual_hosts:
        kept = _patch_host(host, rules, applied)
        if kept is not None:
            hosts.append(kept)
    if len(hosts) != len(config.virtual_hosts):
        copies = [type(h)() for h in hosts]
        for copy, host in zip(copies, hosts, strict=True):
            copy.CopyFrom(host)
        del config.virtual_hosts[:]
        config.virtual_hosts.extend(copies)
    for rule in _of(rules, EnvoyFilter.VIRTUAL_HOST):
        if rule.operation == Patch.ADD:
            config.virtual_hosts.add().CopyFrom(rule.value)
            applied.add((rule.key, rule.position))


def _patch_host(host: Any, rules: Sequence[PatchRule], applied: Applied) -> Any:
    """Patch one virtual host; None when a VIRTUAL_HOST REMOVE dropped it."""
    vhost_rules = _of(rules, EnvoyFilter.VIRTUAL_HOST)
    if not patch_object(host, vhost_rules, _on_host, _merge, applied, replace=True):
        return None
    for rule in _of(rules, EnvoyFilter.HTTP_ROUTE):
        if virtual_host_matches(rule.match, host):
            _patch_routes(host, rule, applied)
    return host


def _on_host(rule: PatchRule, host: Any) -> bool:
    return virtual_host_matches(rule.match, host)


def _merge(target: Any, rule: PatchRule) -> None:
    merge(target, rule.value, replace_lists=replaces_lists(rule.operation))


def _patch_routes(host: Any, rule: PatchRule, applied: Applied) -> None:
    wanted = route_match(rule.match)
    routes = list(host.routes)
    matching = [i for i, r in enumerate(routes) if route_matches(wanted, r)]
    operation = rule.operation
    if operation in MERGES or operation == Patch.REMOVE:
        if not matching:
            return
        if operation in MERGES:
            for index in matching:
                merge(host.routes[index], rule.value, replace_lists=replaces_lists(operation))
        else:
            kept = [r for i, r in enumerate(routes) if i not in set(matching)]
            _set_routes(host, kept)
        applied.add((rule.key, rule.position))
        return
    if operation == Patch.ADD:
        at = len(routes)
    elif operation == Patch.INSERT_FIRST:
        if wanted is not None and not matching:
            return
        at = 0
    elif operation in (Patch.INSERT_BEFORE, Patch.INSERT_AFTER):
        if wanted is None:
            at = 0 if operation == Patch.INSERT_BEFORE else len(routes)
        elif not matching:
            return
        else:
            at = matching[0] + (1 if operation == Patch.INSERT_AFTER else 0)
    else:
        return
    added = type(rule.value)()
    added.CopyFrom(rule.value)
    routes.insert(at, added)
    _set_routes(host, routes)
    applied.add((rule.key, rule.position))


def _set_routes(host: Any, routes: list[Any]) -> None:
    copies = [type(r)() for r in routes]
    for copy, route in zip(copies, routes, strict=True):
        copy.CopyFrom(route)
    del host.routes[:]
    host.routes.extend(copies)


def _of(rules: Sequence[PatchRule], apply_to: int) -> list[PatchRule]:
    return [r for r in rules if r.apply_to == apply_to]
