"""The Kubernetes service registry: Services, EndpointSlices, Pods, Nodes and Namespaces in,
registry services and endpoints out, kept current from five :class:`KubeFeed`\\ s.

It writes into an :class:`EndpointIndex` it is given (the ServiceEntry registry's, so one
index holds every service's endpoints). A Kubernetes Service has one shard, keyed by its
own :attr:`ServiceKey.config_key`: the endpoints of its slices (each slice's kept, so a
change re-reads one slice), each (address, port, port name) once. Every
change is sorted as the ServiceEntry registry does:

- **full**: a Service's converted form changed
  (:mod:`pilothouse.registry.kubernetes.services`), or it was added or deleted; its
  slices' shards follow it (a deleted Service's are removed);
- **EDS only**: an EndpointSlice changed, or a Pod (labels, service account, readiness
  through its slice), or a Node's topology labels: only the slices that name them are
  read again (reverse indexes pod → slices, and node → pods in the
  :class:`~pilothouse.registry.kubernetes.pod_cache.PodCache`), and their services' shards
  rewritten (O(endpoints of the service)); an update only when the endpoints really
  changed; full for a headless Service with a non-HTTP port, whose endpoint addresses
  sidecars listen at, as istiod pushes it;
- **nothing**: no service and no endpoint changed (a Namespace event, a Pod status
  change the endpoints do not show).

Until :meth:`KubeRegistry.initial_load` runs, events only update what the registry holds
(no conversion): the informers' initial lists arrive as events in any order across
resources, and the initial load converts everything once.

A malformed object (no name, a port without a number, a field of the wrong JSON type) is
logged with its namespace/name, once per distinct problem, and kept out; the registry
keeps its last good state for it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pilothouse.config.validation.ports import is_http
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.kubernetes.endpoints import Slice, slice_endpoints, slice_of
from pilothouse.registry.kubernetes.feeds import KubeFeeds
from pilothouse.registry.kubernetes.pod_cache import PodCache
from pilothouse.registry.kubernetes.pods import NodeTopology, Pod, PodKey, node_topology, pod_of
from pilothouse.registry.kubernetes.services import (
    external_name_endpoints,
    is_external_name,
    service_key,
    service_of,
)
from pilothouse.registry.model import NO_LABELS, Endpoint, Labels, Service, ServiceKey
from pilothouse.registry.update import RegistryUpdate
from pilothouse.sources.kubernetes.events import KubeEvent, WatchEventType
from pilothouse.sources.kubernetes.skipped import SkippedObjects

log = logging.getLogger("pilothouse.registry.kubernetes")

_ObjectKey = tuple[str, str]
"""(namespace, name) of a namespaced object."""


def _object_key(obj: Mapping[str, Any]) -> _ObjectKey:
    metadata = obj.get("metadata") or {}
    return (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))


class KubeRegistry:
    """Services and endpoints from a Kubernetes cluster's informers.

    It subscribes to its feeds when built: build it before the informers start listing
    (an informer does not replay its cache to a late subscriber)."""

    def __init__(
        self,
        feeds: KubeFeeds,
        index: EndpointIndex,
        on_update: Callable[[RegistryUpdate], None],
        *,
        domain_suffix: str = "cluster.local",
        trust_domain: str = "cluster.local",
        cluster_id: str = "Kubernetes",
        on_pods: Callable[[frozenset[PodKey]], None] | None = None,
    ) -> None:
        """``on_pods`` hears of Pods whose view changed after the initial load: their
        labels, node or service account, their Node's topology, or their readiness in a
        slice (their sidecars' identity and inbound ports may follow)."""
        self._feeds = feeds
        self._on_pods = on_pods
        self._index = index
        self._on_update = on_update
        self.domain_suffix = domain_suffix
        self.trust_domain = trust_domain
        self.cluster_id = cluster_id
        self._service_objects: dict[_ObjectKey, Mapping[str, Any]] = {}
        self._services: dict[ServiceKey, Service] = {}
        self._ordered: tuple[Service, ...] | None = None
        self._slices: dict[_ObjectKey, Slice] = {}
        self._slices_by_service: dict[_ObjectKey, set[_ObjectKey]] = {}
        self._slices_by_pod: dict[PodKey, set[_ObjectKey]] = {}
        self._slice_endpoints: dict[_ObjectKey, list[Endpoint]] = {}
        self._slice_targets: dict[_ObjectKey, ServiceKey] = {}
        self._pods = PodCache(cluster_id)
        self._namespaces: dict[str, Labels] = {}
        self._loaded = False
        handlers: tuple[Callable[[KubeEvent], None], ...] = (
            self._on_service,
            self._on_slice,
            self._on_pod,
            self._on_node,
            self._on_namespace,
        )
        self._unsubscribe = [
            feed.subscribe(self._guarded(feed.resource, handler))
            for feed, handler in zip(feeds.all(), handlers, strict=True)
        ]

    # ---- reading --------------------------------------------------------------------

    @property
    def endpoint_index(self) -> EndpointIndex:
        return self._index

    def has_synced(self) -> bool:
        return all(feed.has_synced() for feed in self._feeds.all())

    def services(self) -> tuple[Service, ...]:
        """Every service, ordered by hostname then namespace."""
        if self._ordered is None:
            self._ordered = tuple(self._services[key] for key in sorted(self._services))
        return self._ordered

    def service(self, key: ServiceKey) -> Service | None:
        return self._services.get(key)

    def services_by_hostname(self, hostname: str) -> tuple[Service, ...]:
        # A Kubernetes hostname names its namespace: at most one service has it.
        namespace = hostname.split(".")[1] if hostname.count(".") >= 1 else ""
        found = self._services.get(ServiceKey(hostname, namespace))
        return (found,) if found is not None else ()

    def endpoints(self, key: ServiceKey) -> tuple[Endpoint, ...]:
        return self._index.endpoints(key)

    def namespace_labels(self, namespace: str) -> Labels:
        """The labels of Namespace ``namespace`` (none when unknown)."""
        return self._namespaces.get(namespace, NO_LABELS)

    def pod(self, namespace: str, name: str) -> Pod | None:
        """A live (not Failed) Pod by namespace and name."""
        return self._pods.get((namespace, name))

    def node_topology(self, name: str) -> NodeTopology:
        return self._pods.node(name)

    # ---- lifecycle ------------------------------------------------------------------

    def initial_load(self) -> RegistryUpdate | None:
        """Convert everything the feeds delivered so far; returns what changed, or None.
        It does not call ``on_update``: at start-up the caller pushes everything."""
        self._loaded = True
        changed: set[ServiceKey] = set()
        for key in sorted(self._service_objects):
            changed |= self._set_service(key)  # and the slices of each Service
        if not changed:
            return None
        return RegistryUpdate(True, frozenset(), frozenset(changed))

    def close(self) -> None:
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []

    def _guarded(
        self, resource: str, handler: Callable[[KubeEvent], None]
    ) -> Callable[[KubeEvent], None]:
        skipped = SkippedObjects(resource, log)

        def handle(event: KubeEvent) -> None:
            try:
                handler(event)
            except (AttributeError, KeyError, TypeError, ValueError) as problem:
                skipped.skip(
                    "object",
                    _object_key(event.obj),
                    f"{type(problem).__name__}: {str(problem)[:200]}",
                )

        return handle

    def _emit(self, full: bool, changed: set[ServiceKey]) -> None:
        if self._loaded and changed:
            full = full or any(self._listened_per_endpoint(key) for key in changed)
            self._on_update(RegistryUpdate(full, frozenset(), frozenset(changed)))

    def _listened_per_endpoint(self, key: ServiceKey) -> bool:
        """A headless Service with a non-HTTP port: sidecars listen at its endpoints'
        addresses, so its endpoints are part of their listeners (a full push, as
        istiod's for such a Service)."""
        service = self._services.get(key)
        return (
            service is not None
            and service.headless
            and any(p.protocol and not is_http(p.protocol) for p in service.ports)
        )

    def _emit_pods(self, pods: frozenset[PodKey]) -> None:
        if pods and self._on_pods is not None:
            self._on_pods(pods)

    # ---- Services -------------------------------------------------------------------

    def _on_service(self, event: KubeEvent) -> None:
        key = _object_key(event.obj)
        if event.type is WatchEventType.DELETED:
            if self._service_objects.pop(key, None) is None:
                return
        else:
            service_of(event.obj, self.domain_suffix, self.trust_domain)  # refuse it now
            self._service_objects[key] = event.obj
        if self._loaded:
            skey = self._service_key(key)
            before = self._services.get(skey)
            changed = self._set_service(key)
            after = self._services.get(skey)
            # A DNS service's endpoints travel in its clusters: a full push, as for any.
            full = before != after or (after is not None and after.resolution.endpoints_in_cluster)
            self._emit(full, changed)

    def _service_key(self, key: _ObjectKey) -> ServiceKey:
        namespace, name = key
        return service_key(name, namespace, self.domain_suffix)

    def _set_service(self, key: _ObjectKey) -> set[ServiceKey]:
        """Convert Service ``key`` again and follow it with its shards; returns the
        services whose definition or endpoints changed."""
        skey = self._service_key(key)
        obj = self._service_objects.get(key)
        old = self._services.get(skey)
        new = service_of(obj, self.domain_suffix, self.trust_domain) if obj is not None else None
        changed: set[ServiceKey] = set()
        if new != old:
            changed.add(skey)
            self._ordered = None
            if new is None:
                del self._services[skey]
            else:
                self._services[skey] = new
        for piece in self._slices_by_service.get(key, ()):
            self._touch_slice(piece)
        if self._write(skey):
            changed.add(skey)
        return changed

    # ---- EndpointSlices -------------------------------------------------------------

    def _on_slice(self, event: KubeEvent) -> None:
        key = _object_key(event.obj)
        old = self._slices.get(key)
        new = None if event.type is WatchEventType.DELETED else slice_of(event.obj)
        if old == new:
            return
        if old is not None:
            self._unindex_slice(key, old)
        if new is None:
            self._slices.pop(key, None)
        else:
            self._slices[key] = new
            self._index_slice(key, new)
        if self._loaded:
            self._emit(False, self._refresh_slices((key,)))
            self._emit_pods(_readiness_changes(key[0], old, new))

    def _index_slice(self, key: _ObjectKey, piece: Slice) -> None:
        if piece.service:
            self._slices_by_service.setdefault((piece.namespace, piece.service), set()).add(key)
        for pod in piece.pods:
            self._slices_by_pod.setdefault(pod, set()).add(key)

    def _unindex_slice(self, key: _ObjectKey, piece: Slice) -> None:
        if piece.service:
            _discard(self._slices_by_service, (piece.namespace, piece.service), key)
        for pod in piece.pods:
            _discard(self._slices_by_pod, pod, key)

    def _refresh_slices(self, keys: Iterable[_ObjectKey]) -> set[ServiceKey]:
        """Read these slices again and rewrite the shards they feed; returns the services
        whose endpoints changed."""
        touched: set[ServiceKey] = set()
        for key in keys:
            touched |= self._touch_slice(key)
        return {skey for skey in touched if self._write(skey)}

    def _touch_slice(self, key: _ObjectKey) -> set[ServiceKey]:
        """Make slice ``key``'s endpoints again from what is known now (held until its
        service's shard is written); returns the services whose shard it fed or feeds."""
        touched: set[ServiceKey] = set()
        held = self._slice_targets.pop(key, None)
        self._slice_endpoints.pop(key, None)
        if held is not None:
            touched.add(held)
        piece = self._slices.get(key)
        if piece is not None and piece.service:
            skey = service_key(piece.service, piece.namespace, self.domain_suffix)
            touched.add(skey)
            obj = self._service_objects.get((piece.namespace, piece.service))
            if skey in self._services and obj is not None and not is_external_name(obj):
                self._slice_endpoints[key] = slice_endpoints(
                    piece, self._pods.get, self._pods.at, self._pods.describe
                )
                self._slice_targets[key] = skey
        return touched

    def _write(self, skey: ServiceKey) -> bool:
        """Rewrite ``skey``'s one shard: an ExternalName Service's name, or the endpoints
        of its slices, each (address, port, port name) once (a Pod may sit in two slices
        for a moment during a rollout; istiod keys on address and port name alone, which
        would also merge two workloads sharing an address on different ports). True if
        that changed anything."""
        name = skey.hostname.split(".", 1)[0]
        obj_key = (skey.namespace, name)
        service = self._services.get(skey)
        obj = self._service_objects.get(obj_key)
        endpoints: list[Endpoint] | tuple[Endpoint, ...] = ()
        if service is not None and obj is not None:
            if is_external_name(obj):
                endpoints = external_name_endpoints(obj, service)
            else:
                endpoints = []
                seen: set[tuple[str, int, str]] = set()
                for piece in sorted(self._slices_by_service.get(obj_key, ())):
                    for endpoint in self._slice_endpoints.get(piece, ()):
                        mark = (endpoint.address, endpoint.port, endpoint.service_port_name)
                        if mark not in seen:
                            seen.add(mark)
                            endpoints.append(endpoint)
        # An empty shard is no shard: this also removes a deleted Service's.
        return self._index.update_shard(skey, skey.config_key, endpoints)

    # ---- Pods and Nodes -------------------------------------------------------------

    def _on_pod(self, event: KubeEvent) -> None:
        key = _object_key(event.obj)
        new = None if event.type is WatchEventType.DELETED else pod_of(event.obj)
        if new is not None and new.failed:
            new = None
        if not self._pods.put(key, new):
            return
        if self._loaded:
            self._emit(False, self._refresh_pods((key,)))
            self._emit_pods(frozenset({key}))

    def _refresh_pods(self, pods: tuple[PodKey, ...] | set[PodKey]) -> set[ServiceKey]:
        slices: set[_ObjectKey] = set()
        for pod in pods:
            slices |= self._slices_by_pod.get(pod, set())
        return self._refresh_slices(sorted(slices))

    def _on_node(self, event: KubeEvent) -> None:
        name = _object_key(event.obj)[1]
        new = None if event.type is WatchEventType.DELETED else node_topology(event.obj)
        if not self._pods.put_node(name, new):
            return
        if self._loaded:
            on_node = self._pods.on_node(name)
            self._emit(False, self._refresh_pods(on_node))
            self._emit_pods(frozenset(on_node))

    # ---- Namespaces -----------------------------------------------------------------

    def _on_namespace(self, event: KubeEvent) -> None:
        name = _object_key(event.obj)[1]
        if event.type is WatchEventType.DELETED:
            self._namespaces.pop(name, None)
            return
        labels = (event.obj.get("metadata") or {}).get("labels") or {}
        self._namespaces[name] = Labels.of({str(k): str(v) for k, v in labels.items()})


def _readiness_changes(namespace: str, old: Slice | None, new: Slice | None) -> frozenset[PodKey]:
    """The Pods whose readiness in a slice differs between ``old`` and ``new`` (appearing
    or leaving counts)."""
    before = {e.pod: e.ready for e in old.endpoints if e.pod} if old is not None else {}
    after = {e.pod: e.ready for e in new.endpoints if e.pod} if new is not None else {}
    return frozenset(
        (namespace, pod)
        for pod in before.keys() | after.keys()
        if before.get(pod) != after.get(pod)
    )


def _discard(index: dict[Any, set[Any]], key: Any, value: Any) -> None:
    held = index.get(key)
    if held is not None:
        held.discard(value)
        if not held:
            del index[key]
