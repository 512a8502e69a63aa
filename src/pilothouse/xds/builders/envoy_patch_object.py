"""The two shapes every EnvoyFilter pass shares: one generated object under the patches
that match it, and the ADDs that append whole objects.

:func:`patch_object` runs the MERGE and REMOVE patches (and REPLACE, where the applyTo
has it: virtual hosts) of one listener, filter chain, cluster or virtual host in patch
order, each merging its own way; a REMOVE ends it. A MERGE that meets a
``typed_config`` of another type (a transport socket's) is skipped with a warning and
the rest goes on, as for filters (istiod drops the rest of its pass).

:func:`appended` gives copies of the ADD values of a pass for the listeners or clusters,
where an ADD whose context is ANY is left out of the inbound pass (istiod avoids a
duplicate there, istio/istio#36284).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.push.envoy_filters import PatchRule
from pilothouse.xds.builders.envoy_patch_match import Applied
from pilothouse.xds.builders.envoy_patch_merge import MERGES, MergeRefused

log = logging.getLogger("pilothouse.xds")

Patch = EnvoyFilter.Patch


def patch_object(
    target: Any,
    rules: Sequence[PatchRule],
    matches: Callable[[PatchRule, Any], bool],
    merge_into: Callable[[Any, PatchRule], None],
    applied: Applied,
    *,
    replace: bool = False,
) -> bool:
    """Apply the ``rules`` that ``matches(rule, target)`` picks to ``target``, in place:
    MERGEs with
    ``merge_into(target, rule)``, REPLACEs (when ``replace``) by the value; False when a
    REMOVE dropped it."""
    for rule in rules:
        operation = rule.operation
        wanted = operation in MERGES or operation == Patch.REMOVE
        if not (wanted or (replace and operation == Patch.REPLACE)):
            continue
        if not matches(rule, target):
            continue
        if operation == Patch.REMOVE:
            applied.add((rule.key, rule.position))
            return False
        if operation == Patch.REPLACE:
            target.CopyFrom(rule.value)
        else:
            try:
                merge_into(target, rule)
            except MergeRefused as refused:
                log.warning(
                    "EnvoyFilter merge skipped",
                    extra={"envoy_filter": rule.filter_name, "reason": str(refused)},
                )
                continue
        applied.add((rule.key, rule.position))
    return True


def appended(rules: Sequence[PatchRule], context: int, applied: Applied) -> list[Any]:
    """Copies of the values of the ADDs among ``rules`` for the pass of ``context``."""
    added = []
    for rule in rules:
        if rule.operation != Patch.ADD:
            continue
        if rule.match.context == EnvoyFilter.ANY and context == EnvoyFilter.SIDECAR_INBOUND:
            continue
        copy = type(rule.value)()
        copy.CopyFrom(rule.value)
        added.append(copy)
        applied.add((rule.key, rule.position))
    return added
