"""The Kubernetes service registry's informers as one thing ``serve`` opens, runs and closes.

When a ``k8s://`` config source is configured, ``serve`` also reads the cluster's
Services, EndpointSlices, Pods, Nodes and Namespaces (the service registry, as istiod
does on Kubernetes). :class:`RegistryFeeds` owns the one API client and the five
informers: :attr:`feeds` goes to the discovery server (which subscribes before anything
is listed), then :meth:`run` lists and watches until :meth:`close`.

Its :meth:`RegistryFeeds.availability` is shown with the config sources' (``/ready``):
unavailable while any of the five cannot be listed or watched, with the first one's
reason; what the registry holds stays served meanwhile.

Nothing is opened before :meth:`run` (the HTTP session is made there and closed when it
ends), so a start-up that stops early (a port taken) leaves no session behind.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from pilothouse.registry.kubernetes.feeds import KubeFeeds, registry_informers
from pilothouse.sources.availability import Availability
from pilothouse.sources.kubernetes.client import load_configuration
from pilothouse.sources.kubernetes.informer import Informer

if TYPE_CHECKING:
    from kubernetes_asyncio.client import Configuration

NAME = "k8s:// service registry"


class RegistryFeeds:
    """The five registry informers of one cluster and the client they share."""

    def __init__(self, configuration: Configuration, informers: dict[str, Informer]) -> None:
        self._configuration = configuration
        self._informers = informers
        self.feeds = KubeFeeds.by_resource(informers)
        self._state = Availability(NAME, False, "not listed yet", time.time())

    @property
    def informers(self) -> dict[str, Informer]:
        return dict(self._informers)

    def availability(self) -> Availability:
        failing = [(i.resource, i.problem) for i in self._informers.values() if i.problem]
        if failing:
            resource, problem = failing[0]
            more = f" (and {len(failing) - 1} more)" if len(failing) > 1 else ""
            available, reason = False, f"{resource}: {problem}{more}"
        elif not all(i.has_synced() for i in self._informers.values()):
            available, reason = False, "not listed yet"
        else:
            skipped = sum(i.skipped.count for i in self._informers.values())
            available = True
            reason = f"{skipped} malformed objects or events skipped" if skipped else ""
        was = self._state
        if (available, reason) != (was.available, was.reason):
            since = was.since if available == was.available else time.time()
            self._state = Availability(NAME, available, reason, since)
        return self._state

    @classmethod
    async def open(cls, kubeconfig: str | None) -> RegistryFeeds:
        """Informers for the cluster ``kubeconfig`` names (in-cluster when None); raises
        :class:`~pilothouse.sources.kubernetes.client.KubeConfigError` when it cannot be used."""
        return cls(await load_configuration(kubeconfig), registry_informers(None))

    async def run(self) -> None:
        """List and watch every resource until :meth:`close`, then close the client."""
        from kubernetes_asyncio.client import ApiClient  # the client library loads when used

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
