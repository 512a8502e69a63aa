"""In-memory Kubernetes feeds and object builders for the registry's tests.

A :class:`MemoryFeed` stands in for an informer of a Kubernetes API server, which cannot
run here: it keeps objects by namespace/name and delivers ADDED / MODIFIED / DELETED
events to its subscribers, synchronously, as the :class:`KubeFeed` contract says. The
builders write objects as the API server's JSON (the fields the registry reads).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from pilothouse.registry.kubernetes.feeds import KubeFeeds
from pilothouse.sources.kubernetes.events import KubeEvent, KubeHandler, WatchEventType


class MemoryFeed:
    """A KubeFeed over a dict; ``apply`` and ``delete`` emit the events."""

    def __init__(self, resource: str, *, synced: bool = True) -> None:
        self._resource = resource
        self._objects: dict[tuple[str, str], dict[str, Any]] = {}
        self._handlers: list[KubeHandler] = []
        self._synced = synced
        self._version = 0

    @property
    def resource(self) -> str:
        return self._resource

    def subscribe(self, handler: KubeHandler) -> Callable[[], None]:
        self._handlers.append(handler)
        for obj in list(self._objects.values()):
            handler(KubeEvent(WatchEventType.ADDED, obj))
        return lambda: self._handlers.remove(handler)

    def has_synced(self) -> bool:
        return self._synced

    def mark_synced(self) -> None:
        self._synced = True

    def apply(self, obj: dict[str, Any]) -> None:
        obj = copy.deepcopy(obj)
        metadata = obj["metadata"]
        self._version += 1
        metadata["resourceVersion"] = str(self._version)
        key = (metadata.get("namespace", ""), metadata["name"])
        kind = WatchEventType.MODIFIED if key in self._objects else WatchEventType.ADDED
        self._objects[key] = obj
        self._send(KubeEvent(kind, obj))

    def delete(self, namespace: str, name: str) -> None:
        obj = self._objects.pop((namespace, name))
        self._send(KubeEvent(WatchEventType.DELETED, obj))

    def get(self, namespace: str, name: str) -> dict[str, Any]:
        return copy.deepcopy(self._objects[(namespace, name)])

    def _send(self, event: KubeEvent) -> None:
        for handler in list(self._handlers):
            handler(event)


class MemoryCluster:
    """Five memory feeds, as the registry takes them."""

    def __init__(self, *, synced: bool = True) -> None:
        self.services = MemoryFeed("services", synced=synced)
        self.endpointslices = MemoryFeed("endpointslices.discovery.k8s.io", synced=synced)
        self.pods = MemoryFeed("pods", synced=synced)
        self.nodes = MemoryFeed("nodes", synced=synced)
        self.namespaces = MemoryFeed("namespaces", synced=synced)

    def feeds(self) -> KubeFeeds:
        return KubeFeeds(self.services, self.endpointslices, self.pods, self.nodes, self.namespaces)

    def mark_synced(self) -> None:
        for feed in (self.services, self.endpointslices, self.pods, self.nodes, self.namespaces):
            feed.mark_synced()


def service(
    name: str,
    namespace: str,
    ports: list[dict[str, Any]],
    *,
    selector: Mapping[str, str] | None = None,
    cluster_ip: str = "10.96.0.10",
    kind: str = "ClusterIP",
    external_name: str = "",
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": kind, "ports": ports}
    if kind == "ExternalName":
        spec["externalName"] = external_name
    else:
        spec["clusterIP"] = cluster_ip
        if cluster_ip != "None":
            spec["clusterIPs"] = [cluster_ip]
    if selector is not None:
        spec["selector"] = dict(selector)
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}


def endpoint_slice(
    name: str,
    namespace: str,
    service_name: str,
    ports: list[tuple[str, int]],
    endpoints: list[tuple[str, str | None, bool]],
) -> dict[str, Any]:
    """``endpoints``: (address, pod name or None, ready)."""
    entries = []
    for address, pod, ready in endpoints:
        entry: dict[str, Any] = {
            "addresses": [address],
            "conditions": {"ready": ready, "serving": ready, "terminating": False},
        }
        if pod is not None:
            entry["targetRef"] = {"kind": "Pod", "namespace": namespace, "name": pod}
        entries.append(entry)
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"kubernetes.io/service-name": service_name},
        },
        "addressType": "IPv4",
        "ports": [{"name": named, "port": number, "protocol": "TCP"} for named, number in ports],
        "endpoints": entries,
    }


def pod(
    name: str,
    namespace: str,
    ip: str,
    labels: Mapping[str, str],
    *,
    service_account: str = "default",
    node: str = "",
    ready: bool = True,
    container_ports: list[dict[str, Any]] | None = None,
    host_ip: str = "",
) -> dict[str, Any]:
    """``host_ip``: ``status.hostIP`` (left out when empty)."""
    made: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "serviceAccountName": service_account,
            "nodeName": node,
            "containers": [{"name": "app", "ports": container_ports or []}],
        },
        "status": {
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }
    if host_ip:
        made["status"]["hostIP"] = host_ip
    return made


def node(name: str, region: str, zone: str, subzone: str = "") -> dict[str, Any]:
    labels = {"topology.kubernetes.io/region": region, "topology.kubernetes.io/zone": zone}
    if subzone:
        labels["topology.istio.io/subzone"] = subzone
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def namespace(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    metadata = {"name": name, "labels": dict(labels or {})}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}
