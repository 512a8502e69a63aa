"""The upstream HTTP protocol of a cluster: Envoy's ``HttpProtocolOptions`` extension.

Envoy reads it from ``typed_extension_protocol_options`` under the key
``envoy.extensions.upstreams.http.v3.HttpProtocolOptions``.  The choice, in
Istio's order:

1. the service port's protocol: HTTP2, GRPC and GRPC-Web → explicit HTTP/2;
   an unknown protocol (``""``, "UNSUPPORTED": Istio sniffs it on sidecars) →
   use the downstream protocol; HTTP and everything else → nothing, so Envoy
   speaks its default HTTP/1.1;
2. ``http.use_client_protocol`` → use the downstream protocol;
3. outbound only: ``http.h2_upgrade_policy`` UPGRADE → explicit HTTP/2, whatever
   the port says; DO_NOT_UPGRADE → leave it; DEFAULT → the mesh-wide policy,
   which upgrades HTTP ports only.

The connection pool adds ``common_http_protocol_options`` (``idle_timeout``
from ``http.idle_timeout``, else ``tcp.idle_timeout``;
``max_requests_per_connection``; ``max_connection_duration``) and, on an
explicit HTTP/2 cluster, ``http2_protocol_options.max_concurrent_streams``.
TLS origination without an SNI adds ``upstream_http_protocol_options.auto_sni``
(and ``auto_san_validation`` when there are no SANs to check either).  When any
of these is needed but no protocol was chosen, the options say HTTP/1.1
explicitly (Envoy requires a choice); when nothing is needed there are no
options at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from envoy.extensions.upstreams.http.v3 import (  # type: ignore[import-untyped]
    http_protocol_options_pb2,
)

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2

HTTP_PROTOCOL_OPTIONS_KEY: Final = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"

HTTP2_PROTOCOLS: Final = frozenset({"HTTP2", "GRPC", "GRPC-WEB"})
HTTP_PROTOCOLS: Final = frozenset({"HTTP", "HTTP_PROXY"} | HTTP2_PROTOCOLS)
SNIFFED_PROTOCOLS: Final = frozenset({"", "UNSUPPORTED", "UNSUPPORTEDPROTOCOL"})

HttpProtocolOptions = http_protocol_options_pb2.HttpProtocolOptions
H2UpgradePolicy = dr_pb2.ConnectionPoolSettings.HTTPSettings.H2UpgradePolicy


@dataclass(frozen=True, slots=True)
class AutoSni:
    """What TLS origination asks of the HTTP layer."""

    sni: bool = False
    san_validation: bool = False


def build_http_protocol_options(
    protocol: str,
    pool: dr_pb2.ConnectionPoolSettings | None,
    *,
    outbound: bool = True,
    mesh_h2_upgrade: bool = False,
    auto: AutoSni = AutoSni(),
) -> http_protocol_options_pb2.HttpProtocolOptions | None:
    """The options for a cluster whose service port speaks ``protocol``, or ``None``."""
    protocol = protocol.upper()
    options = HttpProtocolOptions()
    if protocol in HTTP2_PROTOCOLS:
        options.explicit_http_config.http2_protocol_options.SetInParent()
    elif protocol in SNIFFED_PROTOCOLS:
        _use_downstream(options)

    http = pool.http if pool is not None and pool.HasField("http") else None
    tcp = pool.tcp if pool is not None and pool.HasField("tcp") else None
    if http is not None and http.use_client_protocol:
        _use_downstream(options)
    if outbound and _should_upgrade(protocol, http, mesh_h2_upgrade):
        options.explicit_http_config.http2_protocol_options.SetInParent()

    common = options.common_http_protocol_options
    if http is not None and http.HasField("idle_timeout"):
        common.idle_timeout.CopyFrom(http.idle_timeout)
    elif tcp is not None and tcp.HasField("idle_timeout"):
        common.idle_timeout.CopyFrom(tcp.idle_timeout)
    if http is not None and http.max_requests_per_connection > 0:
        common.max_requests_per_connection.value = http.max_requests_per_connection
    if tcp is not None and tcp.HasField("max_connection_duration"):
        common.max_connection_duration.CopyFrom(tcp.max_connection_duration)
    if not common.ListFields():
        options.ClearField("common_http_protocol_options")
    if http is not None and http.max_concurrent_streams > 0 and is_explicit_http2(options):
        options.explicit_http_config.http2_protocol_options.max_concurrent_streams.value = (
            http.max_concurrent_streams
        )

    if auto.sni:
        options.upstream_http_protocol_options.auto_sni = True
    if auto.san_validation:
        options.upstream_http_protocol_options.auto_san_validation = True

    if not options.ListFields():
        return None
    if options.WhichOneof("upstream_protocol_options") is None:
        options.explicit_http_config.http_protocol_options.SetInParent()
    return options


def is_explicit_http2(options: http_protocol_options_pb2.HttpProtocolOptions | None) -> bool:
    """True when the options pin the upstream to HTTP/2."""
    return (
        options is not None
        and options.WhichOneof("upstream_protocol_options") == "explicit_http_config"
        and options.explicit_http_config.WhichOneof("protocol_config") == "http2_protocol_options"
    )


def _use_downstream(options: http_protocol_options_pb2.HttpProtocolOptions) -> None:
    downstream = options.use_downstream_protocol_config
    downstream.http_protocol_options.SetInParent()
    downstream.http2_protocol_options.SetInParent()


def _should_upgrade(
    protocol: str,
    http: dr_pb2.ConnectionPoolSettings.HTTPSettings | None,
    mesh_h2_upgrade: bool,
) -> bool:
    if http is not None:
        if http.h2_upgrade_policy == dr_pb2.ConnectionPoolSettings.HTTPSettings.UPGRADE:
            return True
        if http.h2_upgrade_policy == dr_pb2.ConnectionPoolSettings.HTTPSettings.DO_NOT_UPGRADE:
            return False
    return mesh_h2_upgrade and protocol in HTTP_PROTOCOLS
