"""Access logs and tracing on a built listener's connection managers and TCP proxies.

:func:`apply_telemetry` takes one mode's effective telemetry
(:class:`~pilothouse.push.telemetry.ModeTelemetry`: CLIENT for outbound listeners and
gateways, SERVER for inbound listeners) and writes it into every HTTP connection manager
and ``tcp_proxy`` of a listener, as istiod does (``accesslog.go``, ``tracing.go``):

- each access log, sorted by provider name: ``envoy.access_loggers.file``
  (``FileAccessLog``, text as ``text_format_source.inline_string`` or labels as
  ``json_format``) or ``envoy.access_loggers.open_telemetry`` (OTLP/gRPC to the
  provider's cluster), with ``filter.expression`` as Envoy's CEL access-log filter;
- on HTTP connection managers, ``tracing``: client and overall sampling 100 %, random
  sampling the effective percentage, the custom tags, and the provider
  (``envoy.tracers.zipkin``: HTTP JSON v2 to ``http://<host><path>`` through the
  cluster ``outbound|<port>||<host>``; ``envoy.tracers.opentelemetry``: OTLP over gRPC
  or HTTP to that cluster); gateways spawn an upstream span; ``useRequestIdForTraceSampling:
  false`` sets the UUID request-id extension so that ids stop deciding sampling.

Nothing else of the listener is touched. It reads only its arguments, so the listener
generators call it from builds cached under inputs holding the telemetry.
"""

from __future__ import annotations

import json
from typing import Any, Final

from envoy.config.accesslog.v3 import accesslog_pb2  # type: ignore[import-untyped]
from envoy.config.core.v3 import (  # type: ignore[import-untyped]
    grpc_service_pb2,
    http_service_pb2,
)
from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]
from envoy.config.trace.v3 import (  # type: ignore[import-untyped]
    opentelemetry_pb2,
    zipkin_pb2,
)
from envoy.extensions.access_loggers.file.v3 import file_pb2  # type: ignore[import-untyped]
from envoy.extensions.access_loggers.filters.cel.v3 import (  # type: ignore[import-untyped]
    cel_pb2,
)
from envoy.extensions.access_loggers.open_telemetry.v3 import (  # type: ignore[import-untyped]
    logs_service_pb2,
)
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)
from envoy.extensions.filters.network.tcp_proxy.v3 import (  # type: ignore[import-untyped]
    tcp_proxy_pb2,
)
from envoy.extensions.request_id.uuid.v3 import uuid_pb2  # type: ignore[import-untyped]
from envoy.type.tracing.v3 import custom_tag_pb2  # type: ignore[import-untyped]
from google.protobuf import json_format

from pilothouse.config.telemetry_providers import FileLog, LogFormat, OtelTracer, ZipkinTracer
from pilothouse.push.telemetry import AccessLog, ModeTelemetry, TracingSettings
from pilothouse.push.telemetry_merge import SpanTag
from pilothouse.xds.builders.listener import HTTP_CONNECTION_MANAGER, TCP_PROXY, typed
from pilothouse.xds.builders.names import outbound_cluster_name

FILE_LOGGER: Final = "envoy.access_loggers.file"
OTEL_LOGGER: Final = "envoy.access_loggers.open_telemetry"
CEL_FILTER: Final = "envoy.access_loggers.extension_filters.cel"
ZIPKIN: Final = "envoy.tracers.zipkin"
_NO_ID_SAMPLING: Final = uuid_pb2.UuidRequestIdConfig(
    use_request_id_for_trace_sampling={"value": False}
)
"""``useRequestIdForTraceSampling: false``: Envoy's UUID request ids stop deciding sampling."""
OPENTELEMETRY: Final = "envoy.tracers.opentelemetry"


def apply_telemetry(
    listener: listener_pb2.Listener, telemetry: ModeTelemetry, gateway: bool
) -> None:
    """Add ``telemetry``'s access logs (and, on HTTP connection managers, its tracing)
    to every chain of a built ``listener``."""
    if not telemetry:
        return
    logs = [access_log(entry) for entry in telemetry.access_logs]
    settings = telemetry.tracing
    tracing = tracing_config(settings, gateway) if settings is not None else None
    no_id_sampling = settings is not None and not settings.use_request_id
    for chain in [*listener.filter_chains, *_default_chain(listener)]:
        for network_filter in chain.filters:
            if network_filter.name == HTTP_CONNECTION_MANAGER:
                manager = hcm_pb2.HttpConnectionManager()
                network_filter.typed_config.Unpack(manager)
                manager.access_log.extend(logs)
                if tracing is not None:
                    manager.tracing.CopyFrom(tracing)
                    if no_id_sampling:
                        manager.request_id_extension.typed_config.Pack(_NO_ID_SAMPLING)
                network_filter.typed_config.Pack(manager)
            elif network_filter.name == TCP_PROXY and logs:
                proxy = tcp_proxy_pb2.TcpProxy()
                network_filter.typed_config.Unpack(proxy)
                proxy.access_log.extend(logs)
                network_filter.typed_config.Pack(proxy)


def _default_chain(listener: listener_pb2.Listener) -> list[Any]:
    return [listener.default_filter_chain] if listener.HasField("default_filter_chain") else []


def access_log(entry: AccessLog) -> accesslog_pb2.AccessLog:
    """One ``AccessLog`` of a listener filter: its logger, and its CEL filter."""
    provider = entry.provider
    if isinstance(provider, FileLog):
        built = accesslog_pb2.AccessLog(name=FILE_LOGGER, typed_config=typed(file_log(provider)))
    else:
        assert entry.upstream is not None
        config = logs_service_pb2.OpenTelemetryAccessLogConfig()
        common = config.common_config
        common.log_name = provider.log_name
        common.transport_api_version = 2  # V3
        common.grpc_service.CopyFrom(_grpc(entry.upstream.host, entry.upstream.port, None))
        text = provider.format.text
        config.body.string_value = text if text is not None else _DEFAULT_OTEL_BODY
        if provider.format.labels is not None:
            for key, value in json.loads(provider.format.labels).items():
                config.attributes.values.add(key=key).value.string_value = str(value)
        built = accesslog_pb2.AccessLog(name=OTEL_LOGGER, typed_config=typed(config))
    if entry.filter:
        cel = cel_pb2.ExpressionFilter(expression=entry.filter)
        built.filter.extension_filter.name = CEL_FILTER
        built.filter.extension_filter.typed_config.CopyFrom(typed(cel))
    return built


_DEFAULT_OTEL_BODY: Final = (
    '[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" '
    "%RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION%\n"
)


def file_log(provider: FileLog) -> file_pb2.FileAccessLog:
    """``FileAccessLog`` to the provider's path in its format."""
    config = file_pb2.FileAccessLog(path=provider.path)
    _format_into(config.log_format, provider.format)
    return config


def _format_into(target: Any, log_format: LogFormat) -> None:
    if log_format.labels is not None:
        json_format.Parse(log_format.labels, target.json_format)
    else:
        target.text_format_source.inline_string = log_format.text or ""
    if log_format.omit_empty_values:
        target.omit_empty_values = True


def tracing_config(
    settings: TracingSettings, gateway: bool
) -> hcm_pb2.HttpConnectionManager.Tracing:
    """The HCM ``tracing`` of ``settings`` (istiod's ``configureTracingFromTelemetry``)."""
    tracing = hcm_pb2.HttpConnectionManager.Tracing()
    tracing.client_sampling.value = 100.0
    tracing.random_sampling.value = settings.sampling
    tracing.overall_sampling.value = 100.0
    tracing.custom_tags.extend(custom_tag(tag) for tag in settings.tags)
    if settings.max_path_tag_length:
        tracing.max_path_tag_length.value = settings.max_path_tag_length
    provider, upstream = settings.provider, settings.upstream
    if provider is not None and upstream is not None:
        cluster = outbound_cluster_name(upstream.host, upstream.port)
        if isinstance(provider, ZipkinTracer):
            tracing.provider.name = ZIPKIN
            tracing.provider.typed_config.Pack(_zipkin(provider, upstream.host, cluster))
        else:
            tracing.provider.name = OPENTELEMETRY
            tracing.provider.typed_config.Pack(
                _opentelemetry(provider, upstream.host, upstream.port, settings.service_name)
            )
        if gateway:
            tracing.spawn_upstream_span.value = True
    return tracing


def _zipkin(provider: ZipkinTracer, host: str, cluster: str) -> zipkin_pb2.ZipkinConfig:
    config = zipkin_pb2.ZipkinConfig(
        collector_endpoint_version=zipkin_pb2.ZipkinConfig.HTTP_JSON,
        trace_id_128bit=provider.trace_id_128bit,
    )
    config.shared_span_context.value = False
    uri = config.collector_service.http_uri
    uri.uri = f"http://{host}{provider.path}"
    uri.cluster = cluster
    uri.timeout.FromNanoseconds(int(provider.timeout_seconds * 1e9))
    if provider.w3c:
        config.trace_context_option = zipkin_pb2.ZipkinConfig.USE_B3_WITH_W3C_PROPAGATION
    return config


def _opentelemetry(
    provider: OtelTracer, host: str, port: int, service_name: str
) -> opentelemetry_pb2.OpenTelemetryConfig:
    config = opentelemetry_pb2.OpenTelemetryConfig(service_name=service_name)
    if provider.http_path is not None:
        service = http_service_pb2.HttpService()
        path = (
            provider.http_path if provider.http_path.startswith("/") else "/" + provider.http_path
        )
        service.http_uri.uri = f"{host}{path}"
        service.http_uri.cluster = outbound_cluster_name(host, port)
        service.http_uri.timeout.FromNanoseconds(int((provider.timeout_seconds or 0) * 1e9))
        config.http_service.CopyFrom(service)
    else:
        config.grpc_service.CopyFrom(_grpc(host, port, provider.timeout_seconds))
    return config


def _grpc(host: str, port: int, timeout: float | None) -> grpc_service_pb2.GrpcService:
    service = grpc_service_pb2.GrpcService()
    service.envoy_grpc.cluster_name = outbound_cluster_name(host, port)
    service.envoy_grpc.authority = host
    if timeout is not None:
        service.timeout.FromNanoseconds(int(timeout * 1e9))
    return service


def custom_tag(tag: SpanTag) -> custom_tag_pb2.CustomTag:
    """A span tag: a literal, an environment variable or a request header (with a
    default), or a formatter command."""
    built = custom_tag_pb2.CustomTag(tag=tag.name)
    if tag.kind == "environment":
        built.environment.name = tag.value
        built.environment.default_value = tag.default
    elif tag.kind == "header":
        built.request_header.name = tag.value
        built.request_header.default_value = tag.default
    elif tag.kind == "formatter":
        built.value = tag.value
    else:
        built.literal.value = tag.value
    return built
