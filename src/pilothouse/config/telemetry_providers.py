"""The mesh's telemetry providers: MeshConfig ``extensionProviders``, ``defaultProviders``
and the legacy access-log and tracing fields, as the values Telemetry resolution reads.

Applied (turned into Envoy config by :mod:`pilothouse.xds.builders.telemetry`):

- ``envoyFileAccessLog``: a file access log (``path``, default ``/dev/stdout``; ``text``
  or ``labels`` format; ``omitEmptyValues``);
- ``envoyOtelAls``: access logs exported over OTLP/gRPC to ``service``/``port``;
- ``zipkin`` and ``opentelemetry``: tracing on the HTTP connection managers, sent to
  ``service``/``port`` (the provider's cluster, ``outbound|<port>||<host>``);
- the built-in ``envoy`` provider (file log to ``/dev/stdout`` in the mesh's
  ``accessLogFormat``/``accessLogEncoding``);
- ``accessLogFile``/``accessLogFormat``/``accessLogEncoding`` where no Telemetry and no
  default provider says anything about access logs; ``enableTracing`` (only when set
  true: istiod's default is true, which gives sampling without a provider, so nothing is
  sent either way) with ``defaultConfig.tracing`` ``sampling``, ``customTags`` and
  ``maxPathTagLength``.

Accepted and reported as not applied (:data:`NOT_APPLIED_TYPES`): the providers that need
Istio's own proxy build or a back end pilothouse does not configure (``prometheus``,
``stackdriver``, ``datadog``, ``skywalking``, ``lightstep``, ``opencensus``,
``envoyHttpAls``, ``envoyTcpAls``); ``envoyExtAuthzHttp``/``Grpc`` and ``sds`` are not
telemetry providers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from google.protobuf import json_format
from google.protobuf.message import Message

from pilothouse.api.istio.mesh.v1alpha1 import config_pb2, proxy_pb2

ExtensionProvider = config_pb2.MeshConfig.ExtensionProvider

DEFAULT_LOG_PATH: Final = "/dev/stdout"
ENVOY_PROVIDER: Final = "envoy"
"""The built-in provider every mesh has: Envoy's file log to stdout."""

DEFAULT_TEXT_FORMAT: Final = (
    '[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" '
    "%RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %CONNECTION_TERMINATION_DETAILS% "
    '"%UPSTREAM_TRANSPORT_FAILURE_REASON%" %BYTES_RECEIVED% %BYTES_SENT% %DURATION% '
    '%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" '
    '"%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%" %UPSTREAM_CLUSTER_RAW% '
    "%UPSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS% "
    "%REQUESTED_SERVER_NAME% %ROUTE_NAME%\n"
)
"""istiod's text access-log format (``EnvoyTextLogFormat`` and its newline)."""

DEFAULT_JSON_FIELDS: Final[tuple[tuple[str, str], ...]] = (
    ("start_time", "%START_TIME%"),
    ("route_name", "%ROUTE_NAME%"),
    ("method", "%REQ(:METHOD)%"),
    ("path", "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%"),
    ("protocol", "%PROTOCOL%"),
    ("response_code", "%RESPONSE_CODE%"),
    ("response_flags", "%RESPONSE_FLAGS%"),
    ("response_code_details", "%RESPONSE_CODE_DETAILS%"),
    ("connection_termination_details", "%CONNECTION_TERMINATION_DETAILS%"),
    ("bytes_received", "%BYTES_RECEIVED%"),
    ("bytes_sent", "%BYTES_SENT%"),
    ("duration", "%DURATION%"),
    ("upstream_service_time", "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%"),
    ("x_forwarded_for", "%REQ(X-FORWARDED-FOR)%"),
    ("user_agent", "%REQ(USER-AGENT)%"),
    ("request_id", "%REQ(X-REQUEST-ID)%"),
    ("authority", "%REQ(:AUTHORITY)%"),
    ("upstream_host", "%UPSTREAM_HOST%"),
    ("upstream_cluster", "%UPSTREAM_CLUSTER_RAW%"),
    ("upstream_local_address", "%UPSTREAM_LOCAL_ADDRESS%"),
    ("downstream_local_address", "%DOWNSTREAM_LOCAL_ADDRESS%"),
    ("downstream_remote_address", "%DOWNSTREAM_REMOTE_ADDRESS%"),
    ("requested_server_name", "%REQUESTED_SERVER_NAME%"),
    ("upstream_transport_failure_reason", "%UPSTREAM_TRANSPORT_FAILURE_REASON%"),
)
"""istiod's JSON access-log fields (``labels: {}`` and ``accessLogEncoding: JSON``)."""
DEFAULT_JSON_LABELS: Final = json.dumps(dict(DEFAULT_JSON_FIELDS))

NOT_APPLIED_TYPES: Final = frozenset(
    {
        "prometheus", "stackdriver", "datadog", "skywalking", "lightstep", "opencensus",
        "envoy_http_als", "envoy_tcp_als", "envoy_ext_authz_http", "envoy_ext_authz_grpc", "sds",
    }
)  # fmt: skip
"""Provider types accepted in ``extensionProviders`` and not turned into Envoy config."""

BUILT_IN_UNAPPLIED: Final = (("prometheus", "prometheus"), ("stackdriver", "stackdriver"))
"""The built-in providers other than ``envoy`` (name, type): neither is applied."""


@dataclass(frozen=True, slots=True)
class LogFormat:
    """A log line's format: ``text`` (with its newline) or ``labels`` (a JSON object as
    JSON text, its fields in the order written)."""

    text: str | None = None
    labels: str | None = None
    omit_empty_values: bool = False


@dataclass(frozen=True, slots=True)
class FileLog:
    """An ``envoyFileAccessLog`` provider (or the built-in ``envoy``)."""

    name: str
    path: str
    format: LogFormat


@dataclass(frozen=True, slots=True)
class OtelLog:
    """An ``envoyOtelAls`` provider: logs over OTLP/gRPC to service/port."""

    name: str
    service: str
    port: int
    log_name: str
    format: LogFormat


@dataclass(frozen=True, slots=True)
class ZipkinTracer:
    """A ``zipkin`` provider."""

    name: str
    service: str
    port: int
    path: str = "/api/v2/spans"
    trace_id_128bit: bool = True
    max_tag_length: int = 0
    timeout_seconds: float = 5.0
    w3c: bool = False


@dataclass(frozen=True, slots=True)
class OtelTracer:
    """An ``opentelemetry`` provider: OTLP over gRPC, or over HTTP to ``http_path``."""

    name: str
    service: str
    port: int
    max_tag_length: int = 0
    http_path: str | None = None
    timeout_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class UnappliedProvider:
    """A provider accepted and not applied, with its type (``datadog``)."""

    name: str
    type: str


Provider = FileLog | OtelLog | ZipkinTracer | OtelTracer | UnappliedProvider
LOG_PROVIDERS: Final = (FileLog, OtelLog)
TRACING_PROVIDERS: Final = (ZipkinTracer, OtelTracer)


@dataclass(frozen=True, slots=True)
class LegacyCustomTag:
    """A ``defaultConfig.tracing.customTags`` entry: kind (literal, environment, header),
    value or name, and default."""

    name: str
    kind: str
    value: str
    default: str = ""


@dataclass(frozen=True, slots=True)
class MeshTelemetry:
    """Everything of the mesh config that Telemetry resolution reads."""

    providers: tuple[Provider, ...] = ()
    """Every provider by its name, the built-in ones first (a later one of the same name
    wins)."""
    default_tracing: tuple[str, ...] = ()
    default_metrics: tuple[str, ...] = ()
    default_logging: tuple[str, ...] = ()
    access_log_file: str = ""
    envoy_format: LogFormat = LogFormat(text=DEFAULT_TEXT_FORMAT)
    """The format of the built-in ``envoy`` provider and of ``accessLogFile``."""
    enable_tracing: bool = False
    sampling: float | None = None
    """``defaultConfig.tracing.sampling`` (None: not set, 1 %)."""
    custom_tags: tuple[LegacyCustomTag, ...] = ()
    max_path_tag_length: int = 0

    def provider(self, name: str) -> Provider | None:
        """The provider called ``name`` (None: the mesh defines none)."""
        found = None
        for provider in self.providers:
            if provider.name == name:
                found = provider
        return found


def _built_in(envoy_format: LogFormat) -> tuple[Provider, ...]:
    return (
        FileLog(ENVOY_PROVIDER, DEFAULT_LOG_PATH, envoy_format),
        *(UnappliedProvider(name, kind) for name, kind in BUILT_IN_UNAPPLIED),
    )


NO_MESH_TELEMETRY: Final = MeshTelemetry(providers=_built_in(LogFormat(DEFAULT_TEXT_FORMAT)))
"""A mesh config that says nothing about telemetry: only the built-in providers."""


def mesh_telemetry(message: config_pb2.MeshConfig) -> MeshTelemetry:
    """The telemetry settings ``message`` carries (the built-in providers added unless it
    redefines their names)."""
    encoding_json = message.access_log_encoding == config_pb2.MeshConfig.JSON
    envoy_format = _mesh_format(message.access_log_format, encoding_json)
    providers = _built_in(envoy_format) + tuple(provider_of(p) for p in message.extension_providers)
    tracing = message.default_config.tracing if message.HasField("default_config") else None
    defaults = message.default_providers
    return MeshTelemetry(
        providers=providers,
        default_tracing=tuple(defaults.tracing),
        default_metrics=tuple(defaults.metrics),
        default_logging=tuple(defaults.access_logging),
        access_log_file=message.access_log_file,
        envoy_format=envoy_format,
        enable_tracing=message.enable_tracing,
        sampling=(tracing.sampling if tracing is not None and tracing.sampling else None),
        custom_tags=_legacy_tags(tracing) if tracing is not None else (),
        max_path_tag_length=tracing.max_path_tag_length if tracing is not None else 0,
    )


def provider_of(provider: ExtensionProvider) -> Provider:
    """The value one ``extensionProviders`` entry becomes."""
    kind = provider.WhichOneof("provider") or "none"
    name = provider.name
    if kind == "envoy_file_access_log":
        file = provider.envoy_file_access_log
        return FileLog(
            name,
            file.path or DEFAULT_LOG_PATH,
            _provider_format(file.log_format, file.omit_empty_values),
        )
    if kind == "envoy_otel_als":
        otel = provider.envoy_otel_als
        text = otel.log_format.text or None
        labels = _labels(otel.log_format.labels) if otel.log_format.HasField("labels") else None
        return OtelLog(
            name, otel.service, otel.port, otel.log_name or "otel_envoy_accesslog",
            LogFormat(_with_newline(text) if text else None, labels),
        )  # fmt: skip
    if kind == "zipkin":
        zipkin = provider.zipkin
        timeout = (
            zipkin.timeout.ToTimedelta().total_seconds() if zipkin.HasField("timeout") else 5.0
        )
        w3c = zipkin.trace_context_option == zipkin.USE_B3_WITH_W3C_PROPAGATION
        return ZipkinTracer(
            name, zipkin.service, zipkin.port, zipkin.path or "/api/v2/spans",
            not zipkin.enable_64bit_trace_id, zipkin.max_tag_length, timeout, w3c,
        )  # fmt: skip
    if kind == "opentelemetry":
        otel_tracer = provider.opentelemetry
        http = otel_tracer.http if otel_tracer.HasField("http") else None
        wait: float | None = None
        if http is not None and http.HasField("timeout"):
            wait = http.timeout.ToTimedelta().total_seconds()
        elif otel_tracer.grpc.HasField("timeout"):
            wait = otel_tracer.grpc.timeout.ToTimedelta().total_seconds()
        return OtelTracer(
            name, otel_tracer.service, otel_tracer.port, otel_tracer.max_tag_length,
            http.path if http is not None else None, wait,
        )  # fmt: skip
    return UnappliedProvider(name, kind)


def provider_warnings(message: config_pb2.MeshConfig) -> tuple[tuple[int, str], ...]:
    """(index, warning) for each ``extensionProviders`` entry accepted and not applied,
    or badly formed (no name, no service or port where one is needed)."""
    found: list[tuple[int, str]] = []
    seen: set[str] = set()
    for index, provider in enumerate(message.extension_providers):
        kind = provider.WhichOneof("provider")
        if not provider.name:
            found.append((index, "a provider needs a name; it cannot be referred to"))
        elif provider.name in seen:
            found.append((index, f"provider {provider.name!r} is defined twice; the last wins"))
        seen.add(provider.name)
        if kind is None:
            found.append((index, "no provider type is set"))
        elif kind in NOT_APPLIED_TYPES:
            found.append((index, f"{_json_name(kind)}: accepted; not applied by pilothouse"))
        elif kind != "envoy_file_access_log":
            value = getattr(provider, kind)
            if not value.service or not value.port:
                found.append((index, f"{_json_name(kind)}: service and port are required"))
    return tuple(found)


def _json_name(field: str) -> str:
    head, *rest = field.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _mesh_format(text: str, encoding_json: bool) -> LogFormat:
    if encoding_json:
        if text:
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                return LogFormat(labels=json.dumps(parsed))
        return LogFormat(labels=DEFAULT_JSON_LABELS)
    return LogFormat(text=_with_newline(text) if text else DEFAULT_TEXT_FORMAT)


def _provider_format(
    log_format: ExtensionProvider.EnvoyFileAccessLogProvider.LogFormat, omit: bool
) -> LogFormat:
    which = log_format.WhichOneof("log_format")
    if which == "text":
        return LogFormat(text=_with_newline(log_format.text), omit_empty_values=omit)
    if which == "labels":
        return LogFormat(labels=_labels(log_format.labels), omit_empty_values=omit)
    return LogFormat(text=DEFAULT_TEXT_FORMAT, omit_empty_values=omit)


def _labels(struct: Message) -> str:
    """A ``labels`` Struct as JSON text; ``{}`` gives istiod's defaults."""
    data = json_format.MessageToDict(struct)
    return json.dumps(data) if data else DEFAULT_JSON_LABELS


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _legacy_tags(tracing: proxy_pb2.Tracing) -> tuple[LegacyCustomTag, ...]:
    tags = []
    for name in sorted(tracing.custom_tags):
        tag = tracing.custom_tags[name]
        kind = tag.WhichOneof("type")
        if kind == "literal":
            tags.append(LegacyCustomTag(name, kind, tag.literal.value))
        elif kind == "environment":
            tags.append(
                LegacyCustomTag(name, kind, tag.environment.name, tag.environment.default_value)
            )
        elif kind == "header":
            tags.append(LegacyCustomTag(name, kind, tag.header.name, tag.header.default_value))
    return tuple(tags)
