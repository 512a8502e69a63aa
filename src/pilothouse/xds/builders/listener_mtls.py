"""Inbound filter chains for a PeerAuthentication mode, as istiod builds them.

The chains of one inbound port differ only by how the connection arrives; they all
run the same filters (an HCM or a ``tcp_proxy`` to ``inbound|<port>||``):

- STRICT: one chain matching ``transport_protocol: tls``, terminating mutual TLS
  with the workload certificate (SDS secret ``default``) and requiring a client
  certificate signed by the mesh root (``ROOTCA``). A plaintext connection matches
  no chain and is closed.
- PERMISSIVE: the same mutual-TLS chain, further narrowed to the ALPN values Istio
  clients offer (``istio``, ``istio-peer-exchange``, ``istio-http/1.0``,
  ``istio-http/1.1``, ``istio-h2``), and a plaintext chain matching
  ``transport_protocol: raw_buffer``. TCP ports add a third chain for TLS that is
  not Istio's (``tls`` without those ALPNs), passed through to the application
  untouched. HTTP ports need none: istiod declares TLS-not-mTLS on an HTTP port
  unsupported.
- DISABLE: one plaintext chain with no transport match (the listener as it is
  without mTLS).

STRICT and PERMISSIVE listeners carry the TLS inspector
(``envoy.filters.listener.tls_inspector``), which reads the ClientHello to set the
transport protocol and ALPN the chains match on.

The mutual-TLS context offers ``h2, http/1.1`` on HTTP ports (the HCM picks the
codec), and ``istio`` on TCP ports (istiod adds ``istio-peer-exchange``, which only
Istio's Envoy build speaks), and pins TLS 1.2 as the minimum, as istiod does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from envoy.config.listener.v3 import (  # type: ignore[import-untyped]
    listener_components_pb2,
)
from envoy.extensions.transport_sockets.tls.v3 import (  # type: ignore[import-untyped]
    common_pb2,
    tls_pb2,
)

from pilothouse.api.istio.networking.v1alpha3 import gateway_pb2
from pilothouse.push.peer_authentication import MtlsMode
from pilothouse.xds.builders.filter_chain import build_filter_chain
from pilothouse.xds.builders.listener_tls import build_downstream_tls

TLS_TRANSPORT: Final = "tls"
RAW_BUFFER_TRANSPORT: Final = "raw_buffer"
ISTIO_MTLS_ALPNS: Final = (
    "istio",
    "istio-peer-exchange",
    "istio-http/1.0",
    "istio-http/1.1",
    "istio-h2",
)
"""What Istio clients offer over mutual TLS: a PERMISSIVE port's mTLS chain matches these."""

PLAINTEXT_SUFFIX: Final = "-plaintext"
PASSTHROUGH_TLS_SUFFIX: Final = "-tls"


def inspects_tls(mode: MtlsMode) -> bool:
    """Whether the listener needs the TLS inspector for ``mode``'s chains."""
    return mode is not MtlsMode.DISABLE


def build_mtls_context(*, http: bool) -> tls_pb2.DownstreamTlsContext:
    """The server side of Istio mutual TLS: ``default`` and ``ROOTCA`` over SDS, client
    certificate required, TLS 1.2 or later."""
    settings = gateway_pb2.ServerTLSSettings(mode=gateway_pb2.ServerTLSSettings.ISTIO_MUTUAL)
    context = build_downstream_tls(settings, http=http)
    params = context.common_tls_context.tls_params
    params.tls_minimum_protocol_version = common_pb2.TlsParameters.TLSv1_2
    return context


def build_inbound_chains(
    filters: Sequence[listener_components_pb2.Filter],
    *,
    name: str,
    port: int,
    http: bool,
    mode: MtlsMode,
) -> list[listener_components_pb2.FilterChain]:
    """The chains of an inbound port under ``mode``, each running ``filters``."""
    if mode is MtlsMode.DISABLE:
        return [_chain(filters, name, port)]
    mtls = _chain(filters, name, port, tls=build_mtls_context(http=http))
    mtls.filter_chain_match.transport_protocol = TLS_TRANSPORT
    if mode is MtlsMode.STRICT:
        return [mtls]
    mtls.filter_chain_match.application_protocols.extend(ISTIO_MTLS_ALPNS)
    chains = [mtls]
    if not http:
        passthrough = _chain(filters, name + PASSTHROUGH_TLS_SUFFIX, port)
        passthrough.filter_chain_match.transport_protocol = TLS_TRANSPORT
        chains.append(passthrough)
    plaintext = _chain(filters, name + PLAINTEXT_SUFFIX, port)
    plaintext.filter_chain_match.transport_protocol = RAW_BUFFER_TRANSPORT
    chains.append(plaintext)
    return chains


def _chain(
    filters: Sequence[listener_components_pb2.Filter],
    name: str,
    port: int,
    *,
    tls: tls_pb2.DownstreamTlsContext | None = None,
) -> listener_components_pb2.FilterChain:
    return build_filter_chain(
        filters, name=name, destination_port=port, tls=tls, connect_timeout=None
    )
