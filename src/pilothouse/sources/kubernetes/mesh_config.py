"""MeshConfig from the ``istio`` ConfigMap of a Kubernetes cluster, followed on change.

As istiod does: an informer on ConfigMaps in one namespace (``istio-system`` unless told)
with ``fieldSelector=metadata.name=istio``; its ``data.mesh`` is read by the same loader
as ``--mesh FILE`` (:func:`~pilothouse.config.meshconfig.load_mesh_config`).

- No ConfigMap (or none readable: 403) → istiod's defaults.
- Start-up reads it once (:meth:`KubeMeshConfig.first`) and does not wait for an API
  server it cannot reach: the defaults serve until the ConfigMap is read, then its
  settings apply as for any change (the CA, trust domain and ``configSources`` are
  start-up's). A malformed answer is the informer's to contain: the last good mesh
  config stays.
- An invalid ``data.mesh`` keeps the last good mesh config, with a warning naming the
  ConfigMap and the field.
- Every change that gives other settings calls ``on_change`` (``serve`` hands it to the
  discovery server, which pushes everything again).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from pilothouse.config.mesh import MeshSettings
from pilothouse.config.meshconfig import MeshConfigError, MeshFile, load_mesh_config
from pilothouse.sources.kubernetes.client import KubeConfigError, ResourceRef, new_api_client
from pilothouse.sources.kubernetes.events import KubeEvent, WatchEventType
from pilothouse.sources.kubernetes.informer import Informer

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient

log = logging.getLogger("pilothouse.sources.kubernetes")

CONFIGMAPS = ResourceRef("", "v1", "configmaps")


class KubeMeshConfig:
    """The mesh config of the ``name`` ConfigMap in ``namespace``."""

    def __init__(
        self,
        kubeconfig: str | None,
        namespace: str = "istio-system",
        name: str = "istio",
        *,
        absent_retry: float = 30.0,
    ) -> None:
        self.namespace = namespace
        self.name = name
        self._kubeconfig = kubeconfig
        self._absent_retry = absent_retry
        self.current: MeshFile | None = None
        """The last good mesh config (None: the defaults, no ConfigMap)."""
        self.on_change: Callable[[MeshSettings], object] | None = None
        self._informer: Informer | None = None
        self._stop = asyncio.Event()

    @property
    def where(self) -> str:
        return f"ConfigMap {self.namespace}/{self.name}"

    @property
    def mesh(self) -> MeshSettings:
        return self.current.mesh if self.current is not None else MeshSettings()

    def _new_informer(self, client: ApiClient) -> Informer:
        informer = Informer(
            client,
            CONFIGMAPS,
            namespace=self.namespace,
            field_selector=f"metadata.name={self.name}",
            absent_retry=self._absent_retry,
        )
        informer.subscribe(self._on_event)
        return informer

    async def first(self, timeout: float = 5.0) -> MeshFile | None:
        """Read the ConfigMap once, before serving: until its first list has been tried
        (at most ``timeout`` seconds). An API server that cannot be reached ends the wait
        at once: Istio's defaults until :meth:`run` reads it. Nothing stays open after."""
        client = await new_api_client(self._kubeconfig)
        informer = self._informer = self._new_informer(client)
        task = asyncio.get_running_loop().create_task(informer.run())
        try:
            await asyncio.wait_for(informer.wait_attempted(), timeout)
        except TimeoutError:
            log.warning("%s could not be read in %gs: mesh defaults for now", self.where, timeout)
        else:
            if informer.problem is not None:
                log.warning(
                    "%s cannot be read now (%s): mesh defaults until it can",
                    self.where,
                    informer.problem,
                )
        finally:
            informer.close()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await client.close()
        return self.current

    async def run(self) -> None:
        """Follow the ConfigMap until :meth:`close` (after :meth:`first`, whose
        connection is closed: this one lists it again)."""
        if self._stop.is_set():
            return
        try:
            client = await new_api_client(self._kubeconfig)
        except KubeConfigError as problem:
            log.error("%s cannot be followed: %s", self.where, problem)
            return
        informer = self._informer = self._new_informer(client)
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(informer.run()), loop.create_task(self._first_list(informer))]
        try:
            await self._stop.wait()
        finally:
            informer.close()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await client.close()

    async def _first_list(self, informer: Informer) -> None:
        await informer.wait_synced()
        if not informer.objects():
            self._gone()  # deleted since :meth:`first` read it

    def close(self) -> None:
        self._stop.set()

    def _gone(self) -> None:
        if self.current is not None:
            self._on_event(KubeEvent(WatchEventType.DELETED, {}))

    def _on_event(self, event: KubeEvent) -> None:
        before = self.mesh
        if event.type is WatchEventType.DELETED:
            log.warning("%s was deleted: mesh defaults", self.where)
            self.current = None
        else:
            text = json.dumps(event.obj)
            try:
                loaded = load_mesh_config(text, self.where)
            except MeshConfigError as problem:
                log.warning("%s: %s; keeping the last good mesh config", self.where, problem)
                return
            for warning in loaded.warnings:
                log.info("mesh config: %s", warning)
            self.current = loaded
        if self.mesh != before:
            log.info("mesh config changed", extra={"source": self.where})
            if self.on_change is not None:
                self.on_change(self.mesh)
