"""The aggregate registry: the ServiceEntry registry and a second one (Kubernetes) as one.

Both write their endpoints into the same :class:`EndpointIndex` (each in shards of its
own), so the EDS fast path, endpoint versions and ``/debug/endpointShardz`` see one index.
Services are merged by key: when a ServiceEntry and a Kubernetes Service declare the same
host in the same namespace, the Kubernetes Service is the definition (istiod: "a
Kubernetes Service beats a non-Kubernetes one") and the endpoints of both are served.

The merged service list is made again only when one of the two registries' own lists
changed (each hands out the same tuple until it changes).

Without Kubernetes the discovery server uses the ServiceEntry registry directly: this
class is only built when there is a second registry.
"""

from __future__ import annotations

from typing import Protocol

from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.model import Endpoint, Service, ServiceKey
from pilothouse.registry.update import RegistryUpdate


class ServiceRegistry(Protocol):
    """What the discovery server reads from a registry."""

    @property
    def endpoint_index(self) -> EndpointIndex: ...
    def has_synced(self) -> bool: ...
    def services(self) -> tuple[Service, ...]: ...
    def service(self, key: ServiceKey) -> Service | None: ...
    def services_by_hostname(self, hostname: str) -> tuple[Service, ...]: ...
    def endpoints(self, key: ServiceKey) -> tuple[Endpoint, ...]: ...
    def initial_load(self) -> RegistryUpdate | None: ...
    def close(self) -> None: ...


class AggregateRegistry:
    """``primary`` (ServiceEntries) and ``preferred`` (Kubernetes) as one registry;
    ``preferred`` wins a shared service key. Both must share one endpoint index."""

    def __init__(self, primary: ServiceRegistry, preferred: ServiceRegistry) -> None:
        if primary.endpoint_index is not preferred.endpoint_index:
            raise ValueError("the aggregated registries must share one endpoint index")
        self.primary = primary
        self.preferred = preferred
        self._made_from: tuple[tuple[Service, ...], tuple[Service, ...]] | None = None
        self._merged: tuple[Service, ...] = ()

    @property
    def endpoint_index(self) -> EndpointIndex:
        return self.primary.endpoint_index

    def has_synced(self) -> bool:
        return self.primary.has_synced() and self.preferred.has_synced()

    def services(self) -> tuple[Service, ...]:
        """Every service of both, ordered by hostname then namespace."""
        first, second = self.primary.services(), self.preferred.services()
        made = self._made_from
        if made is None or made[0] is not first or made[1] is not second:
            if not second:
                merged = first
            elif not first:
                merged = second
            else:
                by_key = {service.key: service for service in first}
                by_key.update((service.key, service) for service in second)
                merged = tuple(by_key[key] for key in sorted(by_key))
            self._made_from, self._merged = (first, second), merged
        return self._merged

    def service(self, key: ServiceKey) -> Service | None:
        found = self.preferred.service(key)
        return found if found is not None else self.primary.service(key)

    def services_by_hostname(self, hostname: str) -> tuple[Service, ...]:
        by_namespace = {s.namespace: s for s in self.primary.services_by_hostname(hostname)}
        by_namespace.update((s.namespace, s) for s in self.preferred.services_by_hostname(hostname))
        return tuple(by_namespace[namespace] for namespace in sorted(by_namespace))

    def endpoints(self, key: ServiceKey) -> tuple[Endpoint, ...]:
        return self.endpoint_index.endpoints(key)

    def initial_load(self) -> RegistryUpdate | None:
        updates = [u for u in (self.primary.initial_load(), self.preferred.initial_load()) if u]
        if not updates:
            return None
        merged = updates[0]
        for update in updates[1:]:
            merged = merged.merge(update)
        return merged

    def close(self) -> None:
        self.primary.close()
        self.preferred.close()
