"""Envoy's bootstrap as the agent writes it: ADS and SDS over the agent's Unix sockets.

Built by :func:`pilothouse.bootstrap.envoy.envoy_bootstrap` (the same builder as
``pilothouse bootstrap``), then the ``xds-grpc`` cluster's endpoint becomes the agent's
xDS socket (a ``pipe`` address, STATIC, no TCP keepalive) and a static ``sds-grpc``
cluster on the agent's SDS socket is added (Istio's name for it). The bootstrap carries
no TLS and no token: Envoy holds no control-plane credential, the agent does.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from pilothouse.bootstrap.envoy import (
    XDS_GRPC_CLUSTER,
    EnvoyBootstrapOptions,
    XdsTransport,
    envoy_bootstrap,
)

SDS_GRPC_CLUSTER: Final = "sds-grpc"


def agent_bootstrap(
    options: EnvoyBootstrapOptions, xds_socket: Path, sds_socket: Path
) -> dict[str, Any]:
    """The bootstrap for ``options`` with ADS (SotW or delta, as ``options`` says) on
    ``xds_socket`` and ``sds-grpc`` on ``sds_socket`` (``options``' xDS host, port and
    TLS are replaced); ValueError for the REST transport (the agent relays gRPC)."""
    if options.transport is XdsTransport.REST:
        raise ValueError("the agent relays ADS over gRPC: use the sotw or delta transport")
    options = replace(options, xds_tls=None, xds_port=15010)
    bootstrap = envoy_bootstrap(options)
    clusters = bootstrap["static_resources"]["clusters"]
    xds = next(c for c in clusters if c["name"] == XDS_GRPC_CLUSTER)
    _on_pipe(xds, xds_socket)
    sds = copy.deepcopy(xds)
    sds["name"] = SDS_GRPC_CLUSTER
    sds["load_assignment"]["cluster_name"] = SDS_GRPC_CLUSTER
    _on_pipe(sds, sds_socket)
    clusters.append(sds)
    return bootstrap


def _on_pipe(cluster: dict[str, Any], path: Path) -> None:
    cluster["type"] = "STATIC"
    cluster.pop("upstream_connection_options", None)  # TCP keepalive: not on a Unix socket
    endpoint = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
    endpoint["address"] = {"pipe": {"path": str(path)}}
