"""What ``pilothouse serve`` serves: its mesh config and config sources, loaded in one step.

:func:`load_served_config` reads the mesh config (``--mesh``, or the ``istio`` ConfigMap
followed when a ``k8s://`` source is given without ``--mesh``; its ``configSources`` join
the command line's), builds the config sources, the Kubernetes registry's informers and
the reverse-MCP sink (``--mcp-accept-sources``), and unions their stores into one
:class:`~pilothouse.sources.aggregate.AggregateStore`. Nothing is started:
:class:`ServedConfig` starts what it loaded in ``serve``'s task group and closes it on
``serve``'s one shutdown path. A problem ends the process before any port opens, with
``serve``'s wording: ``pilothouse: <problem>`` (exit 1), or for a config directory that
does not exist ``pilothouse serve: <problem>`` on stderr and exit 2.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from pilothouse.cli.config_sources import (
    MissingConfigDirectory,
    SourceSetupError,
    config_sources,
    kube_mesh_config,
    kube_registry_feeds,
)
from pilothouse.config.encoding import EncodingProblem, decode_config
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.meshconfig import MeshConfigError, load_mesh_config
from pilothouse.mcp.sink_server import McpSinkServer
from pilothouse.registry.kubernetes.registry_feeds import RegistryFeeds
from pilothouse.settings import Settings
from pilothouse.sources.addresses import ConfigSource
from pilothouse.sources.aggregate import AggregateStore
from pilothouse.sources.events import ConfigStore
from pilothouse.sources.kubernetes.mesh_config import KubeMeshConfig

log = logging.getLogger("pilothouse.serve")


def load_mesh(settings: Settings) -> tuple[MeshSettings, tuple[str, ...]]:
    """The mesh config of ``--mesh`` (defaults without one) and its config sources;
    SystemExit with the reason when it cannot be read."""
    mesh = MeshSettings()
    mesh_sources: tuple[str, ...] = ()
    if settings.mesh_file:
        try:
            text = decode_config(Path(settings.mesh_file).read_bytes())
            loaded = load_mesh_config(text, settings.mesh_file)
        except OSError as problem:
            raise SystemExit(f"pilothouse: --mesh: {problem}") from None
        except EncodingProblem as problem:
            raise SystemExit(
                f"pilothouse: --mesh: {settings.mesh_file}:{problem.line}: {problem.message}"
            ) from None
        except MeshConfigError as problem:
            raise SystemExit(f"pilothouse: --mesh: {problem}") from None
        for warning in loaded.warnings:
            log.warning("mesh config: %s", warning)
        mesh, mesh_sources = loaded.mesh, loaded.config_sources
    return mesh, mesh_sources


@dataclass(frozen=True, slots=True)
class ServedConfig:
    """The mesh config and every config source ``serve`` serves, loaded, not started."""

    mesh: MeshSettings
    mesh_sources: tuple[str, ...]
    """The config sources the mesh config names (``configSources``)."""
    sources: list[ConfigSource]
    """The config sources, in precedence order."""
    store: AggregateStore
    """The union of the sources' stores (and the reverse-MCP sink's)."""
    kube_mesh: KubeMeshConfig | None = None
    """The followed ``istio`` ConfigMap, when the mesh config comes from Kubernetes."""
    kube_registry: RegistryFeeds | None = None
    """The Kubernetes registry's informers, with a ``k8s://`` source."""
    reverse: McpSinkServer | None = None
    """The ResourceSink server sources dial (``--mcp-accept-sources``)."""

    def start(self, tasks: asyncio.TaskGroup) -> None:
        """Run the sources, the followed ConfigMap and the registry's informers in
        ``tasks`` (the reverse sink runs with the MCP roles)."""
        for source in self.sources:
            tasks.create_task(source.run())
        if self.kube_mesh is not None:
            tasks.create_task(self.kube_mesh.run())
        if self.kube_registry is not None:
            tasks.create_task(self.kube_registry.run())

    def close(self) -> None:
        for source in self.sources:
            source.close()
        if self.kube_mesh is not None:
            self.kube_mesh.close()
        if self.kube_registry is not None:
            self.kube_registry.close()


async def load_served_config(settings: Settings) -> ServedConfig:
    """Read the mesh config and build every config source of ``settings``; SystemExit
    (with ``serve``'s wording and code) when one cannot be."""
    mesh, mesh_sources = load_mesh(settings)
    try:
        kube_mesh = await kube_mesh_config(settings)
    except SourceSetupError as problem:
        raise SystemExit(f"pilothouse: {problem}") from None
    if kube_mesh is not None and kube_mesh.current is not None:
        mesh, mesh_sources = kube_mesh.current.mesh, kube_mesh.current.config_sources
    try:
        sources = config_sources(settings, mesh_sources)
        kube_registry = await kube_registry_feeds(settings, mesh_sources)
    except MissingConfigDirectory as problem:
        print(f"pilothouse serve: {problem}", file=sys.stderr)
        raise SystemExit(2) from None
    except SourceSetupError as problem:
        raise SystemExit(f"pilothouse: {problem}") from None
    if not sources and not settings.mcp.accept_sources:
        log.warning("no config source given and ./mesh does not exist: serving no config")
    reverse = McpSinkServer() if settings.mcp.accept_sources else None
    stores: list[ConfigStore] = [s.store for s in sources]
    if reverse is not None:
        stores.append(reverse.store)
    return ServedConfig(
        mesh,
        mesh_sources,
        sources,
        AggregateStore(stores),
        kube_mesh=kube_mesh,
        kube_registry=kube_registry,
        reverse=reverse,
    )
