"""The endpoint index: every service's endpoints, in shards by the config they came from.

A shard is what one config contributes to one service: a ServiceEntry's inline endpoints,
or one WorkloadEntry's endpoints. Changing one workload touches one shard, so an endpoint
change costs O(endpoints of the service), never a rebuild of the registry (the EDS fast
path).

Each service has a version that increases on every real change of its endpoints (a write
that changes nothing keeps it). Versions come from one counter for the whole index, so a
version is never reused, even after a service's endpoints are removed and come back: a
cache may key on ``(service, version)``.

A shard may be **deferred** (:class:`DeferredShard`): a fingerprint of what it is made
from and a function that makes its endpoints on first read. A ServiceEntry's inline
endpoints are written this way, so loading 100,000 entries does not build 400,000
endpoint objects before anyone asks for them; whether a new version changed anything is
decided by comparing fingerprints (the entries' ports and endpoint messages).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pilothouse.config.model import ConfigKey
from pilothouse.registry.model import Endpoint, ServiceKey


def _canonical(endpoints: Iterable[Endpoint]) -> tuple[Endpoint, ...]:
    """Endpoints in one order whatever order they came in; identical ones kept once."""
    return tuple(sorted(set(endpoints), key=Endpoint.sort_key))


@dataclass(eq=False, slots=True)
class DeferredShard:
    """A shard's endpoints, made by ``make`` when first read.

    ``fingerprint`` stands for everything the endpoints are made from: two deferred
    shards with equal fingerprints make the same endpoints. ``make`` must return at
    least one endpoint (an empty shard is no shard, and is not deferred).
    """

    fingerprint: object
    make: Callable[[], Iterable[Endpoint]]
    _made: tuple[Endpoint, ...] | None = None

    def endpoints(self) -> tuple[Endpoint, ...]:
        if self._made is None:
            self._made = _canonical(self.make())
        return self._made


_Shard = tuple[Endpoint, ...] | DeferredShard


def _content(shard: _Shard) -> tuple[Endpoint, ...]:
    return shard.endpoints() if isinstance(shard, DeferredShard) else shard


class EndpointIndex:
    """Endpoints per service, per shard. Single-threaded: call it from the event loop."""

    def __init__(self) -> None:
        self._shards: dict[ServiceKey, dict[ConfigKey, _Shard]] = {}
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
        held = shards.get(shard) if shards is not None else None
        if held is not None and _content(held) == ordered:
            return False
        if shards is None:
            shards = self._shards[service] = {}
        shards[shard] = ordered
        self._changed(service)
        return True

    def defer_shard(self, service: ServiceKey, shard: ConfigKey, deferred: DeferredShard) -> bool:
        """Make ``deferred`` the content of ``shard``; True if that changed anything.

        A new shard stays unmade. Replacing a shard compares fingerprints, and only when
        they differ the endpoints themselves (reordered entries make the same ones)."""
        shards = self._shards.get(service)
        held = shards.get(shard) if shards is not None else None
        if isinstance(held, DeferredShard) and held.fingerprint == deferred.fingerprint:
            return False
        if shards is None:
            shards = self._shards[service] = {}
        shards[shard] = deferred
        if held is not None and _content(held) == deferred.endpoints():
            return False
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

    @property
    def revision(self) -> int:
        """Moves whenever any service's endpoints change (the newest version)."""
        return self._clock

    def services(self) -> tuple[ServiceKey, ...]:
        """The services that have endpoints, in order."""
        return tuple(sorted(self._shards))

    def shards(self, service: ServiceKey) -> Mapping[ConfigKey, tuple[Endpoint, ...]]:
        """A read-only view of ``service``'s shards."""
        shards = self._shards.get(service, {})
        return MappingProxyType({key: _content(shard) for key, shard in shards.items()})

    def endpoints(self, service: ServiceKey) -> tuple[Endpoint, ...]:
        """Every endpoint of ``service``: shards in key order, each shard in endpoint order."""
        merged = self._merged.get(service)
        if merged is None:
            shards = self._shards.get(service)
            if not shards:
                return ()
            merged = tuple(endpoint for key in sorted(shards) for endpoint in _content(shards[key]))
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
                    str(key): [_endpoint_json(endpoint) for endpoint in _content(shards[key])]
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
