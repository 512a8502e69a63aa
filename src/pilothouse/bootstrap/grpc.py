"""The bootstrap JSON for grpcio's proxyless xDS client (the file ``GRPC_XDS_BOOTSTRAP`` names).

Istio's shape (``pkg/istio-agent/grpcxds/grpc_bootstrap.go``): one entry in ``xds_servers``
with ``server_uri``, ``channel_creds: [{type: insecure}]`` and ``server_features:
["xds_v3"]``; a ``node`` with id, cluster, locality and metadata (``GENERATOR: grpc`` so
pilothouse answers with its gRPC flavour of resources); xDS-enabled servers find their
Listener through ``server_listener_resource_name_template``.  With a certificate
directory, ``certificate_providers.default`` is a ``file_watcher`` over the files the
Istio agent writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from pilothouse.bootstrap.node import Locality, check_metadata, node_block

ISTIO_SERVER_LISTENER_TEMPLATE = "xds.istio.io/grpc/lds/inbound/%s"
"""Istio's name for an xDS-enabled gRPC server's inbound Listener; %s is ``ip:port``."""

CERTIFICATE_REFRESH_INTERVAL = "900s"
"""How often the ``file_watcher`` provider rereads its files (Istio: 15 minutes)."""


def grpc_bootstrap(
    *,
    node_id: str,
    server_uri: str,
    node_cluster: str = "",
    locality: Locality | None = None,
    metadata: Mapping[str, Any] | None = None,
    server_features: Sequence[str] = ("xds_v3",),
    server_listener_resource_name_template: str = ISTIO_SERVER_LISTENER_TEMPLATE,
    certificate_dir: PurePath | None = None,
) -> dict[str, Any]:
    """The proxyless gRPC bootstrap as a dict (``json.dumps`` it into the bootstrap file).

    ``server_uri`` is ``host:port`` or ``unix:///path``.  ``metadata`` gets
    ``GENERATOR: grpc`` unless it sets ``GENERATOR`` itself.
    """
    if not node_id:
        raise ValueError("node_id must not be empty")
    if not server_uri:
        raise ValueError("server_uri must not be empty")
    node_metadata: dict[str, Any] = {"GENERATOR": "grpc"}
    if metadata:
        check_metadata(metadata)
        node_metadata.update(metadata)
    bootstrap: dict[str, Any] = {
        "xds_servers": [
            {
                "server_uri": server_uri,
                "channel_creds": [{"type": "insecure"}],
                "server_features": list(server_features),
            }
        ],
        "node": node_block(node_id, node_cluster, node_metadata, locality),
        "server_listener_resource_name_template": server_listener_resource_name_template,
    }
    if certificate_dir is not None:
        bootstrap["certificate_providers"] = {
            "default": {
                "plugin_name": "file_watcher",
                "config": {
                    "certificate_file": str(certificate_dir / "cert-chain.pem"),
                    "private_key_file": str(certificate_dir / "key.pem"),
                    "ca_certificate_file": str(certificate_dir / "root-cert.pem"),
                    "refresh_interval": CERTIFICATE_REFRESH_INTERVAL,
                },
            }
        }
    return bootstrap
