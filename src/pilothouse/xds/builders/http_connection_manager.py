"""The HTTP connection manager (HCM) a listener's filter chain ends in, with its HTTP filters.

:func:`build_http_connection_manager` sets what istiod sets on every HCM:

- routes over RDS (``rds.route_config_name``, fetched over ADS with no
  initial-fetch timeout, or from the given config source, e.g. REST), or an
  inline ``route_config``;
- ``http_filters``: ``envoy.filters.http.grpc_web`` on GRPC-Web ports, the
  access-control filters (``jwt_authn``, RBAC: see access_control.py), then
  ``envoy.filters.http.fault`` and ``envoy.filters.http.cors`` (routes carry
  their per-route fault and CORS config), the caller's extra filters, and
  ``envoy.filters.http.router`` last, in istiod's order;
- ``normalize_path: true`` and ``path_with_escaped_slashes_action:
  KEEP_UNCHANGED`` (MeshConfig ``pathNormalization`` BASE, the default);
- ``use_remote_address``: true on gateways, false on sidecars (istiod's
  ``PILOT_SIDECAR_USE_REMOTE_ADDRESS`` is off by default);
- ``generate_request_id: true``; a ``websocket`` upgrade config;
  ``stream_idle_timeout: 0s`` (disabled, as istiod does);
- ``http2_protocol_options {}`` on HTTP2, GRPC and GRPC-Web ports;
- optionally a stdout access log (Envoy's default format).

By listener class (istiod's ``ProxyHeaders`` defaults): gateways present as
``server_name: istio-envoy``, sanitise and set ``x-forwarded-client-cert``
(subject, cert, DNS and URI SANs); sidecar inbound presents as
``istio-envoy`` and appends-and-forwards the XFCC (subject, DNS, URI); sidecar
outbound keeps Envoy's defaults.  Access logs and tracing from Telemetry are added
to built listeners by telemetry.py; WasmPlugins are placed in the built HCMs per
proxy afterwards (:mod:`pilothouse.xds.builders.wasm_plugin`).  Not set: Istio's
metadata-exchange and stats filters (they need Istio's Envoy build).

:func:`build_router_only_connection_manager` is the bare HCM that proxyless
gRPC understands: a route specifier and the router filter, nothing else
(gRPC NACKs HTTP filters it does not know, such as CORS).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Final

from envoy.config.core.v3 import (  # type: ignore[import-untyped]
    config_source_pb2,
    protocol_pb2,
)
from envoy.config.route.v3 import route_pb2  # type: ignore[import-untyped]
from envoy.extensions.access_loggers.stream.v3 import stream_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.http.cors.v3 import cors_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.http.fault.v3 import fault_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.http.grpc_web.v3 import grpc_web_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.http.router.v3 import router_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)
from google.protobuf.message import Message

from pilothouse.xds.builders.cluster import ads_config_source
from pilothouse.xds.builders.listener import typed
from pilothouse.xds.builders.upstream_protocol import HTTP2_PROTOCOLS, HTTP_PROTOCOLS

HttpConnectionManager = hcm_pb2.HttpConnectionManager
HttpFilter = hcm_pb2.HttpFilter

FAULT_FILTER: Final = "envoy.filters.http.fault"
CORS_FILTER: Final = "envoy.filters.http.cors"
GRPC_WEB_FILTER: Final = "envoy.filters.http.grpc_web"
ROUTER_FILTER: Final = "envoy.filters.http.router"
STDOUT_ACCESS_LOG: Final = "envoy.access_loggers.stdout"
ISTIO_SERVER_NAME: Final = "istio-envoy"
WEBSOCKET: Final = "websocket"
GRPC_WEB: Final = "GRPC-WEB"


class ListenerClass(enum.StrEnum):
    """Which kind of listener an HCM sits in; istiod varies a few headers by it."""

    SIDECAR_OUTBOUND = "sidecar-outbound"
    SIDECAR_INBOUND = "sidecar-inbound"
    GATEWAY = "gateway"


def is_http(protocol: str) -> bool:
    """HTTP, HTTP2, HTTP_PROXY, GRPC, GRPC-Web (any case): ports an HCM serves."""
    return protocol.upper() in HTTP_PROTOCOLS


def is_http2(protocol: str) -> bool:
    """HTTP2, GRPC, GRPC-Web (any case): ports that get HTTP/2 options."""
    return protocol.upper() in HTTP2_PROTOCOLS


def build_http_connection_manager(
    stat_prefix: str,
    *,
    rds_name: str | None = None,
    route_config: route_pb2.RouteConfiguration | None = None,
    config_source: config_source_pb2.ConfigSource | None = None,
    listener_class: ListenerClass = ListenerClass.SIDECAR_OUTBOUND,
    protocol: str = "HTTP",
    access_log: bool = False,
    use_remote_address: bool | None = None,
    extra_http_filters: Sequence[hcm_pb2.HttpFilter] = (),
    access_filters: Sequence[hcm_pb2.HttpFilter] = (),
) -> hcm_pb2.HttpConnectionManager:
    """An HCM with routes from RDS ``rds_name`` or the inline ``route_config`` (exactly one).

    ``config_source`` replaces the default ADS source of the RDS subscription.
    ``use_remote_address`` overrides the listener class's default (true only on
    gateways).  ``extra_http_filters`` go after CORS, before the router;
    ``access_filters`` (authentication, authorization) before fault and CORS.
    Raises ``ValueError`` when neither or both route specifiers are given.
    """
    manager = _with_routes(
        HttpConnectionManager(stat_prefix=stat_prefix), rds_name, route_config, config_source
    )
    manager.path_with_escaped_slashes_action = HttpConnectionManager.KEEP_UNCHANGED
    manager.normalize_path.value = True
    if use_remote_address is None:
        use_remote_address = listener_class == ListenerClass.GATEWAY
    manager.use_remote_address.value = use_remote_address
    manager.generate_request_id.value = True
    manager.upgrade_configs.add(upgrade_type=WEBSOCKET)
    manager.stream_idle_timeout.SetInParent()  # 0s: no stream idle timeout
    if is_http2(protocol):
        manager.http2_protocol_options.CopyFrom(protocol_pb2.Http2ProtocolOptions())
    _apply_listener_class(manager, listener_class)
    if access_log:
        manager.access_log.add(name=STDOUT_ACCESS_LOG, typed_config=typed(stdout_access_log()))
    manager.http_filters.extend(http_filters(protocol, extra_http_filters, access_filters))
    return manager


def build_router_only_connection_manager(
    stat_prefix: str,
    *,
    rds_name: str | None = None,
    route_config: route_pb2.RouteConfiguration | None = None,
    config_source: config_source_pb2.ConfigSource | None = None,
) -> hcm_pb2.HttpConnectionManager:
    """An HCM with a route specifier and only the router filter (proxyless gRPC)."""
    manager = _with_routes(
        HttpConnectionManager(stat_prefix=stat_prefix), rds_name, route_config, config_source
    )
    manager.http_filters.append(router_filter())
    return manager


def http_filters(
    protocol: str = "HTTP",
    extra: Sequence[hcm_pb2.HttpFilter] = (),
    access: Sequence[hcm_pb2.HttpFilter] = (),
) -> list[hcm_pb2.HttpFilter]:
    """The HTTP filter chain in istiod's order: [grpc_web], access..., fault, cors,
    extra..., router."""
    filters: list[hcm_pb2.HttpFilter] = []
    if protocol.upper() == GRPC_WEB:
        filters.append(http_filter(GRPC_WEB_FILTER, grpc_web_pb2.GrpcWeb()))
    filters.extend(access)
    filters.append(http_filter(FAULT_FILTER, fault_pb2.HTTPFault()))
    filters.append(http_filter(CORS_FILTER, cors_pb2.Cors()))
    filters.extend(extra)
    filters.append(router_filter())
    return filters


def http_filter(name: str, config: Message) -> hcm_pb2.HttpFilter:
    """An HTTP filter ``name`` with ``typed_config`` = ``config``."""
    return HttpFilter(name=name, typed_config=typed(config))


def router_filter() -> hcm_pb2.HttpFilter:
    """``envoy.filters.http.router`` with default settings."""
    return http_filter(ROUTER_FILTER, router_pb2.Router())


def stdout_access_log() -> stream_pb2.StdoutAccessLog:
    """Envoy's stdout access logger in its default text format."""
    return stream_pb2.StdoutAccessLog()


def _with_routes(
    manager: hcm_pb2.HttpConnectionManager,
    rds_name: str | None,
    route_config: route_pb2.RouteConfiguration | None,
    config_source: config_source_pb2.ConfigSource | None,
) -> hcm_pb2.HttpConnectionManager:
    if (rds_name is None) == (route_config is None):
        raise ValueError("an HTTP connection manager needs exactly one of rds_name, route_config")
    if rds_name is not None:
        if not rds_name:
            raise ValueError("rds_name must not be empty")
        manager.rds.route_config_name = rds_name
        manager.rds.config_source.CopyFrom(
            config_source if config_source is not None else ads_config_source()
        )
    else:
        manager.route_config.CopyFrom(route_config)
    return manager


def _apply_listener_class(
    manager: hcm_pb2.HttpConnectionManager, listener_class: ListenerClass
) -> None:
    if listener_class == ListenerClass.GATEWAY:
        manager.server_name = ISTIO_SERVER_NAME
        manager.forward_client_cert_details = HttpConnectionManager.SANITIZE_SET
        details = manager.set_current_client_cert_details
        details.subject.value = True
        details.cert = True
        details.dns = True
        details.uri = True
    elif listener_class == ListenerClass.SIDECAR_INBOUND:
        manager.server_name = ISTIO_SERVER_NAME
        manager.forward_client_cert_details = HttpConnectionManager.APPEND_FORWARD
        details = manager.set_current_client_cert_details
        details.subject.value = True
        details.dns = True
        details.uri = True
