"""RegistryUpdate: what one registry change means for the push stage (full, or EDS only)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pilothouse.config.model import ConfigKey
from pilothouse.push.request import PushRequest, TriggerReason
from pilothouse.registry.model import ServiceKey


@dataclass(frozen=True, slots=True)
class RegistryUpdate:
    """A change to the registry.

    ``full`` is True when a service definition changed (a new PushContext is needed) and
    False when only endpoints changed (the EDS fast path; the endpoint index is already
    updated). ``config_keys`` are the configs whose change caused it (ServiceEntry or
    WorkloadEntry keys); ``services`` are the services whose definition or endpoints changed.
    """

    full: bool
    config_keys: frozenset[ConfigKey]
    services: frozenset[ServiceKey]

    def merge(self, other: RegistryUpdate) -> RegistryUpdate:
        return RegistryUpdate(
            full=self.full or other.full,
            config_keys=self.config_keys | other.config_keys,
            services=self.services | other.services,
        )

    def to_push_request(self, start: float = math.inf) -> PushRequest:
        """The push this update asks for.

        Full: reason ``service`` (istiod's reason for ServiceEntry changes); the changed
        config keys plus every affected service as ``ServiceKey.config_key``, so that caches
        can drop the clusters of hosts that are gone. EDS only: reason ``endpoint``, naming
        the affected services only.
        """
        service_keys = frozenset(service.config_key for service in self.services)
        if self.full:
            return PushRequest.for_configs(
                self.config_keys | service_keys, TriggerReason.SERVICE, start=start
            )
        return PushRequest.for_configs(
            service_keys, TriggerReason.ENDPOINT, start=start, full=False
        )
