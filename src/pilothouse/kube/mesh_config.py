"""MeshConfig from the ``istio`` ConfigMap of a Kubernetes cluster, followed on change.

As istiod does: an informer on ConfigMaps in one namespace (``istio-system`` unless told)
with ``fieldSelector=metadata.name=istio``; its ``data.mesh`` is read by the same loader
as ``--mesh FILE`` (:func:`~pilothouse.config.meshconfig.load_mesh_config`).

- No ConfigMap (or none readable: 403) → istiod's defaults.
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

from kubernetes_asyncio.client import ApiClient

from pilothouse.config.mesh import MeshSettings
from pilothouse.config.meshconfig import MeshConfigError, MeshFile, load_mesh_config
from pilothouse.kube.client import ResourceRef, new_api_client
from pilothouse.kube.events import KubeEvent, WatchEventType
from pilothouse.kube.informer import Informer

log = logging.getLogger("pilothouse.kube")

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
        self._client: ApiClient | None = None
        self._stop = asyncio.Event()
        self._started = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def where(self) -> str:
        return f"ConfigMap {self.namespace}/{self.name}"

    @property
    def mesh(self) -> MeshSettings:
        return self.current.mesh if self.current is not None else MeshSettings()

    async def first(self, timeout: float = 30.0) -> MeshFile | None:
        """Start reading and wait for the first list (at most ``timeout`` seconds)."""
        self._client = await new_api_client(self._kubeconfig)
        self._informer = Informer(
            self._client,
            CONFIGMAPS,
            namespace=self.namespace,
            field_selector=f"metadata.name={self.name}",
            absent_retry=self._absent_retry,
        )
        self._informer.subscribe(self._on_event)
        self._started.set()
        self._task = asyncio.get_running_loop().create_task(self._informer.run())
        try:
            await asyncio.wait_for(self._informer.wait_synced(), timeout)
        except TimeoutError:
            log.warning("%s could not be read in %gs: mesh defaults for now", self.where, timeout)
        return self.current

    async def run(self) -> None:
        """Follow the ConfigMap until :meth:`close` (after :meth:`first`)."""
        await self._started.wait()
        try:
            await self._stop.wait()
        finally:
            if self._informer is not None:
                self._informer.close()
            if self._task is not None:
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)
            if self._client is not None:
                await self._client.close()

    def close(self) -> None:
        self._stop.set()
        self._started.set()

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
