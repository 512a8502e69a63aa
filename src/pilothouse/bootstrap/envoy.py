"""Envoy's bootstrap for a proxy fed by pilothouse, built as a plain dict.

Istio's conventions (``tools/packaging/common/envoy_bootstrap.json``): the xDS cluster is
called ``xds-grpc``, is STATIC (STRICT_DNS when the xDS host is a name) and speaks HTTP/2;
ADS uses ``transport_api_version: V3`` and ``set_node_on_first_message_only: true``; CDS
and LDS come over ADS with ``initial_fetch_timeout: 0s`` and ``resource_api_version: V3``.
One departure: the ADS stream's reconnect back-off is capped at ``xds_retry_max`` (5 s)
instead of Envoy's 30 s. Istio's Envoy talks to a local agent that hides istiod restarts;
an Envoy fed by pilothouse directly would otherwise wait up to 30 s after a control-plane
restart before it asks again.
Three transports:

- ``sotw``: ADS with ``api_type: GRPC``;
- ``delta``: ADS with ``api_type: DELTA_GRPC`` (Istio's default since 1.22);
- ``rest``: no ADS; CDS and LDS are polled over REST-JSON (``refresh_delay``,
  ``request_timeout``) through the HTTP/1.1 cluster ``xds-rest``.  Served Listeners and
  Clusters must then point RDS and EDS at :func:`xds_config_source` as well.

With :class:`XdsTls` the ``xds-grpc`` cluster speaks TLS to pilothouse's TLS port
(istiod's 15012): it trusts the root in ``root_file`` (``<ca dir>/root-cert.pem``),
checks the server's name (``server_name``, else the xDS host: a DNS SAN, or an IP SAN
for an address), and proves who the proxy is with a client certificate and key
(files), or with a bearer token that the ADS ``grpc_service`` sends as
``authorization: Bearer <token>`` in its ``initial_metadata``. The token is written into
the bootstrap itself (Envoy reads initial metadata once): regenerate the bootstrap when
the token is renewed, and keep the file as private as the token.

The result is ready for ``json.dumps`` or ``yaml.safe_dump``; nothing here touches a file.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from pilothouse.bootstrap.node import Locality, check_metadata, node_block
from pilothouse.settings import RestSettings

XDS_GRPC_CLUSTER = "xds-grpc"
"""Istio's name for the static cluster that carries ADS."""
XDS_REST_CLUSTER = "xds-rest"
"""The static HTTP/1.1 cluster that carries REST-JSON discovery requests."""

_PROTOCOL_OPTIONS_KEY = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
_PROTOCOL_OPTIONS_TYPE = (
    "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
)
_STDOUT_ACCESS_LOG_TYPE = (
    "type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog"
)
_CIRCUIT_BREAKER_LIMIT = 100_000
_TLS_SOCKET = "envoy.transport_sockets.tls"
_UPSTREAM_TLS_TYPE = (
    "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
)


@dataclass(frozen=True, slots=True)
class XdsTls:
    """How the ``xds-grpc`` cluster reaches pilothouse's TLS port."""

    root_file: str
    """PEM roots the server's certificate must chain to (``<ca dir>/root-cert.pem``)."""
    cert_file: str = ""
    """The proxy's certificate chain (PEM), with ``key_file``: a client certificate."""
    key_file: str = ""
    token: str = ""
    """A bearer token (a JWT), sent as ``authorization: Bearer <token>``."""
    server_name: str = ""
    """The name the server's certificate must carry; empty means the xDS host."""

    def __post_init__(self) -> None:
        if not self.root_file:
            raise ValueError("TLS to the xDS port needs a root certificate file")
        if bool(self.cert_file) != bool(self.key_file):
            raise ValueError("a client certificate needs both its certificate and key files")
        if any(c in self.token for c in "\r\n"):
            raise ValueError("the token must be one line")


class XdsTransport(StrEnum):
    """How Envoy fetches its dynamic configuration."""

    SOTW = "sotw"
    DELTA = "delta"
    REST = "rest"


@dataclass(frozen=True, slots=True)
class EnvoyBootstrapOptions:
    """Everything an Envoy bootstrap depends on.  Durations are in seconds."""

    node_id: str
    node_cluster: str = "istio-proxy"
    """``node.cluster``; Envoy refuses ADS and REST subscriptions without one."""
    node_metadata: Mapping[str, Any] = field(default_factory=dict, hash=False)
    """Istio metadata keys (``NAMESPACE``, ``LABELS``, ``GENERATOR``…), JSON-like values."""
    locality: Locality | None = None
    xds_host: str = "127.0.0.1"
    xds_port: int = 15010
    admin_host: str = "127.0.0.1"
    admin_port: int = 15000
    """Admin port; 0 lets the kernel choose (read it back with ``--admin-address-path``)."""
    transport: XdsTransport = XdsTransport.SOTW
    initial_fetch_timeout: float = 0.0
    """Istio uses 0 (wait for the first response for ever); Envoy's own default is 15 s."""
    connect_timeout: float = 1.0
    xds_retry_base: float = 0.5
    """First delay before Envoy re-opens a broken ADS stream (Envoy's own default)."""
    xds_retry_max: float = 5.0
    """Longest delay between ADS reconnect attempts (Envoy's own default is 30 s)."""
    rest_refresh_delay: float = RestSettings.refresh_delay
    """Equal to what pilothouse's REST answers tell the proxy (PILOTHOUSE_REST_REFRESH_DELAY)."""
    rest_request_timeout: float = RestSettings.request_timeout
    access_log_stdout: bool = False
    """Log admin-interface requests to stdout (listener access logs come with LDS)."""
    xds_tls: XdsTls | None = None
    """TLS to the xDS port (gRPC transports only); None is plaintext."""

    def __post_init__(self) -> None:
        if not self.node_id or not self.node_cluster:
            raise ValueError("node_id and node_cluster must not be empty (Envoy requires both)")
        if not self.xds_host:
            raise ValueError("xds_host must not be empty")
        if not _is_ip(self.admin_host):
            raise ValueError(f"admin_host {self.admin_host!r} is not an IP address")
        if not 0 < self.xds_port < 65536:
            raise ValueError(f"xds_port {self.xds_port} is not in 1..65535")
        if not 0 <= self.admin_port < 65536:
            raise ValueError(f"admin_port {self.admin_port} is not in 0..65535")
        transport = XdsTransport(self.transport)
        object.__setattr__(self, "transport", transport)
        if transport is XdsTransport.REST and (
            self.rest_refresh_delay <= 0 or self.rest_request_timeout <= 0
        ):
            raise ValueError("REST refresh_delay and request_timeout must be positive")
        durations = (
            "initial_fetch_timeout",
            "connect_timeout",
            "xds_retry_base",
            "xds_retry_max",
            "rest_refresh_delay",
            "rest_request_timeout",
        )
        for name in durations:
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number of seconds >= 0")
        if self.connect_timeout == 0:
            raise ValueError("connect_timeout must be positive")
        if not 0 < self.xds_retry_base <= self.xds_retry_max:
            raise ValueError("xds_retry_base must be positive and at most xds_retry_max")
        if self.xds_tls is not None and transport is XdsTransport.REST:
            raise ValueError("TLS to the xDS port is for the gRPC transports, not REST")
        check_metadata(self.node_metadata)
        object.__setattr__(self, "node_metadata", MappingProxyType(dict(self.node_metadata)))


def proto_duration(seconds: float) -> str:
    """``google.protobuf.Duration`` in its JSON form: ``0s``, ``1s``, ``0.25s``."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"not a duration: {seconds!r}")
    text = f"{seconds:.9f}".rstrip("0").rstrip(".")
    return f"{text}s"


def xds_config_source(options: EnvoyBootstrapOptions) -> dict[str, Any]:
    """The ``ConfigSource`` for CDS and LDS, and for RDS/EDS in served resources."""
    source: dict[str, Any]
    if options.transport is XdsTransport.REST:
        source = {
            "api_config_source": {
                "api_type": "REST",
                "transport_api_version": "V3",
                "cluster_names": [XDS_REST_CLUSTER],
                "refresh_delay": proto_duration(options.rest_refresh_delay),
                "request_timeout": proto_duration(options.rest_request_timeout),
            }
        }
    else:
        source = {"ads": {}}
    source["initial_fetch_timeout"] = proto_duration(options.initial_fetch_timeout)
    source["resource_api_version"] = "V3"
    return source


def envoy_bootstrap(options: EnvoyBootstrapOptions) -> dict[str, Any]:
    """The whole bootstrap for ``options``, as a dict of plain JSON values."""
    dynamic: dict[str, Any] = {}
    if options.transport is XdsTransport.REST:
        xds_cluster = _static_cluster(options, XDS_REST_CLUSTER, {"http_protocol_options": {}})
    else:
        dynamic["ads_config"] = {
            "api_type": "DELTA_GRPC" if options.transport is XdsTransport.DELTA else "GRPC",
            "transport_api_version": "V3",
            "set_node_on_first_message_only": True,
            "grpc_services": [
                {
                    "envoy_grpc": {
                        "cluster_name": XDS_GRPC_CLUSTER,
                        "retry_policy": {
                            "retry_back_off": {
                                "base_interval": proto_duration(options.xds_retry_base),
                                "max_interval": proto_duration(options.xds_retry_max),
                            }
                        },
                    }
                }
            ],
        }
        keepalive = {"interval": "30s", "timeout": "10s"}
        http2 = {"http2_protocol_options": {"connection_keepalive": keepalive}}
        xds_cluster = _static_cluster(options, XDS_GRPC_CLUSTER, http2)
        if options.xds_tls is not None:
            xds_cluster["transport_socket"] = _tls_socket(options.xds_tls, options.xds_host)
            if options.xds_tls.token:
                dynamic["ads_config"]["grpc_services"][0]["initial_metadata"] = [
                    {"key": "authorization", "value": f"Bearer {options.xds_tls.token}"}
                ]
    dynamic["cds_config"] = xds_config_source(options)
    dynamic["lds_config"] = xds_config_source(options)
    return {
        "node": node_block(
            options.node_id, options.node_cluster, options.node_metadata, options.locality
        ),
        "admin": _admin(options),
        "dynamic_resources": dynamic,
        "static_resources": {"clusters": [xds_cluster]},
    }


def _tls_socket(tls: XdsTls, host: str) -> dict[str, Any]:
    """The ``xds-grpc`` cluster's UpstreamTlsContext."""
    name = tls.server_name or host
    san_type = "IP_ADDRESS" if _is_ip(name) else "DNS"
    common: dict[str, Any] = {
        "alpn_protocols": ["h2"],
        "tls_params": {"tls_minimum_protocol_version": "TLSv1_2"},
        "validation_context": {
            "trusted_ca": {"filename": tls.root_file},
            "match_typed_subject_alt_names": [{"san_type": san_type, "matcher": {"exact": name}}],
        },
    }
    if tls.cert_file:
        common["tls_certificates"] = [
            {
                "certificate_chain": {"filename": tls.cert_file},
                "private_key": {"filename": tls.key_file},
            }
        ]
    context: dict[str, Any] = {"@type": _UPSTREAM_TLS_TYPE, "common_tls_context": common}
    if san_type == "DNS":
        context["sni"] = name
    return {"name": _TLS_SOCKET, "typed_config": context}


def _admin(options: EnvoyBootstrapOptions) -> dict[str, Any]:
    admin: dict[str, Any] = {
        "address": _socket_address(options.admin_host, options.admin_port),
    }
    if options.access_log_stdout:
        admin["access_log"] = [
            {
                "name": "envoy.access_loggers.stdout",
                "typed_config": {"@type": _STDOUT_ACCESS_LOG_TYPE},
            }
        ]
    return admin


def _static_cluster(
    options: EnvoyBootstrapOptions, name: str, http_config: dict[str, Any]
) -> dict[str, Any]:
    limits = {
        "max_connections": _CIRCUIT_BREAKER_LIMIT,
        "max_pending_requests": _CIRCUIT_BREAKER_LIMIT,
        "max_requests": _CIRCUIT_BREAKER_LIMIT,
    }
    return {
        "name": name,
        "type": "STATIC" if _is_ip(options.xds_host) else "STRICT_DNS",
        "connect_timeout": proto_duration(options.connect_timeout),
        "circuit_breakers": {
            "thresholds": [{"priority": "DEFAULT", **limits}, {"priority": "HIGH", **limits}]
        },
        "upstream_connection_options": {"tcp_keepalive": {"keepalive_time": 300}},
        "typed_extension_protocol_options": {
            _PROTOCOL_OPTIONS_KEY: {
                "@type": _PROTOCOL_OPTIONS_TYPE,
                "explicit_http_config": http_config,
            }
        },
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [
                {
                    "lb_endpoints": [
                        {
                            "endpoint": {
                                "address": _socket_address(options.xds_host, options.xds_port)
                            }
                        }
                    ]
                }
            ],
        },
    }


def _socket_address(host: str, port: int) -> dict[str, Any]:
    return {"socket_address": {"address": host, "port_value": port}}


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
