"""What each EnvoyFilter patch did: applied to some proxy's config, or matched nothing.

The generators record, for every proxy they patch, the patches it got and the ones that
changed something (:meth:`PatchOutcomes.record`); a push context's EnvoyFilter index keeps
one :class:`PatchOutcomes` for as long as the EnvoyFilters stay the same (a context
built after an EnvoyFilter edit starts a new one). It is observation only: what is sent
never depends on it. ``/debug/envoyfilterz`` and the ``pilot_envoy_filter_status``
metric read it (:func:`patch_statuses`), so a patch that selects proxies but matches
nothing in their config is visible by name, where Envoy would say nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.config.model import Config, ConfigKey

PatchKey = tuple[ConfigKey, int]
"""An EnvoyFilter's key and a patch's position in its ``configPatches``."""


class PatchStatus(StrEnum):
    APPLIED = "applied"
    """It changed the config of at least one proxy."""
    MATCHED_NOTHING = "matched nothing"
    """Proxies got it, and nothing in their config matched it."""
    NO_PROXY = "no proxy"
    """No proxy generated since it changed got it (none selected, or none connected)."""
    DROPPED = "dropped"
    """It is never applied (no effect in pilothouse, as in istiod: EXTENSION_CONFIG other
    than ADD, BOOTSTRAP, WAYPOINT)."""


METRIC_PATCH: Final[Mapping[int, str]] = {
    EnvoyFilter.LISTENER: "listener",
    EnvoyFilter.LISTENER_FILTER: "listenerfilter",
    EnvoyFilter.FILTER_CHAIN: "filterchain",
    EnvoyFilter.NETWORK_FILTER: "networkfilter",
    EnvoyFilter.HTTP_FILTER: "httpfilter",
    EnvoyFilter.ROUTE_CONFIGURATION: "route",
    EnvoyFilter.HTTP_ROUTE: "route",
    EnvoyFilter.VIRTUAL_HOST: "vhost",
    EnvoyFilter.CLUSTER: "cluster",
}
"""applyTo → istiod's ``patch`` label of ``pilot_envoy_filter_status``."""


class PatchOutcomes:
    """Per patch: whether a proxy got it, and whether it changed anything."""

    def __init__(self) -> None:
        self._given: set[PatchKey] = set()
        self._applied: set[PatchKey] = set()

    def record(self, given: Iterable[PatchKey], applied: Iterable[PatchKey]) -> None:
        self._given.update(given)
        self._applied.update(applied)

    def status(self, key: PatchKey) -> PatchStatus:
        if key in self._applied:
            return PatchStatus.APPLIED
        return PatchStatus.MATCHED_NOTHING if key in self._given else PatchStatus.NO_PROXY


@dataclass(frozen=True, slots=True)
class PatchReport:
    """One patch of one EnvoyFilter, as the debug view and the metric show it."""

    key: ConfigKey
    position: int
    apply_to: int
    status: PatchStatus

    def view(self) -> dict[str, Any]:
        return {
            "envoyFilter": f"{self.key.namespace}/{self.key.name}",
            "patch": self.position,
            "applyTo": EnvoyFilter.ApplyTo.Name(self.apply_to),
            "status": str(self.status),
        }


def patch_statuses(
    configs: Iterable[Config], outcomes: PatchOutcomes, kept: Iterable[PatchKey]
) -> list[PatchReport]:
    """Every patch of ``configs`` (by key, then position) with its status; ``kept`` are
    the patches the index holds (the others are dropped)."""
    held = set(kept)
    found = []
    for config in sorted(configs, key=lambda c: c.key):
        spec: Any = config.spec
        for position, patch in enumerate(spec.config_patches):
            key = (config.key, position)
            status = outcomes.status(key) if key in held else PatchStatus.DROPPED
            found.append(PatchReport(config.key, position, patch.apply_to, status))
    return found
