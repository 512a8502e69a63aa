"""A static Envoy bootstrap (no xDS): one HTTP listener routing everything to one cluster.

It checks the harness itself (Envoy starts, carries traffic, reports stats) and serves as
a known-good baseline for tests that compare against xDS-delivered configuration.  The
listener can terminate TLS with a certificate from ``tls.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.e2e.harness.ports import LOOPBACK
from tests.e2e.harness.tls import CertificateFiles

_HCM = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3"
_ROUTER = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
_STDOUT_LOG = "type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog"
_TLS = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"


def static_bootstrap(
    *,
    node_id: str,
    admin_port: int,
    listener_port: int,
    cluster_name: str,
    endpoints: Sequence[tuple[str, int]],
    listener_name: str = "static-http",
    access_log: bool = False,
    tls: CertificateFiles | None = None,
) -> dict[str, Any]:
    """Listener ``listener_port`` → route ``/`` → STATIC ROUND_ROBIN ``cluster_name``."""
    manager: dict[str, Any] = {
        "@type": f"{_HCM}.HttpConnectionManager",
        "stat_prefix": listener_name,
        "route_config": {
            "name": "static-route",
            "virtual_hosts": [
                {
                    "name": "all",
                    "domains": ["*"],
                    "routes": [{"match": {"prefix": "/"}, "route": {"cluster": cluster_name}}],
                }
            ],
        },
        "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {"@type": _ROUTER}}],
    }
    if access_log:
        manager["access_log"] = [
            {"name": "envoy.access_loggers.stdout", "typed_config": {"@type": _STDOUT_LOG}}
        ]
    chain: dict[str, Any] = {
        "filters": [
            {"name": "envoy.filters.network.http_connection_manager", "typed_config": manager}
        ]
    }
    if tls is not None:
        chain["transport_socket"] = {
            "name": "envoy.transport_sockets.tls",
            "typed_config": {
                "@type": _TLS,
                "common_tls_context": {
                    "tls_certificates": [
                        {
                            "certificate_chain": {"filename": str(tls.cert)},
                            "private_key": {"filename": str(tls.key)},
                        }
                    ]
                },
            },
        }
    return {
        "node": {"id": node_id, "cluster": "e2e"},
        "admin": {"address": _address(LOOPBACK, admin_port)},
        "static_resources": {
            "listeners": [
                {
                    "name": listener_name,
                    "address": _address(LOOPBACK, listener_port),
                    "filter_chains": [chain],
                }
            ],
            "clusters": [
                {
                    "name": cluster_name,
                    "type": "STATIC",
                    "connect_timeout": "1s",
                    "lb_policy": "ROUND_ROBIN",
                    "load_assignment": {
                        "cluster_name": cluster_name,
                        "endpoints": [
                            {
                                "lb_endpoints": [
                                    {"endpoint": {"address": _address(host, port)}}
                                    for host, port in endpoints
                                ]
                            }
                        ],
                    },
                }
            ],
        },
    }


def _address(host: str, port: int) -> dict[str, Any]:
    return {"socket_address": {"address": host, "port_value": port}}
