"""The connected sidecars of each Pod, so that a Pod change reaches them (istiod's ProxyUpdate).

A sidecar matched to its Pod (:mod:`pilothouse.kube.pods_proxy`) takes its labels,
service account and locality from it. When the Pod changes (labels, node, readiness),
:meth:`PodSidecars.changed` completes each of its connections again and returns them, for
the discovery server to push: their own listeners (inbound ports follow the Pod's
endpoints) may have moved while only EDS went to everyone else. Connections are kept by
proxy id (``<pod>.<namespace>``), so a Pod change finds its sidecars without walking
every connection.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, Protocol, TypeVar

from pilothouse.kube.pods_proxy import proxy_with_pod
from pilothouse.kube.registry import KubeRegistry
from pilothouse.push.proxy import ProxyIdentity


class Sidecar(Protocol):
    """A connection as seen here: who it is, and how it learns it is someone new."""

    @property
    def proxy(self) -> ProxyIdentity: ...

    def reidentify(self, proxy: ProxyIdentity) -> None: ...


S = TypeVar("S", bound=Sidecar)


class PodSidecars(Generic[S]):
    """Connections by proxy id, completed from the Kubernetes registry's Pods."""

    def __init__(self, registry: KubeRegistry) -> None:
        self._registry = registry
        self._by_proxy_id: dict[str, set[S]] = {}

    def complete(self, proxy: ProxyIdentity) -> ProxyIdentity:
        """``proxy`` with its Pod's labels, service account and locality (unchanged when
        no Pod matches it)."""
        return proxy_with_pod(self._registry, proxy)

    def connect(self, connection: S) -> None:
        self._by_proxy_id.setdefault(connection.proxy.id, set()).add(connection)

    def disconnect(self, connection: S) -> None:
        held = self._by_proxy_id.get(connection.proxy.id)
        if held is not None:
            held.discard(connection)
            if not held:
                del self._by_proxy_id[connection.proxy.id]

    def changed(self, pods: Iterable[tuple[str, str]]) -> list[S]:
        """The connections of the sidecars of ``pods`` (namespace, name), each completed
        again from its Pod as it is now."""
        found = [
            connection
            for namespace, name in pods
            for connection in self._by_proxy_id.get(f"{name}.{namespace}", ())
        ]
        for connection in found:
            proxy = proxy_with_pod(self._registry, connection.proxy)
            if proxy != connection.proxy:
                connection.reidentify(proxy)
        return found
