"""The Kubernetes service registry's informers as one thing ``serve`` opens, runs and closes.

When a ``k8s://`` config source is configured, ``serve`` also reads the cluster's
Services, EndpointSlices, Pods, Nodes and Namespaces (the service registry, as istiod
does on Kubernetes). :class:`RegistryFeeds` owns the one API client and the five
informers: :attr:`feeds` goes to the discovery server (which subscribes before anything
is listed), then :meth:`run` lists and watches until :meth:`close`.

Nothing is opened before :meth:`run` (the HTTP session is made there and closed when it
ends), so a start-up that stops early (a port taken) leaves no session behind.
"""

from __future__ import annotations

import asyncio

from kubernetes_asyncio.client import ApiClient, Configuration

from pilothouse.kube.client import load_configuration
from pilothouse.kube.feeds import registry_informers
from pilothouse.kube.informer import Informer
from pilothouse.kube.registry import KubeFeeds


class RegistryFeeds:
    """The five registry informers of one cluster and the client they share."""

    def __init__(self, configuration: Configuration, informers: dict[str, Informer]) -> None:
        self._configuration = configuration
        self._informers = informers
        self.feeds = KubeFeeds.by_resource(informers)

    @property
    def informers(self) -> dict[str, Informer]:
        return dict(self._informers)

    @classmethod
    async def open(cls, kubeconfig: str | None) -> RegistryFeeds:
        """Informers for the cluster ``kubeconfig`` names (in-cluster when None); raises
        :class:`~pilothouse.kube.client.KubeConfigError` when it cannot be used."""
        return cls(await load_configuration(kubeconfig), registry_informers(None))

    async def run(self) -> None:
        """List and watch every resource until :meth:`close`, then close the client."""
        client = ApiClient(self._configuration)
        try:
            for informer in self._informers.values():
                informer.connect(client)
            async with asyncio.TaskGroup() as tasks:
                for informer in self._informers.values():
                    tasks.create_task(informer.run())
        finally:
            await client.close()

    def close(self) -> None:
        for informer in self._informers.values():
            informer.close()
