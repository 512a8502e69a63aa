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
from pilothouse.xds.builders.envoy_patch_merge import merge, merge_any, replaces_lists
from pilothouse.xds.builders.envoy_patch_object import appended, patch_object


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
    kept = [c for c in clusters if patch_object(c, rules, _matches, _merge_cluster, applied)]
    return kept + appended(rules, context, applied)


def _matches(rule: PatchRule, cluster: Any) -> bool:
    return cluster_matches(rule.match, cluster)


def _merge_cluster(cluster: Any, rule: PatchRule) -> None:
    value = rule.value
    replace_lists = replaces_lists(rule.operation)
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
