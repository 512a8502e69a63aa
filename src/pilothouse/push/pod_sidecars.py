"""The connected sidecars of each Pod, so that a Pod change reaches them (istiod's ProxyUpdate).

A sidecar matched to its Pod (:mod:`pilothouse.push.pods_proxy`) takes its labels,
service account and locality from it. When the Pod changes (labels, node, readiness),
:meth:`PodSidecars.changed` completes each of its connections again and returns them with
the push each gets (:func:`~pilothouse.push.own_sidecars.proxy_update`), for the
push service to queue at once: their own listeners (inbound ports follow the Pod's
endpoints) may have moved while only EDS went to everyone else. The connections are
found by proxy id (``<pod>.<namespace>``) in :class:`~pilothouse.push.own_sidecars.OwnSidecars`,
the index WorkloadEntries' sidecars are found in too (by namespace and IP), so a Pod
change finds its sidecars without walking every connection.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, Protocol, TypeVar

from pilothouse.config.model import ConfigKey
from pilothouse.push.own_sidecars import OwnSidecars, proxy_update
from pilothouse.push.pods_proxy import proxy_with_pod
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.request import PushRequest
from pilothouse.registry.kubernetes.registry import KubeRegistry


class Sidecar(Protocol):
    """A connection as seen here: who it is, and how it learns it is someone new."""

    @property
    def proxy(self) -> ProxyIdentity: ...

    def reidentify(self, proxy: ProxyIdentity) -> None: ...


S = TypeVar("S", bound=Sidecar)


class PodSidecars(Generic[S]):
    """The sidecars of Pods, found in ``sidecars`` and completed from the Kubernetes
    registry's Pods."""

    def __init__(self, registry: KubeRegistry, sidecars: OwnSidecars[S]) -> None:
        self._registry = registry
        self._sidecars = sidecars

    def complete(self, proxy: ProxyIdentity) -> ProxyIdentity:
        """``proxy`` with its Pod's labels, service account and locality (unchanged when
        no Pod matches it)."""
        return proxy_with_pod(self._registry, proxy)

    def changed(self, pods: Iterable[tuple[str, str]], start: float) -> list[tuple[S, PushRequest]]:
        """The connections of the sidecars of ``pods`` (namespace, name), each completed
        again from its Pod as it is now, with its push: full, naming the Pod."""
        found = self._sidecars.with_proxy_ids(f"{name}.{namespace}" for namespace, name in pods)
        pushes = []
        for connection in found:
            proxy = proxy_with_pod(self._registry, connection.proxy)
            if proxy != connection.proxy:
                connection.reidentify(proxy)
            pod = ConfigKey("Pod", proxy.namespace, proxy.pod_name)
            pushes.append((connection, proxy_update([pod], start)))
        return pushes
