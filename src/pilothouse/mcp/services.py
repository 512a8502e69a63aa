"""Registering the two legacy MCP servers on an existing grpc.aio server (the xDS port).

The Galley-era ``AggregatedMeshConfigService`` (Istio 1.1 with ``USE_MCP_LEGACY=1``) is
not served: no Istio release after 1.1 used it.
"""

from __future__ import annotations

import grpc

from pilothouse.mcp.sink_server import McpSinkServer
from pilothouse.mcp.source_server import McpSourceServer


def add_mcp_services(
    server: grpc.aio.Server,
    *,
    source: McpSourceServer | None = None,
    sink: McpSinkServer | None = None,
) -> None:
    """Serve ``ResourceSource`` (sinks dial in) and/or ``ResourceSink`` (sources dial in)."""
    if source is not None:
        source.add_to(server)
    if sink is not None:
        sink.add_to(server)
