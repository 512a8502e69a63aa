"""The MCP roles and the node-set service a ``serve`` runs next to xDS on its gRPC port.

Kept apart from :mod:`pilothouse.cli.config_sources` (which the ``bootstrap`` and
``agent`` commands also read for the config directory check) so that only ``serve``
imports the MCP servers and the node-set service.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from pilothouse.cli.config_sources import SourceSetupError
from pilothouse.kinds.table import SCHEMAS
from pilothouse.mcp.collection_table import ISTIO_PILOT_COLLECTIONS, SYNTHETIC_SERVICE_ENTRIES
from pilothouse.mcp.dialout import McpDialOutSource, parse_sink_meta
from pilothouse.mcp.publisher import McpSourceOptions, SnapshotPublisher
from pilothouse.mcp.sink_server import McpSinkServer
from pilothouse.mcp.source_server import McpSourceServer
from pilothouse.nodesets.server import NodeSetServer
from pilothouse.registry.kubernetes.feeds import KubeFeeds
from pilothouse.settings import Settings
from pilothouse.sources.events import ConfigStore
from pilothouse.xds.server.admission import Admission
from pilothouse.xds.server.tls_guard import GuardedServer, TlsGuard


@dataclass
class McpRoles:
    """The legacy MCP pieces a serve runs, and the node agents' node-set service; each
    has ``run()`` and ``close()``."""

    source_server: McpSourceServer
    sink_server: McpSinkServer | None = None
    dial_out: McpDialOutSource | None = None
    runners: list[Any] = field(default_factory=list)
    node_sets: NodeSetServer | None = None

    def add_to(self, grpc_server: Any, guard: TlsGuard | None = None) -> None:
        """Register on ``grpc_server``; with ``guard`` (the TLS port's), legacy MCP for
        root-namespace callers only and node sets for the node each caller runs on."""
        mcp_server: Any = grpc_server if guard is None else GuardedServer(grpc_server, guard, "MCP")
        self.source_server.add_to(mcp_server)
        if self.node_sets is not None:
            self.node_sets.add_to(grpc_server, guard)
        if self.sink_server is not None:
            self.sink_server.add_to(mcp_server)

    def close(self) -> None:
        for runner in self.runners:
            with contextlib.suppress(Exception):
                runner.close()


def mcp_roles(
    settings: Settings,
    store: ConfigStore,
    admission: Admission | None = None,
    root_namespace: str = "istio-system",
    kube: KubeFeeds | None = None,
) -> McpRoles:
    """The MCP ResourceSource server (always), the node-set service for node agents
    (always, :mod:`pilothouse.nodesets`; with ``kube``, the registry's informers, its
    sets hold the nodes' Pods and their Services too) and the dial-out source
    (``--mcp-sink-address``). The ResourceSink server of reverse mode is a config source,
    so ``serve`` creates it with the other sources and adds it here. ``admission`` is the
    xDS port's, which ResourceSource and node-set streams pass as xDS streams do."""
    served = {schema.collection for schema in SCHEMAS}
    options = McpSourceOptions(
        # Pilot 1.4-1.6 asks for collections pilothouse has no schema for: answer them
        # empty instead of ending its stream.
        empty_collections=tuple(
            c
            for c in dict.fromkeys((SYNTHETIC_SERVICE_ENTRIES, *ISTIO_PILOT_COLLECTIONS))
            if c not in served
        ),
        max_wait=settings.mcp.max_wait,
        quiesce=settings.mcp.quiesce,
    )
    publisher = SnapshotPublisher(store, options=options)
    roles = McpRoles(McpSourceServer(publisher, admission=admission))
    roles.runners.append(roles.source_server)
    roles.node_sets = NodeSetServer(
        store, root_namespace=root_namespace, admission=admission, kube=kube
    )
    roles.runners.append(roles.node_sets)
    if settings.mcp.sink_address:
        try:
            metadata = parse_sink_meta(settings.mcp.sink_meta)
        except ValueError as problem:
            raise SourceSetupError(f"--sink-meta: {problem}") from None
        dial_publisher = SnapshotPublisher(store, options=options)
        roles.dial_out = McpDialOutSource(
            settings.mcp.sink_address, dial_publisher, metadata=metadata
        )
        roles.runners.append(roles.dial_out)
    return roles
