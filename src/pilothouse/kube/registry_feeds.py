"""The Kubernetes service registry's informers as one thing ``serve`` opens, runs and closes.

When a ``k8s://`` config source is configured, ``serve`` also reads the cluster's
Services, EndpointSlices, Pods, Nodes and Namespaces (the service registry, as istiod
does on Kubernetes). :class:`RegistryFeeds` owns the one API client and the five
informers: :attr:`feeds` goes to the discovery server (which subscribes before anything
is listed), then :meth:`run` lists and watches until :meth:`close`.
"""

from __future__ import annotations

import asyncio

from kubernetes_asyncio.client import ApiClient

from pilothouse.kube.client import new_api_client
from pilothouse.kube.feeds import registry_informers
from pilothouse.kube.informer import Informer
from pilothouse.kube.registry import KubeFeeds


class RegistryFeeds:
    """The five registry informers of one cluster and the client they share."""

    def __init__(self, client: ApiClient, informers: dict[str, Informer]) -> None:
        self._client = client
        self._informers = informers
        self.feeds = KubeFeeds.by_resource(informers)

    @classmethod
    async def open(cls, kubeconfig: str | None) -> RegistryFeeds:
        """Informers for the cluster ``kubeconfig`` names (in-cluster when None); raises
        :class:`~pilothouse.kube.client.KubeConfigError` when it cannot be used."""
        client = await new_api_client(kubeconfig)
        return cls(client, registry_informers(client))

    async def run(self) -> None:
        """List and watch every resource until :meth:`close`, then close the client."""
        try:
            async with asyncio.TaskGroup() as tasks:
                for informer in self._informers.values():
                    tasks.create_task(informer.run())
        finally:
            await self._client.close()

    def close(self) -> None:
        for informer in self._informers.values():
            informer.close()
