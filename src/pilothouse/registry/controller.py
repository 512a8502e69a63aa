"""The ServiceEntry registry: services and endpoints kept current from a config store.

It listens to ServiceEntry and WorkloadEntry events and sorts every change into one of:

- **full**: a ServiceEntry's service-level content changed (hosts, ports, resolution,
  location, addresses, exportTo, workloadSelector, subjectAltNames), or it was added or
  deleted;
- **EDS only**: only endpoints changed (a ServiceEntry's inline ``endpoints``, or any
  WorkloadEntry change, including one whose labels move it between selectors); the endpoint
  index is updated before the callback runs;
- **nothing**: no service and no endpoint changed (e.g. a metadata-only edit).

A WorkloadEntry's update also names the entry as it was and as it is, and a full
ServiceEntry update the WorkloadEntries its selector picks before and after: the
sidecars that *are* those entries have inbound clusters and listeners that follow them
(:mod:`pilothouse.push.own_sidecars`).

Cost: a WorkloadEntry change looks up the ServiceEntries selecting it through a reverse
index (namespace → one label pair of each selector → ServiceEntries), so it costs
O(its labels + selecting entries + endpoints of the affected services).

Several ServiceEntries may declare the same host in one namespace: the service definition
is taken from the oldest (creation time, then namespace/name; entries without a creation
time last), and the endpoints of all of them are served (each is its own shard).

Events are applied to the registry's own state (what it holds for that key), not to the
event's ``old`` object. Until :meth:`ServiceEntryRegistry.initial_load` runs the registry
ignores events: the initial load reads the whole store anyway, so a source delivering
thousands of objects before the first PushContext costs one conversion per object, not two.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pilothouse.config.model import Config, ConfigKey
from pilothouse.registry.endpoint_index import DeferredShard, EndpointIndex
from pilothouse.registry.model import Endpoint, Labels, Service, ServiceKey, Workload
from pilothouse.registry.serviceentry import (
    SERVICE_ENTRY,
    WORKLOAD_ENTRY,
    inline_shards,
    services_of,
    workload_endpoints,
    workload_of,
)
from pilothouse.registry.update import RegistryUpdate
from pilothouse.sources.events import ConfigEvent, ConfigStore

_LabelPair = tuple[str, str]


@dataclass(frozen=True, slots=True)
class _Entry:
    """What one ServiceEntry contributes."""

    key: ConfigKey
    namespace: str
    services: tuple[Service, ...]
    selector: Labels | None
    inline: Mapping[ServiceKey, DeferredShard]


def _precedence(service: Service) -> tuple[bool, float, ConfigKey]:
    created: datetime.datetime | None = service.creation_time
    return (created is None, created.timestamp() if created else 0.0, service.source)


class ServiceEntryRegistry:
    """Services and endpoints from ServiceEntries and WorkloadEntries in ``store``."""

    def __init__(self, store: ConfigStore, on_update: Callable[[RegistryUpdate], None]) -> None:
        self._store = store
        self._on_update = on_update
        self._index = EndpointIndex()
        self._entries: dict[ConfigKey, _Entry] = {}
        self._candidates: dict[ServiceKey, dict[ConfigKey, Service]] = {}
        self._services: dict[ServiceKey, Service] = {}
        self._by_hostname: dict[str, dict[str, Service]] = {}
        self._ordered: tuple[Service, ...] | None = None
        # namespace → first pair of a selector (None for an empty one) → ServiceEntries
        self._selecting: dict[str, dict[_LabelPair | None, set[ConfigKey]]] = {}
        self._workloads: dict[ConfigKey, Workload] = {}
        # namespace → label pair (None for all) → WorkloadEntries
        self._workloads_by_label: dict[str, dict[_LabelPair | None, set[ConfigKey]]] = {}
        self._workload_services: dict[ConfigKey, frozenset[ServiceKey]] = {}
        self._loaded = False
        self._unsubscribe: Callable[[], None] | None = store.subscribe(self._on_event)

    # ---- reading --------------------------------------------------------------------

    @property
    def endpoint_index(self) -> EndpointIndex:
        return self._index

    def has_synced(self) -> bool:
        return self._store.has_synced()

    def services(self) -> tuple[Service, ...]:
        """Every service, ordered by hostname then namespace."""
        if self._ordered is None:
            self._ordered = tuple(self._services[key] for key in sorted(self._services))
        return self._ordered

    def service(self, key: ServiceKey) -> Service | None:
        return self._services.get(key)

    def services_by_hostname(self, hostname: str) -> tuple[Service, ...]:
        """The services named ``hostname``, one per declaring namespace, by namespace."""
        found = self._by_hostname.get(hostname)
        if not found:
            return ()
        return tuple(found[namespace] for namespace in sorted(found))

    def endpoints(self, key: ServiceKey) -> tuple[Endpoint, ...]:
        return self._index.endpoints(key)

    def selected_workloads(self, entry: ConfigKey) -> tuple[ConfigKey, ...]:
        """The WorkloadEntries a ServiceEntry's selector picks now, in order."""
        held = self._entries.get(entry)
        return tuple(sorted(self._workloads_selected_by(held))) if held else ()

    # ---- lifecycle ------------------------------------------------------------------

    def initial_load(self) -> RegistryUpdate | None:
        """Bring the registry in line with everything in the store now.

        Returns what changed (merged into one update), or None. It does not call
        ``on_update``: at start-up the caller pushes everything anyway.
        """
        self._loaded = True
        full = False
        config_keys: set[ConfigKey] = set()
        services: set[ServiceKey] = set()
        for kind, held, apply in (
            (SERVICE_ENTRY, self._entries, self._set_entry),
            (WORKLOAD_ENTRY, self._workloads, self._set_workload),
        ):
            present = self._store.configs(kind)
            wanted = {config.key for config in present}
            updates = [apply(key, None) for key in sorted(set(held) - wanted)]
            updates += [apply(config.key, config) for config in present]
            for update in updates:
                if update is not None:
                    full = full or update.full
                    config_keys |= update.config_keys
                    services |= update.services
        if not config_keys:
            return None
        return RegistryUpdate(full, frozenset(config_keys), frozenset(services))

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _on_event(self, event: ConfigEvent) -> None:
        if not self._loaded:
            return
        if event.key.kind == SERVICE_ENTRY:
            update = self._set_entry(event.key, event.new)
        elif event.key.kind == WORKLOAD_ENTRY:
            update = self._set_workload(event.key, event.new)
        else:
            return
        if update is None:
            return
        if not update.full and self._in_clusters(update.services):
            # A DNS service's endpoints are part of its clusters (CDS), which the EDS
            # fast path does not resend: the proxies need a full push, as istiod does.
            update = RegistryUpdate(True, update.config_keys, update.services, update.workloads)
        self._on_update(update)

    def _in_clusters(self, keys: frozenset[ServiceKey]) -> bool:
        """Whether any of these services carries its endpoints inside its clusters."""
        for key in keys:
            service = self._services.get(key)
            if service is not None and service.resolution.endpoints_in_cluster:
                return True
        return False

    # ---- ServiceEntry ---------------------------------------------------------------

    def _set_entry(self, key: ConfigKey, config: Config | None) -> RegistryUpdate | None:
        old = self._entries.get(key)
        new = None
        if config is not None:
            services = services_of(config)
            new = _Entry(
                key=key,
                namespace=config.namespace,
                services=services,
                selector=services[0].workload_selector if services else None,
                inline=inline_shards(config, services),
            )
        if old is None and new is None:
            return None
        old_services = old.services if old is not None else ()
        new_services = new.services if new is not None else ()
        old_selector = old.selector if old is not None else None
        new_selector = new.selector if new is not None else None
        full = old is None or new is None or old_services != new_services
        full = full or old_selector != new_selector

        changed: set[ServiceKey] = set()
        if full:
            if old is None:
                changed.update(service.key for service in new_services)
            else:
                changed |= {service.key for service in set(old_services) ^ set(new_services)}
            self._replace_candidates(key, old_services, new_services)
            if old is not None:
                self._unindex_selector(old)
        if new is None:
            del self._entries[key]
        else:
            self._entries[key] = new
            if full:
                self._index_selector(new)

        old_inline = old.inline if old is not None else {}
        new_inline = new.inline if new is not None else {}
        for service_key, deferred in new_inline.items():
            if self._index.defer_shard(service_key, key, deferred):
                changed.add(service_key)
        for service_key in old_inline.keys() - new_inline.keys():
            if self._index.delete_shard(service_key, key):
                changed.add(service_key)

        if full:
            workloads = set()
            if old is not None:
                workloads |= self._workloads_selected_by(old)
            if new is not None:
                workloads |= self._workloads_selected_by(new)
            for workload in sorted(workloads):
                changed |= self._refresh_workload(workload)
            return RegistryUpdate(
                True, frozenset({key}), frozenset(changed), self._workloads_of(workloads)
            )
        if changed:
            return RegistryUpdate(False, frozenset({key}), frozenset(changed))
        return None

    def _workloads_of(self, keys: set[ConfigKey]) -> frozenset[Workload]:
        """These WorkloadEntries (their sidecars' inbound ports follow the services
        selecting them)."""
        held = (self._workloads.get(key) for key in keys)
        return frozenset(workload for workload in held if workload is not None)

    def _replace_candidates(
        self, key: ConfigKey, old: tuple[Service, ...], new: tuple[Service, ...]
    ) -> None:
        touched: set[ServiceKey] = set()
        for service in old:
            candidates = self._candidates.get(service.key)
            if candidates is not None:
                candidates.pop(key, None)
                touched.add(service.key)
        for service in new:
            self._candidates.setdefault(service.key, {})[key] = service
            touched.add(service.key)
        for service_key in touched:
            candidates = self._candidates.get(service_key)
            by_namespace = self._by_hostname.setdefault(service_key.hostname, {})
            if candidates:
                winner = min(candidates.values(), key=_precedence)
                self._services[service_key] = winner
                by_namespace[service_key.namespace] = winner
            else:
                self._candidates.pop(service_key, None)
                self._services.pop(service_key, None)
                by_namespace.pop(service_key.namespace, None)
            if not by_namespace:
                del self._by_hostname[service_key.hostname]
        self._ordered = None

    def _index_selector(self, entry: _Entry) -> None:
        if entry.selector is None:
            return
        pair = entry.selector.pairs[0] if entry.selector.pairs else None
        self._selecting.setdefault(entry.namespace, {}).setdefault(pair, set()).add(entry.key)

    def _unindex_selector(self, entry: _Entry) -> None:
        if entry.selector is None:
            return
        pair = entry.selector.pairs[0] if entry.selector.pairs else None
        by_pair = self._selecting.get(entry.namespace, {})
        keys = by_pair.get(pair)
        if keys is not None:
            keys.discard(entry.key)
            if not keys:
                del by_pair[pair]
            if not by_pair:
                self._selecting.pop(entry.namespace, None)

    def _workloads_selected_by(self, entry: _Entry) -> set[ConfigKey]:
        selector = entry.selector
        if selector is None:
            return set()
        by_label = self._workloads_by_label.get(entry.namespace)
        if not by_label:
            return set()
        if not selector.pairs:
            return set(by_label.get(None, ()))
        smallest = min((by_label.get(pair, set()) for pair in selector.pairs), key=len)
        return {key for key in smallest if self._workloads[key].labels.matches(selector)}

    # ---- WorkloadEntry --------------------------------------------------------------

    def _set_workload(self, key: ConfigKey, config: Config | None) -> RegistryUpdate | None:
        old = self._workloads.get(key)
        new = workload_of(config) if config is not None else None
        if old == new:
            return None
        if old is not None:
            self._unindex_workload(old)
        if new is None:
            del self._workloads[key]
        else:
            self._workloads[key] = new
            self._index_workload(new)
        changed = self._refresh_workload(key)
        if not changed:
            return None
        own = frozenset(workload for workload in (old, new) if workload is not None)
        return RegistryUpdate(False, frozenset({key}), frozenset(changed), own)

    def _index_workload(self, workload: Workload) -> None:
        by_label = self._workloads_by_label.setdefault(workload.namespace, {})
        for pair in (None, *workload.labels.pairs):
            by_label.setdefault(pair, set()).add(workload.source)

    def _unindex_workload(self, workload: Workload) -> None:
        by_label = self._workloads_by_label.get(workload.namespace, {})
        for pair in (None, *workload.labels.pairs):
            keys = by_label.get(pair)
            if keys is not None:
                keys.discard(workload.source)
                if not keys:
                    del by_label[pair]
        if not by_label:
            self._workloads_by_label.pop(workload.namespace, None)

    def _entries_selecting(self, workload: Workload) -> list[_Entry]:
        by_pair = self._selecting.get(workload.namespace)
        if not by_pair:
            return []
        keys = set(by_pair.get(None, ()))
        for pair in workload.labels.pairs:
            keys |= by_pair.get(pair, set())
        entries = (self._entries[key] for key in sorted(keys))
        return [
            entry
            for entry in entries
            if entry.selector is not None and workload.labels.matches(entry.selector)
        ]

    def _refresh_workload(self, key: ConfigKey) -> set[ServiceKey]:
        """Rewrite the shards of WorkloadEntry ``key``; returns the services that changed."""
        workload = self._workloads.get(key)
        wanted: dict[ServiceKey, list[Endpoint]] = {}
        if workload is not None:
            for entry in self._entries_selecting(workload):
                for service in entry.services:
                    wanted.setdefault(service.key, []).extend(workload_endpoints(workload, service))
        changed: set[ServiceKey] = set()
        for service_key, endpoints in wanted.items():
            if self._index.update_shard(service_key, key, endpoints):
                changed.add(service_key)
        for service_key in self._workload_services.get(key, frozenset()) - wanted.keys():
            if self._index.delete_shard(service_key, key):
                changed.add(service_key)
        if wanted:
            self._workload_services[key] = frozenset(wanted)
        else:
            self._workload_services.pop(key, None)
        return changed
