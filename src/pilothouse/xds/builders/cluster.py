"""``build_cluster``: one Envoy ``Cluster`` from frozen inputs.

:class:`ClusterInputs` holds everything the builder reads, so it can serve as
the cache key of the encoded cluster (DESIGN.md §2).  Its protobuf fields are
kept out of the generated ``__eq__``/``__hash__``; their deterministic
serialisation, taken at construction, stands in for them.  Treat the messages
as read-only once they are in an input.

What a cluster gets (in Istio's order):

1. name, discovery type, the mesh connect timeout; ``common_lb_config`` is always
   present, as in Istio.  EDS clusters read endpoints from ADS under their own
   name, or, for a proxy that polls REST-JSON (``eds_polling``), from a REST
   ``api_config_source`` on the bootstrap's REST cluster: such a proxy has no ADS
   stream.  STATIC and DNS clusters carry an inline ``load_assignment``.
2. connection pool (every cluster, inbound ones too): circuit breakers, connect
   timeout, TCP keepalive; see :mod:`.connection_pool`.
3. outbound only: outlier detection, load balancer, TLS.  A PASSTHROUGH load
   balancer turns the cluster into ORIGINAL_DST (no endpoints, no EDS).  Without
   TLS in the policy, ``auto_mtls`` gives the cluster auto-mTLS's transport socket
   matches (:mod:`.auto_mtls`), except on ORIGINAL_DST clusters, as in istiod.
4. HTTP protocol options (:mod:`.upstream_protocol`) in
   ``typed_extension_protocol_options``.
5. With a DestinationRule, ``metadata.filter_metadata["istio"]["config"]`` names it
   (``/apis/networking.istio.io/v1/namespaces/<ns>/destination-rule/<name>``), as
   istiod does: ``istioctl proxy-config cluster`` shows it as DESTINATION RULE.

Inbound clusters are recognised by their name (``inbound|<port>||``) and take
only the connection pool from the policy, as in Istio.  Not translated (yet):
``tunnel``, ``proxy_protocol``, ``retry_budget``, the rule's
``outlier_detection_http_error_codes``, Istio's cluster stats names, and the
per-proxy locality weights/priorities (an EDS concern).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Final

from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.config.core.v3 import config_source_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2
from google.protobuf.message import Message

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2
from pilothouse.xds.builders.auto_mtls import apply_auto_mtls
from pilothouse.xds.builders.connection_pool import (
    IstioTcpKeepalive,
    build_circuit_breakers,
    tcp_keepalive,
)
from pilothouse.xds.builders.endpoint import (
    LbEndpointInput,
    build_dns_load_assignment,
    build_load_assignment,
    dns_endpoint,
)
from pilothouse.xds.builders.load_balancer import apply_load_balancer, is_passthrough
from pilothouse.xds.builders.names import (
    BLACKHOLE_CLUSTER,
    PASSTHROUGH_CLUSTER,
    ClusterName,
    Direction,
    parse_cluster_name,
    srv_cluster_name,
)
from pilothouse.xds.builders.outlier_detection import (
    build_outlier_detection,
    healthy_panic_threshold,
)
from pilothouse.xds.builders.upstream_protocol import (
    HTTP_PROTOCOL_OPTIONS_KEY,
    AutoSni,
    HttpProtocolOptions,
    build_http_protocol_options,
    is_explicit_http2,
)
from pilothouse.xds.builders.upstream_tls import (
    DEFAULT_SYSTEM_CA_FILE,
    TlsOrigination,
    build_transport_socket,
    build_upstream_tls,
    needs_auto_sni,
)

Cluster = cluster_pb2.Cluster
ISTIO_MUTUAL: Final = dr_pb2.ClientTLSSettings(mode=dr_pb2.ClientTLSSettings.ISTIO_MUTUAL)
MESH_CONNECT_TIMEOUT: Final = timedelta(seconds=10)
PASSTHROUGH_IDLE_TIMEOUT: Final = timedelta(minutes=5)
ISTIO_METADATA_KEY: Final = "istio"


@dataclass(frozen=True, slots=True)
class RestPolling:
    """How a REST-mode proxy polls for the resources a served resource points at.

    ``cluster`` is the static HTTP/1.1 cluster in the proxy's bootstrap that reaches
    pilothouse (``xds-rest`` in :mod:`pilothouse.bootstrap.envoy`).  Envoy requires
    ``refresh_delay`` for a REST config source.
    """

    cluster: str
    refresh_delay: timedelta = timedelta(seconds=1)
    request_timeout: timedelta = timedelta(seconds=1)


class Discovery(enum.StrEnum):
    """Envoy's cluster discovery types, by their proto names."""

    EDS = "EDS"
    STRICT_DNS = "STRICT_DNS"
    LOGICAL_DNS = "LOGICAL_DNS"
    STATIC = "STATIC"
    ORIGINAL_DST = "ORIGINAL_DST"


@dataclass(frozen=True)
class ClusterInputs:
    """Everything :func:`build_cluster` reads.

    - ``protocol``: the Istio protocol of the service port (HTTP, HTTP2, GRPC,
      TCP, TLS, ...; ``""`` when unknown / sniffed).
    - ``endpoints``: for STATIC and DNS clusters.  A DNS cluster without
      endpoints resolves ``dns_host``:``dns_port``.
    - ``policy``: the effective ``TrafficPolicy`` (see :mod:`.traffic_policy`).
    - ``connect_timeout``, ``mesh_h2_upgrade``, ``mesh_tcp_keepalive``: the
      mesh-wide defaults (MeshConfig ``connectTimeout``, ``h2UpgradePolicy``,
      ``tcpKeepalive``).
    - ``service_accounts``: identities to verify when the rule lists no SANs.
    - ``system_ca_file``: the trust bundle for TLS origination without
      ``ca_certificates`` (``""``: verify nothing then).
    """

    name: str
    discovery: Discovery = Discovery.EDS
    protocol: str = "TCP"
    endpoints: tuple[LbEndpointInput, ...] = ()
    dns_host: str = ""
    dns_port: int = 0
    policy: dr_pb2.TrafficPolicy | None = field(default=None, compare=False)
    connect_timeout: timedelta = MESH_CONNECT_TIMEOUT
    mesh_h2_upgrade: bool = False
    mesh_tcp_keepalive: IstioTcpKeepalive | None = field(default=None, compare=False)
    service_accounts: tuple[str, ...] = ()
    system_ca_file: str = DEFAULT_SYSTEM_CA_FILE
    dns_lookup_family: str = "V4_ONLY"
    eds_polling: RestPolling | None = None
    """None: EDS over ADS; else the REST source an EDS cluster polls."""
    auto_mtls: bool = False
    """Without TLS in ``policy``: mutual TLS to sidecar endpoints, plaintext to others."""
    config_path: str = ""
    """The DestinationRule behind ``policy`` (:func:`destination_rule_config_path`), or ""."""
    message_key: tuple[bytes | None, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "message_key", (_message_key(self.policy), _message_key(self.mesh_tcp_keepalive))
        )


def build_cluster(inputs: ClusterInputs) -> cluster_pb2.Cluster:
    """The Envoy cluster for ``inputs``.

    Raises ``ValueError`` for inputs Envoy would reject (a DNS cluster with
    nothing to resolve, MUTUAL TLS without a key pair).
    """
    policy = inputs.policy if inputs.policy is not None else dr_pb2.TrafficPolicy()
    parsed = parse_cluster_name(inputs.name)
    outbound = parsed is None or parsed.direction == Direction.OUTBOUND
    pool = policy.connection_pool if policy.HasField("connection_pool") else None
    lb = policy.load_balancer if policy.HasField("load_balancer") else None
    outlier = policy.outlier_detection if policy.HasField("outlier_detection") else None
    tls = policy.tls if outbound and policy.HasField("tls") else None

    discovery = inputs.discovery
    if outbound and is_passthrough(lb):
        discovery = Discovery.ORIGINAL_DST

    cluster = Cluster(name=inputs.name, type=Cluster.DiscoveryType.Value(discovery.value))
    cluster.connect_timeout.FromTimedelta(inputs.connect_timeout)
    cluster.common_lb_config.SetInParent()
    _apply_discovery(cluster, inputs, discovery)

    # Connection pool: every cluster.
    if pool is not None and pool.HasField("tcp") and pool.tcp.HasField("connect_timeout"):
        cluster.connect_timeout.CopyFrom(pool.tcp.connect_timeout)
    cluster.circuit_breakers.CopyFrom(build_circuit_breakers(pool))
    keepalive = tcp_keepalive(pool, inputs.mesh_tcp_keepalive)
    if keepalive is not None:
        cluster.upstream_connection_options.tcp_keepalive.CopyFrom(keepalive)

    auto_sni, auto_san = needs_auto_sni(tls)
    options = build_http_protocol_options(
        inputs.protocol,
        pool,
        outbound=outbound,
        mesh_h2_upgrade=inputs.mesh_h2_upgrade,
        auto=AutoSni(sni=auto_sni, san_validation=auto_san),
    )

    if outbound:
        if outlier is not None:
            cluster.outlier_detection.CopyFrom(build_outlier_detection(outlier))
            cluster.common_lb_config.healthy_panic_threshold.CopyFrom(
                healthy_panic_threshold(outlier)
            )
        apply_load_balancer(cluster, lb, has_outlier_detection=outlier is not None)
        origination = TlsOrigination(
            istio_sni=_istio_sni(inputs.name, parsed),
            http2=is_explicit_http2(options),
            service_accounts=inputs.service_accounts,
            system_ca_file=inputs.system_ca_file,
        )
        context = build_upstream_tls(tls, origination)
        if context is not None:
            cluster.transport_socket.CopyFrom(build_transport_socket(context))
        elif tls is None and inputs.auto_mtls and discovery != Discovery.ORIGINAL_DST:
            apply_auto_mtls(cluster, build_upstream_tls(ISTIO_MUTUAL, origination))
    elif discovery == Discovery.ORIGINAL_DST:
        cluster.lb_policy = Cluster.CLUSTER_PROVIDED

    if options is not None:
        _set_http_protocol_options(cluster, options)
    if inputs.config_path:
        cluster.metadata.filter_metadata[ISTIO_METADATA_KEY].update({"config": inputs.config_path})
    return cluster


def destination_rule_config_path(namespace: str, name: str) -> str:
    """The path istiod puts in cluster metadata to name a DestinationRule."""
    return f"/apis/networking.istio.io/v1/namespaces/{namespace}/destination-rule/{name}"


def build_blackhole_cluster(
    connect_timeout: timedelta = MESH_CONNECT_TIMEOUT,
) -> cluster_pb2.Cluster:
    """``BlackHoleCluster``: STATIC with no endpoints; routes to it fail fast."""
    cluster = Cluster(name=BLACKHOLE_CLUSTER, type=Cluster.STATIC, lb_policy=Cluster.ROUND_ROBIN)
    cluster.connect_timeout.FromTimedelta(connect_timeout)
    return cluster


def build_passthrough_cluster(
    connect_timeout: timedelta = MESH_CONNECT_TIMEOUT,
) -> cluster_pb2.Cluster:
    """``PassthroughCluster``: ORIGINAL_DST, the client's protocol, 5 min idle timeout."""
    cluster = Cluster(
        name=PASSTHROUGH_CLUSTER, type=Cluster.ORIGINAL_DST, lb_policy=Cluster.CLUSTER_PROVIDED
    )
    cluster.connect_timeout.FromTimedelta(connect_timeout)
    cluster.circuit_breakers.CopyFrom(build_circuit_breakers(None))
    options = HttpProtocolOptions()
    options.common_http_protocol_options.idle_timeout.FromTimedelta(PASSTHROUGH_IDLE_TIMEOUT)
    options.use_downstream_protocol_config.http_protocol_options.SetInParent()
    options.use_downstream_protocol_config.http2_protocol_options.SetInParent()
    _set_http_protocol_options(cluster, options)
    return cluster


def ads_config_source() -> config_source_pb2.ConfigSource:
    """``{ads: {}, initial_fetch_timeout: 0s, resource_api_version: V3}``, as Istio sends."""
    source = config_source_pb2.ConfigSource(resource_api_version=config_source_pb2.V3)
    source.ads.SetInParent()
    source.initial_fetch_timeout.SetInParent()
    return source


def rest_config_source(polling: RestPolling) -> config_source_pb2.ConfigSource:
    """A REST-JSON ``api_config_source`` (V3) on ``polling.cluster``, initial fetch 0s."""
    source = config_source_pb2.ConfigSource(resource_api_version=config_source_pb2.V3)
    api = source.api_config_source
    api.api_type = config_source_pb2.ApiConfigSource.REST
    api.transport_api_version = config_source_pb2.V3
    api.cluster_names.append(polling.cluster)
    api.refresh_delay.FromTimedelta(polling.refresh_delay)
    api.request_timeout.FromTimedelta(polling.request_timeout)
    source.initial_fetch_timeout.SetInParent()
    return source


def _apply_discovery(
    cluster: cluster_pb2.Cluster, inputs: ClusterInputs, discovery: Discovery
) -> None:
    if discovery == Discovery.EDS:
        polling = inputs.eds_polling
        source = ads_config_source() if polling is None else rest_config_source(polling)
        cluster.eds_cluster_config.eds_config.CopyFrom(source)
        cluster.eds_cluster_config.service_name = inputs.name
    elif discovery == Discovery.STATIC:
        cluster.load_assignment.CopyFrom(build_load_assignment(inputs.name, inputs.endpoints))
    elif discovery in (Discovery.STRICT_DNS, Discovery.LOGICAL_DNS):
        endpoints = inputs.endpoints
        if not endpoints:
            if not inputs.dns_host or not inputs.dns_port:
                raise ValueError(f"DNS cluster {inputs.name} needs endpoints or a host and port")
            endpoints = (dns_endpoint(inputs.dns_host, inputs.dns_port),)
        cluster.load_assignment.CopyFrom(
            build_dns_load_assignment(
                inputs.name, endpoints, logical=discovery == Discovery.LOGICAL_DNS
            )
        )
        cluster.dns_lookup_family = Cluster.DnsLookupFamily.Value(inputs.dns_lookup_family)


def _istio_sni(name: str, parsed: ClusterName | None) -> str:
    if parsed is None or parsed.direction != Direction.OUTBOUND:
        return name
    return srv_cluster_name(parsed.host, parsed.port, parsed.subset)


def _set_http_protocol_options(cluster: cluster_pb2.Cluster, options: Message) -> None:
    typed = any_pb2.Any()
    typed.Pack(options, deterministic=True)
    cluster.typed_extension_protocol_options[HTTP_PROTOCOL_OPTIONS_KEY].CopyFrom(typed)


def _message_key(message: Message | None) -> bytes | None:
    return None if message is None else message.SerializeToString(deterministic=True)
