"""RegistryUpdate: a plain description of one registry change (services, or endpoints only).

The push stage turns it into a push (:func:`pilothouse.push.changes.registry_request`);
the registry never imports push/.
"""

from __future__ import annotations

from dataclasses import dataclass

from pilothouse.config.model import ConfigKey
from pilothouse.registry.model import ServiceKey, Workload


@dataclass(frozen=True, slots=True)
class RegistryUpdate:
    """A change to the registry.

    ``full`` is True when a service definition changed (a new PushContext is needed) and
    False when only endpoints changed (the EDS fast path; the endpoint index is already
    updated). ``config_keys`` are the configs whose change caused it (ServiceEntry or
    WorkloadEntry keys); ``services`` are the services whose definition or endpoints changed.
    ``workloads`` are the WorkloadEntries whose endpoints or selecting services changed,
    as they were before and are after the change: the sidecars that *are* those entries
    (:mod:`pilothouse.push.own_sidecars`) may have new inbound clusters and listeners.
    """

    full: bool
    config_keys: frozenset[ConfigKey]
    services: frozenset[ServiceKey]
    workloads: frozenset[Workload] = frozenset()

    def merge(self, other: RegistryUpdate) -> RegistryUpdate:
        return RegistryUpdate(
            full=self.full or other.full,
            config_keys=self.config_keys | other.config_keys,
            services=self.services | other.services,
            workloads=self.workloads | other.workloads,
        )
