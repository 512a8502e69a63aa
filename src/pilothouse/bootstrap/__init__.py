"""Bootstrap files that point a proxy at pilothouse: Envoy's and proxyless gRPC's.

Both builders are pure functions returning plain dicts, ready for ``json.dumps``
or ``yaml.safe_dump``; writing files and the ``bootstrap`` command live elsewhere.
"""

from pilothouse.bootstrap.envoy import (
    XDS_GRPC_CLUSTER,
    XDS_REST_CLUSTER,
    EnvoyBootstrapOptions,
    XdsTransport,
    envoy_bootstrap,
    xds_config_source,
)
from pilothouse.bootstrap.grpc import ISTIO_SERVER_LISTENER_TEMPLATE, grpc_bootstrap
from pilothouse.bootstrap.node import Locality

__all__ = [
    "ISTIO_SERVER_LISTENER_TEMPLATE",
    "XDS_GRPC_CLUSTER",
    "XDS_REST_CLUSTER",
    "EnvoyBootstrapOptions",
    "Locality",
    "XdsTransport",
    "envoy_bootstrap",
    "grpc_bootstrap",
    "xds_config_source",
]
