"""The five Kubernetes resources the service registry reads, as informers and as feeds.

``serve`` (once the registry is wired in) builds these from one API client and hands them
to the registry as :class:`KubeFeeds`: one
:class:`~pilothouse.sources.kubernetes.events.KubeFeed` per resource, taken by resource
name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pilothouse.backoff import Backoff
from pilothouse.sources.kubernetes.client import ResourceRef
from pilothouse.sources.kubernetes.events import KubeFeed
from pilothouse.sources.kubernetes.informer import Informer

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient

SERVICES = ResourceRef("", "v1", "services")
ENDPOINT_SLICES = ResourceRef("discovery.k8s.io", "v1", "endpointslices")
PODS = ResourceRef("", "v1", "pods")
NODES = ResourceRef("", "v1", "nodes", namespaced=False)
NAMESPACES = ResourceRef("", "v1", "namespaces", namespaced=False)

REGISTRY_RESOURCES: tuple[ResourceRef, ...] = (SERVICES, ENDPOINT_SLICES, PODS, NODES, NAMESPACES)


def registry_informers(
    client: ApiClient | None, *, backoff: Backoff | None = None, absent_retry: float = 30.0
) -> dict[str, Informer]:
    """One informer per registry resource (not started), by resource name
    (``services``, ``endpointslices.discovery.k8s.io``, ``pods``, ``nodes``,
    ``namespaces``). Pods in phase Failed are left out on the server, as istiod does.
    Without a ``client``, each is given one later (:meth:`Informer.connect`)."""
    informers: dict[str, Informer] = {}
    for ref in REGISTRY_RESOURCES:
        selector = "status.phase!=Failed" if ref is PODS else ""
        informers[ref.name] = Informer(
            client, ref, field_selector=selector, backoff=backoff, absent_retry=absent_retry
        )
    return informers


@dataclass(frozen=True, slots=True)
class KubeFeeds:
    """The five resources the registry reads, one feed (informer) each."""

    services: KubeFeed
    endpointslices: KubeFeed
    pods: KubeFeed
    nodes: KubeFeed
    namespaces: KubeFeed

    def all(self) -> tuple[KubeFeed, ...]:
        return (self.services, self.endpointslices, self.pods, self.nodes, self.namespaces)

    @classmethod
    def by_resource(cls, feeds: Mapping[str, KubeFeed]) -> KubeFeeds:
        """The five from feeds keyed by resource name (``services``,
        ``endpointslices.discovery.k8s.io``, ``pods``, ``nodes``, ``namespaces``); raises
        KeyError naming a missing one."""
        return cls(
            services=feeds["services"],
            endpointslices=feeds["endpointslices.discovery.k8s.io"],
            pods=feeds["pods"],
            nodes=feeds["nodes"],
            namespaces=feeds["namespaces"],
        )
