"""EnvoyFilter patches of clusters (applyTo CLUSTER), as istiod applies them.

Each generated cluster takes the matching MERGEs (its transport socket deep-merged when
the socket names are equal, replaced otherwise; with ``transport_socket_matches``, merged
into the match of that socket name, and dropped when there is none) and REMOVEs in patch
order; then each ADD appends its cluster, which no other patch touches. An ADD whose
context is ANY is not applied to inbound clusters (istiod avoids a duplicate there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.push.envoy_filters import PatchRule
from pilothouse.xds.builders.envoy_patch_match import Applied, cluster_matches, context_matches
from pilothouse.xds.builders.envoy_patch_merge import MERGES, merge, merge_any, replaces_lists

Patch = EnvoyFilter.Patch


def patch_clusters(
    clusters: Sequence[Any], rules: Sequence[PatchRule], context: int, applied: Applied
) -> list[Any]:
    """``clusters`` (changed in place) with the CLUSTER ``rules`` of ``context`` applied:
    REMOVEd ones left out, ADDed ones appended."""
    rules = [
        r for r in rules if r.apply_to == EnvoyFilter.CLUSTER and context_matches(r.match, context)
    ]
    if not rules:
        return list(clusters)
    kept = []
    for cluster in clusters:
        removed = False
        for rule in rules:
            if rule.operation not in MERGES and rule.operation != Patch.REMOVE:
                continue
            if not cluster_matches(rule.match, cluster):
                continue
            applied.add((rule.key, rule.position))
            if rule.operation == Patch.REMOVE:
                removed = True
                break
            _merge_cluster(cluster, rule.value, replaces_lists(rule.operation))
        if not removed:
            kept.append(cluster)
    for rule in rules:
        if rule.operation != Patch.ADD:
            continue
        if rule.match.context == EnvoyFilter.ANY and context == EnvoyFilter.SIDECAR_INBOUND:
            continue
        added = type(rule.value)()
        added.CopyFrom(rule.value)
        kept.append(added)
        applied.add((rule.key, rule.position))
    return kept


def _merge_cluster(cluster: Any, value: Any, replace_lists: bool) -> None:
    if not value.HasField("transport_socket"):
        merge(cluster, value, replace_lists=replace_lists)
        return
    socket = value.transport_socket
    rest = type(value)()
    rest.CopyFrom(value)
    rest.ClearField("transport_socket")
    merge(cluster, rest, replace_lists=replace_lists)
    if cluster.transport_socket_matches:
        for entry in cluster.transport_socket_matches:
            if entry.transport_socket.name == socket.name:
                _merge_socket(entry.transport_socket, socket, replace_lists)
                return
        return  # no match of that socket name: istiod drops the socket patch
    if cluster.HasField("transport_socket") and cluster.transport_socket.name == socket.name:
        _merge_socket(cluster.transport_socket, socket, replace_lists)
    else:
        cluster.transport_socket.CopyFrom(socket)


def _merge_socket(held: Any, patch: Any, replace_lists: bool) -> None:
    if patch.HasField("typed_config") and held.HasField("typed_config"):
        merge_any(held.typed_config, patch.typed_config)  # lists inside append, as istiod
    else:
        merge(held, patch, replace_lists=replace_lists)
