"""The endpoint index: every service's endpoints, in shards by the config they came from.

A shard is what one config contributes to one service: a ServiceEntry's inline endpoints,
or one WorkloadEntry's endpoints. Changing one workload touches one shard, so an endpoint
change costs O(endpoints of the service), never a rebuild of the registry (the EDS fast
path).

Each service has a version that increases on every real change of its endpoints (a write
that changes nothing keeps it). Versions come from one counter for the whole index, so a
version is never reused, even after a service's endpoints are removed and come back: a
cache may key on ``(service, version)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from pilothouse.config.model import ConfigKey
from pilothouse.registry.model import Endpoint, ServiceKey


def _canonical(endpoints: Iterable[Endpoint]) -> tuple[Endpoint, ...]:
    """Endpoints in one order whatever order they came in; identical ones kept once."""
    return tuple(sorted(set(endpoints), key=Endpoint.sort_key))


class EndpointIndex:
    """Endpoints per service, per shard. Single-threaded: call it from the event loop."""

    def __init__(self) -> None:
        self._shards: dict[ServiceKey, dict[ConfigKey, tuple[Endpoint, ...]]] = {}
        self._versions: dict[ServiceKey, int] = {}
        self._merged: dict[ServiceKey, tuple[Endpoint, ...]] = {}
        self._clock = 0

    def update_shard(
        self, service: ServiceKey, shard: ConfigKey, endpoints: Iterable[Endpoint]
    ) -> bool:
        """Make ``endpoints`` the content of ``shard`` of ``service``; True if that changed
        anything. An empty shard is the same as no shard."""
        ordered = _canonical(endpoints)
        if not ordered:
            return self.delete_shard(service, shard)
        shards = self._shards.get(service)
        if shards is not None and shards.get(shard) == ordered:
            return False
        if shards is None:
            shards = self._shards[service] = {}
        shards[shard] = ordered
        self._changed(service)
        return True

    def delete_shard(self, service: ServiceKey, shard: ConfigKey) -> bool:
        """Remove ``shard`` of ``service``; True if it was there."""
        shards = self._shards.get(service)
        if shards is None or shard not in shards:
            return False
        del shards[shard]
        if not shards:
            del self._shards[service]
        self._changed(service)
        return True

    def _changed(self, service: ServiceKey) -> None:
        self._clock += 1
        self._versions[service] = self._clock
        self._merged.pop(service, None)

    def version(self, service: ServiceKey) -> int:
        """The version of ``service``'s endpoints; 0 when it never had any."""
        return self._versions.get(service, 0)

    def services(self) -> tuple[ServiceKey, ...]:
        """The services that have endpoints, in order."""
        return tuple(sorted(self._shards))

    def shards(self, service: ServiceKey) -> Mapping[ConfigKey, tuple[Endpoint, ...]]:
        """A read-only view of ``service``'s shards."""
        return MappingProxyType(self._shards.get(service, {}))

    def endpoints(self, service: ServiceKey) -> tuple[Endpoint, ...]:
        """Every endpoint of ``service``: shards in key order, each shard in endpoint order."""
        merged = self._merged.get(service)
        if merged is None:
            shards = self._shards.get(service)
            if not shards:
                return ()
            merged = tuple(endpoint for key in sorted(shards) for endpoint in shards[key])
            self._merged[service] = merged
        return merged

    def endpoints_for(
        self,
        service: ServiceKey,
        port_name: str,
        subset_labels: Mapping[str, str] | None = None,
    ) -> tuple[Endpoint, ...]:
        """The endpoints of one service port, narrowed to a subset's labels when given."""
        return tuple(
            endpoint
            for endpoint in self.endpoints(service)
            if endpoint.service_port_name == port_name and endpoint.labels.matches(subset_labels)
        )

    def dump(self) -> dict[str, Any]:
        """A JSON-ready view for ``/debug/endpointShardz``: hostname → namespace → shards."""
        out: dict[str, Any] = {}
        for service in sorted(self._shards):
            shards = self._shards[service]
            out.setdefault(service.hostname, {})[service.namespace] = {
                "version": self._versions[service],
                "shards": {
                    str(key): [_endpoint_json(endpoint) for endpoint in shards[key]]
                    for key in sorted(shards)
                },
            }
        return out


def _endpoint_json(endpoint: Endpoint) -> dict[str, Any]:
    return {
        "address": endpoint.address,
        "port": endpoint.port,
        "servicePortName": endpoint.service_port_name,
        "labels": dict(endpoint.labels),
        "locality": endpoint.locality,
        "weight": endpoint.weight,
        "network": endpoint.network,
        "serviceAccount": endpoint.service_account,
    }
