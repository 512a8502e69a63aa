import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import wrappers_pb2 as _wrappers_pb2
from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as _destination_rule_pb2
from pilothouse.api.istio.mesh.v1alpha1 import proxy_pb2 as _proxy_pb2
from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as _virtual_service_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Resource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SERVICE_REGISTRY: _ClassVar[Resource]
SERVICE_REGISTRY: Resource

class MeshConfig(_message.Message):
    __slots__ = ("proxy_listen_port", "proxy_inbound_listen_port", "connect_timeout", "outbound_traffic_policy", "config_sources", "trust_domain", "trust_domain_aliases", "default_service_export_to", "default_virtual_service_export_to", "default_destination_rule_export_to", "root_namespace", "locality_lb_setting", "dns_refresh_rate", "enable_auto_mtls", "default_http_retry_policy", "default_config", "proxy_http_port", "hbone_idle_timeout", "protocol_detection_timeout", "tcp_keepalive", "ingress_class", "ingress_service", "ingress_controller_mode", "ingress_selector", "enable_tracing", "access_log_file", "access_log_format", "access_log_encoding", "enable_envoy_access_log_service", "disable_envoy_listener_log", "extension_providers", "default_providers", "inbound_traffic_policy", "ca_certificates", "zone_aware_lb_setting", "h2_upgrade_policy", "inbound_cluster_stat_name", "outbound_cluster_stat_name", "service_settings", "enable_prometheus_merge", "verify_certificate_at_client", "ca", "path_normalization", "mesh_mTLS", "tls_defaults", "default_traffic_policy", "discovery_selectors", "service_scope_configs", "service_entry_visibility", "certificates")
    class IngressControllerMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNSPECIFIED: _ClassVar[MeshConfig.IngressControllerMode]
        OFF: _ClassVar[MeshConfig.IngressControllerMode]
        DEFAULT: _ClassVar[MeshConfig.IngressControllerMode]
        STRICT: _ClassVar[MeshConfig.IngressControllerMode]
    UNSPECIFIED: MeshConfig.IngressControllerMode
    OFF: MeshConfig.IngressControllerMode
    DEFAULT: MeshConfig.IngressControllerMode
    STRICT: MeshConfig.IngressControllerMode
    class AccessLogEncoding(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        TEXT: _ClassVar[MeshConfig.AccessLogEncoding]
        JSON: _ClassVar[MeshConfig.AccessLogEncoding]
    TEXT: MeshConfig.AccessLogEncoding
    JSON: MeshConfig.AccessLogEncoding
    class H2UpgradePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DO_NOT_UPGRADE: _ClassVar[MeshConfig.H2UpgradePolicy]
        UPGRADE: _ClassVar[MeshConfig.H2UpgradePolicy]
    DO_NOT_UPGRADE: MeshConfig.H2UpgradePolicy
    UPGRADE: MeshConfig.H2UpgradePolicy
    class OutboundTrafficPolicy(_message.Message):
        __slots__ = ("mode",)
        class Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            REGISTRY_ONLY: _ClassVar[MeshConfig.OutboundTrafficPolicy.Mode]
            ALLOW_ANY: _ClassVar[MeshConfig.OutboundTrafficPolicy.Mode]
        REGISTRY_ONLY: MeshConfig.OutboundTrafficPolicy.Mode
        ALLOW_ANY: MeshConfig.OutboundTrafficPolicy.Mode
        MODE_FIELD_NUMBER: _ClassVar[int]
        mode: MeshConfig.OutboundTrafficPolicy.Mode
        def __init__(self, mode: _Optional[_Union[MeshConfig.OutboundTrafficPolicy.Mode, str]] = ...) -> None: ...
    class DefaultProviders(_message.Message):
        __slots__ = ("tracing", "metrics", "access_logging")
        TRACING_FIELD_NUMBER: _ClassVar[int]
        METRICS_FIELD_NUMBER: _ClassVar[int]
        ACCESS_LOGGING_FIELD_NUMBER: _ClassVar[int]
        tracing: _containers.RepeatedScalarFieldContainer[str]
        metrics: _containers.RepeatedScalarFieldContainer[str]
        access_logging: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, tracing: _Optional[_Iterable[str]] = ..., metrics: _Optional[_Iterable[str]] = ..., access_logging: _Optional[_Iterable[str]] = ...) -> None: ...
    class ExtensionProvider(_message.Message):
        __slots__ = ("name", "envoy_ext_authz_http", "envoy_ext_authz_grpc", "zipkin", "lightstep", "datadog", "stackdriver", "opencensus", "skywalking", "prometheus", "envoy_file_access_log", "envoy_http_als", "envoy_tcp_als", "envoy_otel_als", "opentelemetry", "sds")
        class ServiceAttributeEnrichment(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            ISTIO_CANONICAL: _ClassVar[MeshConfig.ExtensionProvider.ServiceAttributeEnrichment]
            OTEL_SEMANTIC_CONVENTIONS: _ClassVar[MeshConfig.ExtensionProvider.ServiceAttributeEnrichment]
        ISTIO_CANONICAL: MeshConfig.ExtensionProvider.ServiceAttributeEnrichment
        OTEL_SEMANTIC_CONVENTIONS: MeshConfig.ExtensionProvider.ServiceAttributeEnrichment
        class EnvoyExternalAuthorizationRequestBody(_message.Message):
            __slots__ = ("max_request_bytes", "allow_partial_message", "pack_as_bytes")
            MAX_REQUEST_BYTES_FIELD_NUMBER: _ClassVar[int]
            ALLOW_PARTIAL_MESSAGE_FIELD_NUMBER: _ClassVar[int]
            PACK_AS_BYTES_FIELD_NUMBER: _ClassVar[int]
            max_request_bytes: int
            allow_partial_message: bool
            pack_as_bytes: bool
            def __init__(self, max_request_bytes: _Optional[int] = ..., allow_partial_message: _Optional[bool] = ..., pack_as_bytes: _Optional[bool] = ...) -> None: ...
        class EnvoyExternalAuthorizationHttpProvider(_message.Message):
            __slots__ = ("service", "port", "path_prefix", "fail_open", "status_on_error", "include_headers_in_check", "headers_to_upstream_on_allow", "headers_to_downstream_on_deny", "timeout", "include_request_headers_in_check", "include_additional_headers_in_check", "include_request_body_in_check", "headers_to_downstream_on_allow", "clear_route_cache")
            class IncludeAdditionalHeadersInCheckEntry(_message.Message):
                __slots__ = ("key", "value")
                KEY_FIELD_NUMBER: _ClassVar[int]
                VALUE_FIELD_NUMBER: _ClassVar[int]
                key: str
                value: str
                def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
            SERVICE_FIELD_NUMBER: _ClassVar[int]
            PORT_FIELD_NUMBER: _ClassVar[int]
            PATH_PREFIX_FIELD_NUMBER: _ClassVar[int]
            FAIL_OPEN_FIELD_NUMBER: _ClassVar[int]
            STATUS_ON_ERROR_FIELD_NUMBER: _ClassVar[int]
            INCLUDE_HEADERS_IN_CHECK_FIELD_NUMBER: _ClassVar[int]
            HEADERS_TO_UPSTREAM_ON_ALLOW_FIELD_NUMBER: _ClassVar[int]
            HEADERS_TO_DOWNSTREAM_ON_DENY_FIELD_NUMBER: _ClassVar[int]
            TIMEOUT_FIELD_NUMBER: _ClassVar[int]
            INCLUDE_REQUEST_HEADERS_IN_CHECK_FIELD_NUMBER: _ClassVar[int]
            INCLUDE_ADDITIONAL_HEADERS_IN_CHECK_FIELD_NUMBER: _ClassVar[int]
            INCLUDE_REQUEST_BODY_IN_CHECK_FIELD_NUMBER: _ClassVar[int]
            HEADERS_TO_DOWNSTREAM_ON_ALLOW_FIELD_NUMBER: _ClassVar[int]
            CLEAR_ROUTE_CACHE_FIELD_NUMBER: _ClassVar[int]
            service: str
            port: int
            path_prefix: str
            fail_open: bool
            status_on_error: str
            include_headers_in_check: _containers.RepeatedScalarFieldContainer[str]
            headers_to_upstream_on_allow: _containers.RepeatedScalarFieldContainer[str]
            headers_to_downstream_on_deny: _containers.RepeatedScalarFieldContainer[str]
            timeout: _duration_pb2.Duration
            include_request_headers_in_check: _containers.RepeatedScalarFieldContainer[str]
            include_additional_headers_in_check: _containers.ScalarMap[str, str]
            include_request_body_in_check: MeshConfig.ExtensionProvider.EnvoyExternalAuthorizationRequestBody
            headers_to_downstream_on_allow: _containers.RepeatedScalarFieldContainer[str]
            clear_route_cache: bool
            def __init__(self, service: _Optional[str] = ..., port: _Optional[int] = ..., path_prefix: _Optional[str] = ..., fail_open: _Optional[bool] = ..., status_on_error: _Optional[str] = ..., include_headers_in_check: _Optional[_Iterable[str]] = ..., headers_to_upstream_on_allow: _Optional[_Iterable[str]] = ..., headers_to_downstream_on_deny: _Optional[_Iterable[str]] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., include_request_headers_in_check: _Optional[_Iterable[str]] = ..., include_additional_headers_in_check: _Optional[_Mapping[str, str]] = ..., include_request_body_in_check: _Optional[_Union[MeshConfig.ExtensionProvider.EnvoyExternalAuthorizationRequestBody, _Mapping]] = ..., headers_to_downstream_on_allow: _Optional[_Iterable[str]] = ..., clear_route_cache: _Optional[bool] = ...) -> None: ...
        class EnvoyExternalAuthorizationGrpcProvider(_message.Message):
            __slots__ = ("service", "port", "fail_open", "status_on_error", "timeout", "include_request_body_in_check", "clear_route_cache")
            SERVICE_FIELD_NUMBER: _ClassVar[int]
            PORT_FIELD_NUMBER: _ClassVar[int]
            FAIL_OPEN_FIELD_NUMBER: _ClassVar[int]
            STATUS_ON_ERROR_FIELD_NUMBER: _ClassVar[int]
            TIMEOUT_FIELD_NUMBER: _ClassVar[int]
            INCLUDE_REQUEST_BODY_IN_CHECK_FIELD_NUMBER: _ClassVar[int]
            CLEAR_ROUTE_CACHE_FIELD_NUMBER: _ClassVar[int]
            service: str
            port: int
            fail_open: bool
            status_on_error: str
            timeout: _duration_pb2.Duration
            include_request_body_in_check: MeshConfig.ExtensionProvider.EnvoyExternalAuthorizationRequestBody
            clear_route_cache: bool
            def __init__(self, service: _Optional[str] = ..., port: _Optional[int] = ..., fail_open: _Optional[bool] = ..., status_on_error: _Optional[str] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., include_request_body_in_check: _Optional[_Union[MeshConfig.ExtensionProvider.EnvoyExternalAuthorizationRequestBody, _Mapping]] = ..., clear_route_cache: _Optional[bool] = ...) -> None: ...
        class ZipkinTracingProvider(_message.Message):
            __slots__ = ("service", "port", "max_tag_length", "enable_64bit_trace_id", "path", "trace_context_option", "timeout", "headers")
            class TraceContextOption(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
                __slots__ = ()
                USE_B3: _ClassVar[MeshConfig.ExtensionProvider.ZipkinTracingProvider.TraceContextOption]
                USE_B3_WITH_W3C_PROPAGATION: _ClassVar[MeshConfig.ExtensionProvider.ZipkinTracingProvider.TraceContextOption]
            USE_B3: MeshConfig.ExtensionProvider.ZipkinTracingProvider.TraceContextOption
            USE_B3_WITH_W3C_PROPAGATION: MeshConfig.ExtensionProvider.ZipkinTracingProvider.TraceContextOption
            SERVICE_FIELD_NUMBER: _ClassVar[int]
            PORT_FIELD_NUMBER: _ClassVar[int]
            MAX_TAG_LENGTH_FIELD_NUMBER: _ClassVar[int]
            ENABLE_64BIT_TRACE_ID_FIELD_NUMBER: _ClassVar[int]
            PATH_FIELD_NUMBER: _ClassVar[int]
            TRACE_CONTEXT_OPTION_FIELD_NUMBER: _ClassVar[int]
            TIMEOUT_FIELD_NUMBER: _ClassVar[int]
            HEADERS_FIELD_NUMBER: _ClassVar[int]
            service: str
            port: int
            max_tag_length: int
            enable_64bit_trace_id: bool
            path: str
            trace_context_option: MeshConfig.ExtensionProvider.ZipkinTracingProvider.TraceContextOption
            timeout: _duration_pb2.Duration
            headers: _containers.RepeatedCompositeFieldContainer[MeshConfig.ExtensionProvider.HttpHeader]
            def __init__(self, service: _Optional[str] = ..., port: _Optional[int] = ..., max_tag_length: _Optional[int] = ..., enable_64bit_trace_id: _Optional[bool] = ..., path: _Optional[str] = ..., trace_context_option: _Optional[_Union[MeshConfig.ExtensionProvider.ZipkinTracingProvider.TraceContextOption, str]] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., headers: _Optional[_Iterable[_Union[MeshConfig.ExtensionProvider.HttpHeader, _Mapping]]] = ...) -> None: ...
        class LightstepTracingProvider(_message.Message):
            __slots__ = ("service", "port", "access_token", "max_tag_length")
            SERVICE_FIELD_NUMBER: _ClassVar[int]
            PORT_FIELD_NUMBER: _ClassVar[int]
            ACCESS_TOKEN_FIELD_NUMBER: _ClassVar[int]
            MAX_TAG_LENGTH_FIELD_NUMBER: _ClassVar[int]
            service: str
            port: int
            access_token: str
            max_tag_length: int
            def __init__(self, service: _Optional[str] = ..., port: _Optional[int] = ..., access_token: _Optional[str] = ..., max_tag_length: _Optional[int] = ...) -> None: ...
        class DatadogTracingProvider(_message.Message):
            __slots__ = ("service", "port", "max_tag_length")
            SERVICE_FIELD_NUMBER: _ClassVar[int]
            PORT_FIELD_NUMBER: _ClassVar[int]
            MAX_TAG_LENGTH_FIELD_NUMBER: _ClassVar[int]
            service: str
            port: int
            max_tag_length: int
            def __init__(self, service: _Optional[str] = ..., port: _Optional[int] = ..., max_tag_length: _Optional[int] = ...) -> None: ...
        class SkyWalkingTracingProvider(_message.Message):
            __slots__ = ("service", "port", "access_token")
            SERVICE_FIELD_NUMBER: _ClassVar[int]
            PORT_FIELD_NUMBER: _ClassVar[int]
            ACCESS_TOKEN_FIELD_NUMBER: _ClassVar[int]
            service: str
            port: int
            access_token: str
            def __init__(self, service: _Optional[str] = ..., port: _Optional[int] = ..., access_token: _Optional[str] = ...) -> None: ...
        class StackdriverProvider(_message.Message):
            __slots__ = ("debug", "max_number_of_attributes", "max_number_of_annotations", "max_number_of_message_events", "max_tag_length", "logging")
            class Logging(_message.Message):
                __slots__ = ("labels",)
                class LabelsEntry(_message.Message):
                    __slots__ = ("key", "value")
                    KEY_FIELD_NUMBER: _ClassVar[int]
                    VALUE_FIELD_NUMBER: _ClassVar[int]
                    key: str
                    value: str
                    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
                LABELS_FIELD_NUMBER: _ClassVar[int]
                labels: _containers.ScalarMap[str, str]
                def __init__(self, labels: _Optional[_Mapping[str, str]] = ...) -> None: ...
            DEBUG_FIELD_NUMBER: _ClassVar[int]
            MAX_NUMBER_OF_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
            MAX_NUMBER_OF_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
            MAX_NUMBER_OF_MESSAGE_EVENTS_FIELD_NUMBER: _ClassVar[int]
            MAX_TAG_LENGTH_FIELD_NUMBER: _ClassVar[int]
            LOGGING_FIELD_NUMBER: _ClassVar[int]
            debug: bool
            max_number_of_attributes: _wrappers_pb2.Int64Value
            max_number_of_annotations: _wrappers_pb2.Int64Value
            max_number_of_message_events: _wrappers_pb2.Int64Value
            max_tag_length: int
            logging: MeshConfig.ExtensionProvider.StackdriverProvider.Logging
            def __init__(self, debug: _Optional[bool] = ..., max_number_of_attributes: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., max_number_of_annotations: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., max_number_of_message_events: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., max_tag_length: _Optional[int] = ..., logging: _Optional[_Union[MeshConfig.ExtensionProvider.StackdriverProvider.Logging, _Mapping]] = ...) -> None: ...
        class OpenCensusAgentTracingProvider(_message.Message):
            __slots__ = ("service", "port", "context", "max_tag_length")
            class TraceContext(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
                __slots__ = ()
                UNSPECIFIED: _ClassVar[MeshConfig.ExtensionProvider.OpenCensusAgentTracingProvider.TraceContext]
                W3C_TRACE_CONTEXT: _ClassVar[MeshConfig.ExtensionProvider.OpenCensusAgentTracingProvider.TraceContext]
                GRPC_BIN: _ClassVar[MeshConfig.ExtensionProvider.OpenCensusAgentTracingProvider.TraceContext]
                CLOUD_TRACE_CONTEXT: _ClassVar[MeshConfig.ExtensionProvider.OpenCensusAgentTracingProvider.TraceContext]
                B3: _ClassVar[MeshConfig.ExtensionProvider.OpenCensusAgentTracingProvider.TraceContext]
            UNSPECIFIED: MeshConfig.ExtensionProvider.OpenCensusAgentTracingProvider.TraceContext
            W3C_TRACE_CONTEXT: MeshConfig.ExtensionProvider.OpenCensusAgentTracingProvider.TraceContext
            GRPC_BIN: MeshConfig.ExtensionProvider.OpenCensusAgentTracingProvider.TraceContext
            CLOUD_TRACE_CONTEXT: MeshConfig.ExtensionProvider.OpenCensusAgentTracingProvider.TraceContext
            B3: MeshConfig.ExtensionProvider.OpenCensusAgentTracingProvider.TraceContext
            SERVICE_FIELD_NUMBER: _ClassVar[int]
            PORT_FIELD_NUMBER: _ClassVar[int]
            CONTEXT_FIELD_NUMBER: _ClassVar[int]
            MAX_TAG_LENGTH_FIELD_NUMBER: _ClassVar[int]
            service: str
            port: int
            context: _containers.RepeatedScalarFieldContainer[MeshConfig.ExtensionProvider.OpenCensusAgentTracingProvider.TraceContext]
            max_tag_length: int
            def __init__(self, service: _Optional[str] = ..., port: _Optional[int] = ..., context: _Optional[_Iterable[_Union[MeshConfig.ExtensionProvider.OpenCensusAgentTracingProvider.TraceContext, str]]] = ..., max_tag_length: _Optional[int] = ...) -> None: ...
        class PrometheusMetricsProvider(_message.Message):
            __slots__ = ()
            def __init__(self) -> None: ...
        class EnvoyFileAccessLogProvider(_message.Message):
            __slots__ = ("path", "log_format", "omit_empty_values")
            class LogFormat(_message.Message):
                __slots__ = ("text", "labels")
                TEXT_FIELD_NUMBER: _ClassVar[int]
                LABELS_FIELD_NUMBER: _ClassVar[int]
                text: str
                labels: _struct_pb2.Struct
                def __init__(self, text: _Optional[str] = ..., labels: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...
            PATH_FIELD_NUMBER: _ClassVar[int]
            LOG_FORMAT_FIELD_NUMBER: _ClassVar[int]
            OMIT_EMPTY_VALUES_FIELD_NUMBER: _ClassVar[int]
            path: str
            log_format: MeshConfig.ExtensionProvider.EnvoyFileAccessLogProvider.LogFormat
            omit_empty_values: bool
            def __init__(self, path: _Optional[str] = ..., log_format: _Optional[_Union[MeshConfig.ExtensionProvider.EnvoyFileAccessLogProvider.LogFormat, _Mapping]] = ..., omit_empty_values: _Optional[bool] = ...) -> None: ...
        class EnvoyHttpGrpcV3LogProvider(_message.Message):
            __slots__ = ("service", "port", "log_name", "filter_state_objects_to_log", "additional_request_headers_to_log", "additional_response_headers_to_log", "additional_response_trailers_to_log")
            SERVICE_FIELD_NUMBER: _ClassVar[int]
            PORT_FIELD_NUMBER: _ClassVar[int]
            LOG_NAME_FIELD_NUMBER: _ClassVar[int]
            FILTER_STATE_OBJECTS_TO_LOG_FIELD_NUMBER: _ClassVar[int]
            ADDITIONAL_REQUEST_HEADERS_TO_LOG_FIELD_NUMBER: _ClassVar[int]
            ADDITIONAL_RESPONSE_HEADERS_TO_LOG_FIELD_NUMBER: _ClassVar[int]
            ADDITIONAL_RESPONSE_TRAILERS_TO_LOG_FIELD_NUMBER: _ClassVar[int]
            service: str
            port: int
            log_name: str
            filter_state_objects_to_log: _containers.RepeatedScalarFieldContainer[str]
            additional_request_headers_to_log: _containers.RepeatedScalarFieldContainer[str]
            additional_response_headers_to_log: _containers.RepeatedScalarFieldContainer[str]
            additional_response_trailers_to_log: _containers.RepeatedScalarFieldContainer[str]
            def __init__(self, service: _Optional[str] = ..., port: _Optional[int] = ..., log_name: _Optional[str] = ..., filter_state_objects_to_log: _Optional[_Iterable[str]] = ..., additional_request_headers_to_log: _Optional[_Iterable[str]] = ..., additional_response_headers_to_log: _Optional[_Iterable[str]] = ..., additional_response_trailers_to_log: _Optional[_Iterable[str]] = ...) -> None: ...
        class EnvoyTcpGrpcV3LogProvider(_message.Message):
            __slots__ = ("service", "port", "log_name", "filter_state_objects_to_log")
            SERVICE_FIELD_NUMBER: _ClassVar[int]
            PORT_FIELD_NUMBER: _ClassVar[int]
            LOG_NAME_FIELD_NUMBER: _ClassVar[int]
            FILTER_STATE_OBJECTS_TO_LOG_FIELD_NUMBER: _ClassVar[int]
            service: str
            port: int
            log_name: str
            filter_state_objects_to_log: _containers.RepeatedScalarFieldContainer[str]
            def __init__(self, service: _Optional[str] = ..., port: _Optional[int] = ..., log_name: _Optional[str] = ..., filter_state_objects_to_log: _Optional[_Iterable[str]] = ...) -> None: ...
        class EnvoyOpenTelemetryLogProvider(_message.Message):
            __slots__ = ("service", "port", "log_name", "log_format")
            class LogFormat(_message.Message):
                __slots__ = ("text", "labels")
                TEXT_FIELD_NUMBER: _ClassVar[int]
                LABELS_FIELD_NUMBER: _ClassVar[int]
                text: str
                labels: _struct_pb2.Struct
                def __init__(self, text: _Optional[str] = ..., labels: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...
            SERVICE_FIELD_NUMBER: _ClassVar[int]
            PORT_FIELD_NUMBER: _ClassVar[int]
            LOG_NAME_FIELD_NUMBER: _ClassVar[int]
            LOG_FORMAT_FIELD_NUMBER: _ClassVar[int]
            service: str
            port: int
            log_name: str
            log_format: MeshConfig.ExtensionProvider.EnvoyOpenTelemetryLogProvider.LogFormat
            def __init__(self, service: _Optional[str] = ..., port: _Optional[int] = ..., log_name: _Optional[str] = ..., log_format: _Optional[_Union[MeshConfig.ExtensionProvider.EnvoyOpenTelemetryLogProvider.LogFormat, _Mapping]] = ...) -> None: ...
        class OpenTelemetryTracingProvider(_message.Message):
            __slots__ = ("service", "port", "max_tag_length", "http", "resource_detectors", "dynatrace_sampler", "grpc", "service_attribute_enrichment")
            class DynatraceSampler(_message.Message):
                __slots__ = ("tenant", "cluster_id", "root_spans_per_minute", "http_service")
                class DynatraceApi(_message.Message):
                    __slots__ = ("service", "port", "http")
                    SERVICE_FIELD_NUMBER: _ClassVar[int]
                    PORT_FIELD_NUMBER: _ClassVar[int]
                    HTTP_FIELD_NUMBER: _ClassVar[int]
                    service: str
                    port: int
                    http: MeshConfig.ExtensionProvider.HttpService
                    def __init__(self, service: _Optional[str] = ..., port: _Optional[int] = ..., http: _Optional[_Union[MeshConfig.ExtensionProvider.HttpService, _Mapping]] = ...) -> None: ...
                TENANT_FIELD_NUMBER: _ClassVar[int]
                CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
                ROOT_SPANS_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
                HTTP_SERVICE_FIELD_NUMBER: _ClassVar[int]
                tenant: str
                cluster_id: int
                root_spans_per_minute: int
                http_service: MeshConfig.ExtensionProvider.OpenTelemetryTracingProvider.DynatraceSampler.DynatraceApi
                def __init__(self, tenant: _Optional[str] = ..., cluster_id: _Optional[int] = ..., root_spans_per_minute: _Optional[int] = ..., http_service: _Optional[_Union[MeshConfig.ExtensionProvider.OpenTelemetryTracingProvider.DynatraceSampler.DynatraceApi, _Mapping]] = ...) -> None: ...
            SERVICE_FIELD_NUMBER: _ClassVar[int]
            PORT_FIELD_NUMBER: _ClassVar[int]
            MAX_TAG_LENGTH_FIELD_NUMBER: _ClassVar[int]
            HTTP_FIELD_NUMBER: _ClassVar[int]
            RESOURCE_DETECTORS_FIELD_NUMBER: _ClassVar[int]
            DYNATRACE_SAMPLER_FIELD_NUMBER: _ClassVar[int]
            GRPC_FIELD_NUMBER: _ClassVar[int]
            SERVICE_ATTRIBUTE_ENRICHMENT_FIELD_NUMBER: _ClassVar[int]
            service: str
            port: int
            max_tag_length: int
            http: MeshConfig.ExtensionProvider.HttpService
            resource_detectors: MeshConfig.ExtensionProvider.ResourceDetectors
            dynatrace_sampler: MeshConfig.ExtensionProvider.OpenTelemetryTracingProvider.DynatraceSampler
            grpc: MeshConfig.ExtensionProvider.GrpcService
            service_attribute_enrichment: MeshConfig.ExtensionProvider.ServiceAttributeEnrichment
            def __init__(self, service: _Optional[str] = ..., port: _Optional[int] = ..., max_tag_length: _Optional[int] = ..., http: _Optional[_Union[MeshConfig.ExtensionProvider.HttpService, _Mapping]] = ..., resource_detectors: _Optional[_Union[MeshConfig.ExtensionProvider.ResourceDetectors, _Mapping]] = ..., dynatrace_sampler: _Optional[_Union[MeshConfig.ExtensionProvider.OpenTelemetryTracingProvider.DynatraceSampler, _Mapping]] = ..., grpc: _Optional[_Union[MeshConfig.ExtensionProvider.GrpcService, _Mapping]] = ..., service_attribute_enrichment: _Optional[_Union[MeshConfig.ExtensionProvider.ServiceAttributeEnrichment, str]] = ...) -> None: ...
        class SDSProvider(_message.Message):
            __slots__ = ("name", "service", "port")
            NAME_FIELD_NUMBER: _ClassVar[int]
            SERVICE_FIELD_NUMBER: _ClassVar[int]
            PORT_FIELD_NUMBER: _ClassVar[int]
            name: str
            service: str
            port: int
            def __init__(self, name: _Optional[str] = ..., service: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...
        class HttpService(_message.Message):
            __slots__ = ("path", "timeout", "headers")
            PATH_FIELD_NUMBER: _ClassVar[int]
            TIMEOUT_FIELD_NUMBER: _ClassVar[int]
            HEADERS_FIELD_NUMBER: _ClassVar[int]
            path: str
            timeout: _duration_pb2.Duration
            headers: _containers.RepeatedCompositeFieldContainer[MeshConfig.ExtensionProvider.HttpHeader]
            def __init__(self, path: _Optional[str] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., headers: _Optional[_Iterable[_Union[MeshConfig.ExtensionProvider.HttpHeader, _Mapping]]] = ...) -> None: ...
        class HttpHeader(_message.Message):
            __slots__ = ("name", "value", "env_name")
            NAME_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            ENV_NAME_FIELD_NUMBER: _ClassVar[int]
            name: str
            value: str
            env_name: str
            def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., env_name: _Optional[str] = ...) -> None: ...
        class ResourceDetectors(_message.Message):
            __slots__ = ("environment", "dynatrace")
            class EnvironmentResourceDetector(_message.Message):
                __slots__ = ()
                def __init__(self) -> None: ...
            class DynatraceResourceDetector(_message.Message):
                __slots__ = ()
                def __init__(self) -> None: ...
            ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
            DYNATRACE_FIELD_NUMBER: _ClassVar[int]
            environment: MeshConfig.ExtensionProvider.ResourceDetectors.EnvironmentResourceDetector
            dynatrace: MeshConfig.ExtensionProvider.ResourceDetectors.DynatraceResourceDetector
            def __init__(self, environment: _Optional[_Union[MeshConfig.ExtensionProvider.ResourceDetectors.EnvironmentResourceDetector, _Mapping]] = ..., dynatrace: _Optional[_Union[MeshConfig.ExtensionProvider.ResourceDetectors.DynatraceResourceDetector, _Mapping]] = ...) -> None: ...
        class GrpcService(_message.Message):
            __slots__ = ("timeout", "initial_metadata")
            TIMEOUT_FIELD_NUMBER: _ClassVar[int]
            INITIAL_METADATA_FIELD_NUMBER: _ClassVar[int]
            timeout: _duration_pb2.Duration
            initial_metadata: _containers.RepeatedCompositeFieldContainer[MeshConfig.ExtensionProvider.HttpHeader]
            def __init__(self, timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., initial_metadata: _Optional[_Iterable[_Union[MeshConfig.ExtensionProvider.HttpHeader, _Mapping]]] = ...) -> None: ...
        NAME_FIELD_NUMBER: _ClassVar[int]
        ENVOY_EXT_AUTHZ_HTTP_FIELD_NUMBER: _ClassVar[int]
        ENVOY_EXT_AUTHZ_GRPC_FIELD_NUMBER: _ClassVar[int]
        ZIPKIN_FIELD_NUMBER: _ClassVar[int]
        LIGHTSTEP_FIELD_NUMBER: _ClassVar[int]
        DATADOG_FIELD_NUMBER: _ClassVar[int]
        STACKDRIVER_FIELD_NUMBER: _ClassVar[int]
        OPENCENSUS_FIELD_NUMBER: _ClassVar[int]
        SKYWALKING_FIELD_NUMBER: _ClassVar[int]
        PROMETHEUS_FIELD_NUMBER: _ClassVar[int]
        ENVOY_FILE_ACCESS_LOG_FIELD_NUMBER: _ClassVar[int]
        ENVOY_HTTP_ALS_FIELD_NUMBER: _ClassVar[int]
        ENVOY_TCP_ALS_FIELD_NUMBER: _ClassVar[int]
        ENVOY_OTEL_ALS_FIELD_NUMBER: _ClassVar[int]
        OPENTELEMETRY_FIELD_NUMBER: _ClassVar[int]
        SDS_FIELD_NUMBER: _ClassVar[int]
        name: str
        envoy_ext_authz_http: MeshConfig.ExtensionProvider.EnvoyExternalAuthorizationHttpProvider
        envoy_ext_authz_grpc: MeshConfig.ExtensionProvider.EnvoyExternalAuthorizationGrpcProvider
        zipkin: MeshConfig.ExtensionProvider.ZipkinTracingProvider
        lightstep: MeshConfig.ExtensionProvider.LightstepTracingProvider
        datadog: MeshConfig.ExtensionProvider.DatadogTracingProvider
        stackdriver: MeshConfig.ExtensionProvider.StackdriverProvider
        opencensus: MeshConfig.ExtensionProvider.OpenCensusAgentTracingProvider
        skywalking: MeshConfig.ExtensionProvider.SkyWalkingTracingProvider
        prometheus: MeshConfig.ExtensionProvider.PrometheusMetricsProvider
        envoy_file_access_log: MeshConfig.ExtensionProvider.EnvoyFileAccessLogProvider
        envoy_http_als: MeshConfig.ExtensionProvider.EnvoyHttpGrpcV3LogProvider
        envoy_tcp_als: MeshConfig.ExtensionProvider.EnvoyTcpGrpcV3LogProvider
        envoy_otel_als: MeshConfig.ExtensionProvider.EnvoyOpenTelemetryLogProvider
        opentelemetry: MeshConfig.ExtensionProvider.OpenTelemetryTracingProvider
        sds: MeshConfig.ExtensionProvider.SDSProvider
        def __init__(self, name: _Optional[str] = ..., envoy_ext_authz_http: _Optional[_Union[MeshConfig.ExtensionProvider.EnvoyExternalAuthorizationHttpProvider, _Mapping]] = ..., envoy_ext_authz_grpc: _Optional[_Union[MeshConfig.ExtensionProvider.EnvoyExternalAuthorizationGrpcProvider, _Mapping]] = ..., zipkin: _Optional[_Union[MeshConfig.ExtensionProvider.ZipkinTracingProvider, _Mapping]] = ..., lightstep: _Optional[_Union[MeshConfig.ExtensionProvider.LightstepTracingProvider, _Mapping]] = ..., datadog: _Optional[_Union[MeshConfig.ExtensionProvider.DatadogTracingProvider, _Mapping]] = ..., stackdriver: _Optional[_Union[MeshConfig.ExtensionProvider.StackdriverProvider, _Mapping]] = ..., opencensus: _Optional[_Union[MeshConfig.ExtensionProvider.OpenCensusAgentTracingProvider, _Mapping]] = ..., skywalking: _Optional[_Union[MeshConfig.ExtensionProvider.SkyWalkingTracingProvider, _Mapping]] = ..., prometheus: _Optional[_Union[MeshConfig.ExtensionProvider.PrometheusMetricsProvider, _Mapping]] = ..., envoy_file_access_log: _Optional[_Union[MeshConfig.ExtensionProvider.EnvoyFileAccessLogProvider, _Mapping]] = ..., envoy_http_als: _Optional[_Union[MeshConfig.ExtensionProvider.EnvoyHttpGrpcV3LogProvider, _Mapping]] = ..., envoy_tcp_als: _Optional[_Union[MeshConfig.ExtensionProvider.EnvoyTcpGrpcV3LogProvider, _Mapping]] = ..., envoy_otel_als: _Optional[_Union[MeshConfig.ExtensionProvider.EnvoyOpenTelemetryLogProvider, _Mapping]] = ..., opentelemetry: _Optional[_Union[MeshConfig.ExtensionProvider.OpenTelemetryTracingProvider, _Mapping]] = ..., sds: _Optional[_Union[MeshConfig.ExtensionProvider.SDSProvider, _Mapping]] = ...) -> None: ...
    class InboundTrafficPolicy(_message.Message):
        __slots__ = ("mode",)
        class Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            PASSTHROUGH: _ClassVar[MeshConfig.InboundTrafficPolicy.Mode]
            LOCALHOST: _ClassVar[MeshConfig.InboundTrafficPolicy.Mode]
        PASSTHROUGH: MeshConfig.InboundTrafficPolicy.Mode
        LOCALHOST: MeshConfig.InboundTrafficPolicy.Mode
        MODE_FIELD_NUMBER: _ClassVar[int]
        mode: MeshConfig.InboundTrafficPolicy.Mode
        def __init__(self, mode: _Optional[_Union[MeshConfig.InboundTrafficPolicy.Mode, str]] = ...) -> None: ...
    class CertificateData(_message.Message):
        __slots__ = ("pem", "spiffe_bundle_url", "cert_signers", "trust_domains")
        PEM_FIELD_NUMBER: _ClassVar[int]
        SPIFFE_BUNDLE_URL_FIELD_NUMBER: _ClassVar[int]
        CERT_SIGNERS_FIELD_NUMBER: _ClassVar[int]
        TRUST_DOMAINS_FIELD_NUMBER: _ClassVar[int]
        pem: str
        spiffe_bundle_url: str
        cert_signers: _containers.RepeatedScalarFieldContainer[str]
        trust_domains: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, pem: _Optional[str] = ..., spiffe_bundle_url: _Optional[str] = ..., cert_signers: _Optional[_Iterable[str]] = ..., trust_domains: _Optional[_Iterable[str]] = ...) -> None: ...
    class ServiceSettings(_message.Message):
        __slots__ = ("settings", "hosts")
        class Settings(_message.Message):
            __slots__ = ("cluster_local",)
            CLUSTER_LOCAL_FIELD_NUMBER: _ClassVar[int]
            cluster_local: bool
            def __init__(self, cluster_local: _Optional[bool] = ...) -> None: ...
        SETTINGS_FIELD_NUMBER: _ClassVar[int]
        HOSTS_FIELD_NUMBER: _ClassVar[int]
        settings: MeshConfig.ServiceSettings.Settings
        hosts: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, settings: _Optional[_Union[MeshConfig.ServiceSettings.Settings, _Mapping]] = ..., hosts: _Optional[_Iterable[str]] = ...) -> None: ...
    class CA(_message.Message):
        __slots__ = ("address", "tls_settings", "request_timeout", "istiod_side")
        ADDRESS_FIELD_NUMBER: _ClassVar[int]
        TLS_SETTINGS_FIELD_NUMBER: _ClassVar[int]
        REQUEST_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
        ISTIOD_SIDE_FIELD_NUMBER: _ClassVar[int]
        address: str
        tls_settings: _destination_rule_pb2.ClientTLSSettings
        request_timeout: _duration_pb2.Duration
        istiod_side: bool
        def __init__(self, address: _Optional[str] = ..., tls_settings: _Optional[_Union[_destination_rule_pb2.ClientTLSSettings, _Mapping]] = ..., request_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., istiod_side: _Optional[bool] = ...) -> None: ...
    class ProxyPathNormalization(_message.Message):
        __slots__ = ("normalization",)
        class NormalizationType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            DEFAULT: _ClassVar[MeshConfig.ProxyPathNormalization.NormalizationType]
            NONE: _ClassVar[MeshConfig.ProxyPathNormalization.NormalizationType]
            BASE: _ClassVar[MeshConfig.ProxyPathNormalization.NormalizationType]
            MERGE_SLASHES: _ClassVar[MeshConfig.ProxyPathNormalization.NormalizationType]
            DECODE_AND_MERGE_SLASHES: _ClassVar[MeshConfig.ProxyPathNormalization.NormalizationType]
        DEFAULT: MeshConfig.ProxyPathNormalization.NormalizationType
        NONE: MeshConfig.ProxyPathNormalization.NormalizationType
        BASE: MeshConfig.ProxyPathNormalization.NormalizationType
        MERGE_SLASHES: MeshConfig.ProxyPathNormalization.NormalizationType
        DECODE_AND_MERGE_SLASHES: MeshConfig.ProxyPathNormalization.NormalizationType
        NORMALIZATION_FIELD_NUMBER: _ClassVar[int]
        normalization: MeshConfig.ProxyPathNormalization.NormalizationType
        def __init__(self, normalization: _Optional[_Union[MeshConfig.ProxyPathNormalization.NormalizationType, str]] = ...) -> None: ...
    class TLSConfig(_message.Message):
        __slots__ = ("min_protocol_version", "ecdh_curves", "cipher_suites")
        class TLSProtocol(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            TLS_AUTO: _ClassVar[MeshConfig.TLSConfig.TLSProtocol]
            TLSV1_2: _ClassVar[MeshConfig.TLSConfig.TLSProtocol]
            TLSV1_3: _ClassVar[MeshConfig.TLSConfig.TLSProtocol]
        TLS_AUTO: MeshConfig.TLSConfig.TLSProtocol
        TLSV1_2: MeshConfig.TLSConfig.TLSProtocol
        TLSV1_3: MeshConfig.TLSConfig.TLSProtocol
        MIN_PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
        ECDH_CURVES_FIELD_NUMBER: _ClassVar[int]
        CIPHER_SUITES_FIELD_NUMBER: _ClassVar[int]
        min_protocol_version: MeshConfig.TLSConfig.TLSProtocol
        ecdh_curves: _containers.RepeatedScalarFieldContainer[str]
        cipher_suites: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, min_protocol_version: _Optional[_Union[MeshConfig.TLSConfig.TLSProtocol, str]] = ..., ecdh_curves: _Optional[_Iterable[str]] = ..., cipher_suites: _Optional[_Iterable[str]] = ...) -> None: ...
    class DefaultTrafficPolicy(_message.Message):
        __slots__ = ("connection_pool", "outlier_detection")
        CONNECTION_POOL_FIELD_NUMBER: _ClassVar[int]
        OUTLIER_DETECTION_FIELD_NUMBER: _ClassVar[int]
        connection_pool: _destination_rule_pb2.ConnectionPoolSettings
        outlier_detection: _destination_rule_pb2.OutlierDetection
        def __init__(self, connection_pool: _Optional[_Union[_destination_rule_pb2.ConnectionPoolSettings, _Mapping]] = ..., outlier_detection: _Optional[_Union[_destination_rule_pb2.OutlierDetection, _Mapping]] = ...) -> None: ...
    class ServiceScopeConfigs(_message.Message):
        __slots__ = ("namespace_selector", "services_selector", "scope")
        class Scope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            LOCAL: _ClassVar[MeshConfig.ServiceScopeConfigs.Scope]
            GLOBAL: _ClassVar[MeshConfig.ServiceScopeConfigs.Scope]
        LOCAL: MeshConfig.ServiceScopeConfigs.Scope
        GLOBAL: MeshConfig.ServiceScopeConfigs.Scope
        NAMESPACE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
        SERVICES_SELECTOR_FIELD_NUMBER: _ClassVar[int]
        SCOPE_FIELD_NUMBER: _ClassVar[int]
        namespace_selector: LabelSelector
        services_selector: LabelSelector
        scope: MeshConfig.ServiceScopeConfigs.Scope
        def __init__(self, namespace_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., services_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., scope: _Optional[_Union[MeshConfig.ServiceScopeConfigs.Scope, str]] = ...) -> None: ...
    PROXY_LISTEN_PORT_FIELD_NUMBER: _ClassVar[int]
    PROXY_INBOUND_LISTEN_PORT_FIELD_NUMBER: _ClassVar[int]
    CONNECT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    OUTBOUND_TRAFFIC_POLICY_FIELD_NUMBER: _ClassVar[int]
    CONFIG_SOURCES_FIELD_NUMBER: _ClassVar[int]
    TRUST_DOMAIN_FIELD_NUMBER: _ClassVar[int]
    TRUST_DOMAIN_ALIASES_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_SERVICE_EXPORT_TO_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VIRTUAL_SERVICE_EXPORT_TO_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_DESTINATION_RULE_EXPORT_TO_FIELD_NUMBER: _ClassVar[int]
    ROOT_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LOCALITY_LB_SETTING_FIELD_NUMBER: _ClassVar[int]
    DNS_REFRESH_RATE_FIELD_NUMBER: _ClassVar[int]
    ENABLE_AUTO_MTLS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_HTTP_RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_CONFIG_FIELD_NUMBER: _ClassVar[int]
    PROXY_HTTP_PORT_FIELD_NUMBER: _ClassVar[int]
    HBONE_IDLE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_DETECTION_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TCP_KEEPALIVE_FIELD_NUMBER: _ClassVar[int]
    INGRESS_CLASS_FIELD_NUMBER: _ClassVar[int]
    INGRESS_SERVICE_FIELD_NUMBER: _ClassVar[int]
    INGRESS_CONTROLLER_MODE_FIELD_NUMBER: _ClassVar[int]
    INGRESS_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    ENABLE_TRACING_FIELD_NUMBER: _ClassVar[int]
    ACCESS_LOG_FILE_FIELD_NUMBER: _ClassVar[int]
    ACCESS_LOG_FORMAT_FIELD_NUMBER: _ClassVar[int]
    ACCESS_LOG_ENCODING_FIELD_NUMBER: _ClassVar[int]
    ENABLE_ENVOY_ACCESS_LOG_SERVICE_FIELD_NUMBER: _ClassVar[int]
    DISABLE_ENVOY_LISTENER_LOG_FIELD_NUMBER: _ClassVar[int]
    EXTENSION_PROVIDERS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_PROVIDERS_FIELD_NUMBER: _ClassVar[int]
    INBOUND_TRAFFIC_POLICY_FIELD_NUMBER: _ClassVar[int]
    CA_CERTIFICATES_FIELD_NUMBER: _ClassVar[int]
    ZONE_AWARE_LB_SETTING_FIELD_NUMBER: _ClassVar[int]
    H2_UPGRADE_POLICY_FIELD_NUMBER: _ClassVar[int]
    INBOUND_CLUSTER_STAT_NAME_FIELD_NUMBER: _ClassVar[int]
    OUTBOUND_CLUSTER_STAT_NAME_FIELD_NUMBER: _ClassVar[int]
    SERVICE_SETTINGS_FIELD_NUMBER: _ClassVar[int]
    ENABLE_PROMETHEUS_MERGE_FIELD_NUMBER: _ClassVar[int]
    VERIFY_CERTIFICATE_AT_CLIENT_FIELD_NUMBER: _ClassVar[int]
    CA_FIELD_NUMBER: _ClassVar[int]
    PATH_NORMALIZATION_FIELD_NUMBER: _ClassVar[int]
    MESH_MTLS_FIELD_NUMBER: _ClassVar[int]
    TLS_DEFAULTS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_TRAFFIC_POLICY_FIELD_NUMBER: _ClassVar[int]
    DISCOVERY_SELECTORS_FIELD_NUMBER: _ClassVar[int]
    SERVICE_SCOPE_CONFIGS_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ENTRY_VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    CERTIFICATES_FIELD_NUMBER: _ClassVar[int]
    proxy_listen_port: int
    proxy_inbound_listen_port: int
    connect_timeout: _duration_pb2.Duration
    outbound_traffic_policy: MeshConfig.OutboundTrafficPolicy
    config_sources: _containers.RepeatedCompositeFieldContainer[ConfigSource]
    trust_domain: str
    trust_domain_aliases: _containers.RepeatedScalarFieldContainer[str]
    default_service_export_to: _containers.RepeatedScalarFieldContainer[str]
    default_virtual_service_export_to: _containers.RepeatedScalarFieldContainer[str]
    default_destination_rule_export_to: _containers.RepeatedScalarFieldContainer[str]
    root_namespace: str
    locality_lb_setting: _destination_rule_pb2.LocalityLoadBalancerSetting
    dns_refresh_rate: _duration_pb2.Duration
    enable_auto_mtls: _wrappers_pb2.BoolValue
    default_http_retry_policy: _virtual_service_pb2.HTTPRetry
    default_config: _proxy_pb2.ProxyConfig
    proxy_http_port: int
    hbone_idle_timeout: _duration_pb2.Duration
    protocol_detection_timeout: _duration_pb2.Duration
    tcp_keepalive: _destination_rule_pb2.ConnectionPoolSettings.TCPSettings.TcpKeepalive
    ingress_class: str
    ingress_service: str
    ingress_controller_mode: MeshConfig.IngressControllerMode
    ingress_selector: str
    enable_tracing: bool
    access_log_file: str
    access_log_format: str
    access_log_encoding: MeshConfig.AccessLogEncoding
    enable_envoy_access_log_service: bool
    disable_envoy_listener_log: bool
    extension_providers: _containers.RepeatedCompositeFieldContainer[MeshConfig.ExtensionProvider]
    default_providers: MeshConfig.DefaultProviders
    inbound_traffic_policy: MeshConfig.InboundTrafficPolicy
    ca_certificates: _containers.RepeatedCompositeFieldContainer[MeshConfig.CertificateData]
    zone_aware_lb_setting: _destination_rule_pb2.ZoneAwareLoadBalancerSetting
    h2_upgrade_policy: MeshConfig.H2UpgradePolicy
    inbound_cluster_stat_name: str
    outbound_cluster_stat_name: str
    service_settings: _containers.RepeatedCompositeFieldContainer[MeshConfig.ServiceSettings]
    enable_prometheus_merge: _wrappers_pb2.BoolValue
    verify_certificate_at_client: _wrappers_pb2.BoolValue
    ca: MeshConfig.CA
    path_normalization: MeshConfig.ProxyPathNormalization
    mesh_mTLS: MeshConfig.TLSConfig
    tls_defaults: MeshConfig.TLSConfig
    default_traffic_policy: MeshConfig.DefaultTrafficPolicy
    discovery_selectors: _containers.RepeatedCompositeFieldContainer[LabelSelector]
    service_scope_configs: _containers.RepeatedCompositeFieldContainer[MeshConfig.ServiceScopeConfigs]
    service_entry_visibility: ServiceEntryVisibility
    certificates: _containers.RepeatedCompositeFieldContainer[Certificate]
    def __init__(self, proxy_listen_port: _Optional[int] = ..., proxy_inbound_listen_port: _Optional[int] = ..., connect_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., outbound_traffic_policy: _Optional[_Union[MeshConfig.OutboundTrafficPolicy, _Mapping]] = ..., config_sources: _Optional[_Iterable[_Union[ConfigSource, _Mapping]]] = ..., trust_domain: _Optional[str] = ..., trust_domain_aliases: _Optional[_Iterable[str]] = ..., default_service_export_to: _Optional[_Iterable[str]] = ..., default_virtual_service_export_to: _Optional[_Iterable[str]] = ..., default_destination_rule_export_to: _Optional[_Iterable[str]] = ..., root_namespace: _Optional[str] = ..., locality_lb_setting: _Optional[_Union[_destination_rule_pb2.LocalityLoadBalancerSetting, _Mapping]] = ..., dns_refresh_rate: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., enable_auto_mtls: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ..., default_http_retry_policy: _Optional[_Union[_virtual_service_pb2.HTTPRetry, _Mapping]] = ..., default_config: _Optional[_Union[_proxy_pb2.ProxyConfig, _Mapping]] = ..., proxy_http_port: _Optional[int] = ..., hbone_idle_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., protocol_detection_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., tcp_keepalive: _Optional[_Union[_destination_rule_pb2.ConnectionPoolSettings.TCPSettings.TcpKeepalive, _Mapping]] = ..., ingress_class: _Optional[str] = ..., ingress_service: _Optional[str] = ..., ingress_controller_mode: _Optional[_Union[MeshConfig.IngressControllerMode, str]] = ..., ingress_selector: _Optional[str] = ..., enable_tracing: _Optional[bool] = ..., access_log_file: _Optional[str] = ..., access_log_format: _Optional[str] = ..., access_log_encoding: _Optional[_Union[MeshConfig.AccessLogEncoding, str]] = ..., enable_envoy_access_log_service: _Optional[bool] = ..., disable_envoy_listener_log: _Optional[bool] = ..., extension_providers: _Optional[_Iterable[_Union[MeshConfig.ExtensionProvider, _Mapping]]] = ..., default_providers: _Optional[_Union[MeshConfig.DefaultProviders, _Mapping]] = ..., inbound_traffic_policy: _Optional[_Union[MeshConfig.InboundTrafficPolicy, _Mapping]] = ..., ca_certificates: _Optional[_Iterable[_Union[MeshConfig.CertificateData, _Mapping]]] = ..., zone_aware_lb_setting: _Optional[_Union[_destination_rule_pb2.ZoneAwareLoadBalancerSetting, _Mapping]] = ..., h2_upgrade_policy: _Optional[_Union[MeshConfig.H2UpgradePolicy, str]] = ..., inbound_cluster_stat_name: _Optional[str] = ..., outbound_cluster_stat_name: _Optional[str] = ..., service_settings: _Optional[_Iterable[_Union[MeshConfig.ServiceSettings, _Mapping]]] = ..., enable_prometheus_merge: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ..., verify_certificate_at_client: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ..., ca: _Optional[_Union[MeshConfig.CA, _Mapping]] = ..., path_normalization: _Optional[_Union[MeshConfig.ProxyPathNormalization, _Mapping]] = ..., mesh_mTLS: _Optional[_Union[MeshConfig.TLSConfig, _Mapping]] = ..., tls_defaults: _Optional[_Union[MeshConfig.TLSConfig, _Mapping]] = ..., default_traffic_policy: _Optional[_Union[MeshConfig.DefaultTrafficPolicy, _Mapping]] = ..., discovery_selectors: _Optional[_Iterable[_Union[LabelSelector, _Mapping]]] = ..., service_scope_configs: _Optional[_Iterable[_Union[MeshConfig.ServiceScopeConfigs, _Mapping]]] = ..., service_entry_visibility: _Optional[_Union[ServiceEntryVisibility, _Mapping]] = ..., certificates: _Optional[_Iterable[_Union[Certificate, _Mapping]]] = ...) -> None: ...

class LabelSelector(_message.Message):
    __slots__ = ("matchLabels", "matchExpressions")
    class MatchLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MATCHLABELS_FIELD_NUMBER: _ClassVar[int]
    MATCHEXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    matchLabels: _containers.ScalarMap[str, str]
    matchExpressions: _containers.RepeatedCompositeFieldContainer[LabelSelectorRequirement]
    def __init__(self, matchLabels: _Optional[_Mapping[str, str]] = ..., matchExpressions: _Optional[_Iterable[_Union[LabelSelectorRequirement, _Mapping]]] = ...) -> None: ...

class LabelSelectorRequirement(_message.Message):
    __slots__ = ("key", "operator", "values")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class ServiceEntryVisibility(_message.Message):
    __slots__ = ("default_visibility", "apply_to_sidecars", "policies")
    class Visibility(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        VISIBILITY_UNSPECIFIED: _ClassVar[ServiceEntryVisibility.Visibility]
        NONE: _ClassVar[ServiceEntryVisibility.Visibility]
        NAMESPACE: _ClassVar[ServiceEntryVisibility.Visibility]
        PUBLIC: _ClassVar[ServiceEntryVisibility.Visibility]
    VISIBILITY_UNSPECIFIED: ServiceEntryVisibility.Visibility
    NONE: ServiceEntryVisibility.Visibility
    NAMESPACE: ServiceEntryVisibility.Visibility
    PUBLIC: ServiceEntryVisibility.Visibility
    class Policy(_message.Message):
        __slots__ = ("visibility", "matching_rules")
        VISIBILITY_FIELD_NUMBER: _ClassVar[int]
        MATCHING_RULES_FIELD_NUMBER: _ClassVar[int]
        visibility: ServiceEntryVisibility.Visibility
        matching_rules: _containers.RepeatedCompositeFieldContainer[ServiceEntryVisibility.MatchRule]
        def __init__(self, visibility: _Optional[_Union[ServiceEntryVisibility.Visibility, str]] = ..., matching_rules: _Optional[_Iterable[_Union[ServiceEntryVisibility.MatchRule, _Mapping]]] = ...) -> None: ...
    class MatchRule(_message.Message):
        __slots__ = ("namespace_selector",)
        NAMESPACE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
        namespace_selector: LabelSelector
        def __init__(self, namespace_selector: _Optional[_Union[LabelSelector, _Mapping]] = ...) -> None: ...
    DEFAULT_VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    APPLY_TO_SIDECARS_FIELD_NUMBER: _ClassVar[int]
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    default_visibility: ServiceEntryVisibility.Visibility
    apply_to_sidecars: bool
    policies: _containers.RepeatedCompositeFieldContainer[ServiceEntryVisibility.Policy]
    def __init__(self, default_visibility: _Optional[_Union[ServiceEntryVisibility.Visibility, str]] = ..., apply_to_sidecars: _Optional[bool] = ..., policies: _Optional[_Iterable[_Union[ServiceEntryVisibility.Policy, _Mapping]]] = ...) -> None: ...

class Certificate(_message.Message):
    __slots__ = ("secret_name", "dns_names")
    SECRET_NAME_FIELD_NUMBER: _ClassVar[int]
    DNS_NAMES_FIELD_NUMBER: _ClassVar[int]
    secret_name: str
    dns_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, secret_name: _Optional[str] = ..., dns_names: _Optional[_Iterable[str]] = ...) -> None: ...

class ConfigSource(_message.Message):
    __slots__ = ("address", "tls_settings", "subscribed_resources")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    TLS_SETTINGS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    address: str
    tls_settings: _destination_rule_pb2.ClientTLSSettings
    subscribed_resources: _containers.RepeatedScalarFieldContainer[Resource]
    def __init__(self, address: _Optional[str] = ..., tls_settings: _Optional[_Union[_destination_rule_pb2.ClientTLSSettings, _Mapping]] = ..., subscribed_resources: _Optional[_Iterable[_Union[Resource, str]]] = ...) -> None: ...
