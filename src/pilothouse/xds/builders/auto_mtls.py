"""Auto-mTLS: Istio mutual TLS to endpoints that run a sidecar, plaintext to the others.

MeshConfig ``enableAutoMtls`` (on by default): a cluster whose DestinationRule sets no
TLS gets no ``transport_socket`` but two ``transport_socket_matches``, as istiod
builds them:

- ``tlsMode-istio``: endpoints whose metadata ``envoy.transport_socket_match`` holds
  ``tlsMode: istio`` get the ISTIO_MUTUAL context;
- ``tlsMode-disabled``: every other endpoint gets the raw-buffer socket (plaintext).

The endpoint side is :func:`tls_mode_metadata`: EDS (and the inline load assignment of
DNS clusters) marks an endpoint whose workload carries the label
``security.istio.io/tlsMode: istio`` (what sidecar injection sets). The generator
decides whether a cluster is auto-mTLS: not for MESH_EXTERNAL services, not when the
destination namespace's PeerAuthentication is DISABLE, not for ORIGINAL_DST clusters.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.config.core.v3 import base_pb2  # type: ignore[import-untyped]
from envoy.extensions.transport_sockets.raw_buffer.v3 import (  # type: ignore[import-untyped]
    raw_buffer_pb2,
)
from envoy.extensions.transport_sockets.tls.v3 import tls_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from pilothouse.xds.builders.upstream_tls import build_transport_socket

TLS_MODE_LABEL: Final = "security.istio.io/tlsMode"
ISTIO_TLS_MODE: Final = "istio"
TRANSPORT_SOCKET_MATCH_NAMESPACE: Final = "envoy.transport_socket_match"
TLS_MODE_KEY: Final = "tlsMode"
ISTIO_MATCH_NAME: Final = "tlsMode-istio"
DISABLED_MATCH_NAME: Final = "tlsMode-disabled"
RAW_BUFFER_TRANSPORT_SOCKET: Final = "envoy.transport_sockets.raw_buffer"


def runs_sidecar(labels: Iterable[tuple[str, str]]) -> bool:
    """Whether an endpoint with ``labels`` says it takes Istio mutual TLS."""
    return (TLS_MODE_LABEL, ISTIO_TLS_MODE) in set(labels)


def tls_mode_metadata(metadata: base_pb2.Metadata) -> None:
    """Mark an endpoint's ``metadata`` for the ``tlsMode-istio`` transport socket."""
    fields = metadata.filter_metadata[TRANSPORT_SOCKET_MATCH_NAMESPACE].fields
    fields[TLS_MODE_KEY].string_value = ISTIO_TLS_MODE


def apply_auto_mtls(cluster: cluster_pb2.Cluster, context: tls_pb2.UpstreamTlsContext) -> None:
    """Give ``cluster`` the two transport socket matches, mutual TLS by ``context``."""
    istio = cluster.transport_socket_matches.add(name=ISTIO_MATCH_NAME)
    istio.match.fields[TLS_MODE_KEY].string_value = ISTIO_TLS_MODE
    istio.transport_socket.CopyFrom(build_transport_socket(context))
    disabled = cluster.transport_socket_matches.add(name=DISABLED_MATCH_NAME)
    disabled.match.SetInParent()
    typed = any_pb2.Any()
    typed.Pack(raw_buffer_pb2.RawBuffer(), deterministic=True)
    disabled.transport_socket.CopyFrom(
        base_pb2.TransportSocket(name=RAW_BUFFER_TRANSPORT_SOCKET, typed_config=typed)
    )
