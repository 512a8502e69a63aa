"""Kubernetes Pods and Services in node sets: a node's Pods by ``status.hostIP``, and the
Services selecting them.

When ``serve`` reads a Kubernetes cluster (a ``k8s://`` source, with the service registry
on), a node's set also holds, beside its WorkloadEntries and their policies:

- **Pods** whose ``status.hostIP`` is one of the node's addresses, in their minimal shape:
  name, namespace, labels, ``spec.serviceAccountName``, ``spec.nodeName``,
  ``status.hostIP`` and ``status.podIPs`` (no containers, volumes or conditions: the
  seed's point is that an agent gets what concerns its node, not the API server's
  100 MB). The policies of the set select them by their labels, as WorkloadEntries.
- **Services** of a Pod's (or WorkloadEntry's) namespace whose ``spec.selector`` matches
  its labels, their ``spec`` as the API server has it. A Service without a selector
  selects nothing, and one in the root namespace is no more mesh-wide than any other.

On the wire their type names are Istio's for the core kinds, ``core/v1/Pod`` and
``core/v1/Service``; each resource is an ``istio.mcp.v1alpha1.Resource`` named
``ns/name`` whose body is a ``google.protobuf.Struct`` of the object's JSON (there is no
protobuf of Kubernetes' own kinds here), as the Gateway API kinds travel.

:class:`KubeNodeObjects` follows the registry's Pod and Service informers (the ones
``serve`` already runs) and hands on each change as a
:class:`~pilothouse.sources.events.ConfigEvent` of a :class:`Config` whose spec is that
``Struct``. An update that leaves the minimal shape as it was (a status heartbeat, a
new ``resourceVersion``) is dropped, so it wakes no agent. A malformed object is logged
once and skipped; what was held for it stays.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from google.protobuf import struct_pb2
from google.protobuf.message import DecodeError

from pilothouse.api.istio.mcp.v1alpha1 import resource_pb2
from pilothouse.config.mcp_resource import STRUCT_TYPE_URL, UNNAMED, Rejection, split_name
from pilothouse.config.model import Config, ConfigKey, Origin
from pilothouse.kinds import service
from pilothouse.registry.kubernetes.feeds import KubeFeeds
from pilothouse.registry.kubernetes.pods import pod_of
from pilothouse.sources.events import ConfigEvent, EventType
from pilothouse.sources.kubernetes.events import KubeEvent, KubeFeed, WatchEventType
from pilothouse.sources.kubernetes.skipped import SkippedObjects

log = logging.getLogger("pilothouse.nodesets.kubernetes")

POD_KIND: Final = "Pod"
SERVICE_KIND: Final = service.KIND.name
KUBE_TYPES: Final[Mapping[str, str]] = {
    "core/v1/Pod": POD_KIND,
    "core/v1/Service": SERVICE_KIND,
}
"""The node set's type names of Kubernetes' own kinds, and their kinds."""

def _struct(value: Mapping[str, Any]) -> struct_pb2.Struct:
    made = struct_pb2.Struct()
    made.update(value)
    return made


def pod_config(obj: Mapping[str, Any]) -> Config | None:
    """A Pod object in its node-set shape; None for a Failed Pod (not a workload).
    KeyError, TypeError or ValueError for a malformed one."""
    pod = pod_of(obj)
    if pod.failed:
        return None
    shape: dict[str, Any] = {
        "spec": {"serviceAccountName": pod.service_account, "nodeName": pod.node_name},
        "status": {"hostIP": pod.host_ip, "podIPs": [{"ip": ip} for ip in pod.ips]},
    }
    return Config(POD_KIND, pod.name, pod.namespace, _struct(shape), dict(pod.labels.pairs))


def service_config(obj: Mapping[str, Any]) -> Config:
    """A Service object in its node-set shape (KeyError, TypeError or ValueError for a
    malformed one)."""
    metadata = obj["metadata"]
    spec = obj.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise TypeError(f"spec is {type(spec).__name__}, not an object")
    labels = {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()}
    shape = {"spec": dict(spec)}
    return Config(
        SERVICE_KIND, str(metadata["name"]), str(metadata["namespace"]), _struct(shape), labels
    )


def _field(config: Config, part: str, name: str) -> Any:
    spec = config.spec
    if not isinstance(spec, struct_pb2.Struct) or part not in spec.fields:
        return None
    inner = spec.fields[part]
    if inner.WhichOneof("kind") != "struct_value" or name not in inner.struct_value.fields:
        return None
    return inner.struct_value.fields[name]


def pod_address(config: Config) -> str:
    """Where a node-set Pod runs: its ``status.hostIP`` ("" while it has none)."""
    value = _field(config, "status", "hostIP")
    return str(value.string_value) if value is not None else ""


def pod_service_account(config: Config) -> str:
    value = _field(config, "spec", "serviceAccountName")
    return str(value.string_value) if value is not None else ""


def service_selector(config: Config) -> Mapping[str, str] | None:
    """A node-set Service's ``spec.selector``; None when it has none (it selects
    nothing)."""
    value = _field(config, "spec", "selector")
    if value is None or value.WhichOneof("kind") != "struct_value":
        return None
    found = {k: v.string_value for k, v in value.struct_value.fields.items()}
    return found or None


def decode_kube_resource(kind: str, value: bytes, origin: Origin) -> Config | Rejection:
    """One serialized ``Resource`` of a Kubernetes kind of the node set, as the agent
    receives it: a Config whose spec is the body's ``Struct``, or why it was refused."""
    try:
        resource = resource_pb2.Resource.FromString(value)
    except DecodeError as problem:
        return Rejection(UNNAMED, f"not an MCP Resource: {problem}", undecodable=True)
    name = resource.metadata.name or UNNAMED
    parts = split_name(resource.metadata.name)
    if parts is None:
        return Rejection(name, f"a {kind} is named <namespace>/<name>")
    if resource.body.type_url != STRUCT_TYPE_URL:
        return Rejection(
            name, f"body type {resource.body.type_url!r}; expected {STRUCT_TYPE_URL}", True
        )
    try:
        spec = struct_pb2.Struct.FromString(resource.body.value)
    except DecodeError as problem:
        return Rejection(name, f"body is not a google.protobuf.Struct: {problem}", True)
    labels = dict(resource.metadata.labels)
    return Config(kind, parts[1], parts[0], spec, labels, origin=origin)


class KubeNodeObjects:
    """The cluster's Pods and Services in their node-set shape, from the registry's
    informers; it subscribes when built (before the informers list)."""

    def __init__(self, feeds: KubeFeeds, on_event: Callable[[ConfigEvent], None]) -> None:
        self._feeds = (feeds.pods, feeds.services)
        self._on_event = on_event
        self._held: dict[ConfigKey, Config] = {}
        self._revision = 0
        self._unsubscribe = [
            self._follow(feeds.pods, POD_KIND, pod_config),
            self._follow(feeds.services, SERVICE_KIND, service_config),
        ]

    def has_synced(self) -> bool:
        return all(feed.has_synced() for feed in self._feeds)

    def configs(self) -> list[Config]:
        return list(self._held.values())

    def close(self) -> None:
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []

    def _follow(
        self,
        feed: KubeFeed,
        kind: str,
        shape: Callable[[Mapping[str, Any]], Config | None],
    ) -> Callable[[], None]:
        skipped = SkippedObjects(feed.resource, log)

        def handle(event: KubeEvent) -> None:
            metadata = event.obj.get("metadata") or {}
            where = (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
            key = ConfigKey(kind, *where)
            try:
                new = None if event.type is WatchEventType.DELETED else shape(event.obj)
            except (AttributeError, KeyError, TypeError, ValueError) as problem:
                skipped.skip("object", where, f"{type(problem).__name__}: {str(problem)[:200]}")
                return
            self._changed(key, new)

        return feed.subscribe(handle)

    def _changed(self, key: ConfigKey, new: Config | None) -> None:
        old = self._held.get(key)
        if old == new:
            return
        if new is None:
            del self._held[key]
            change = EventType.DELETE
        else:
            self._held[key] = new
            change = EventType.ADD if old is None else EventType.UPDATE
        self._revision += 1
        self._on_event(ConfigEvent(change, key, old, new, self._revision))
