from google.protobuf import wrappers_pb2 as _wrappers_pb2
from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as _destination_rule_pb2
from pilothouse.api.istio.networking.v1beta1 import proxy_config_pb2 as _proxy_config_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProxyConfig(_message.Message):
    __slots__ = ("proxy_admin_port", "concurrency", "proxy_metadata", "image", "tracing")
    class ProxyMetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PROXY_ADMIN_PORT_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    PROXY_METADATA_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    TRACING_FIELD_NUMBER: _ClassVar[int]
    proxy_admin_port: int
    concurrency: _wrappers_pb2.Int32Value
    proxy_metadata: _containers.ScalarMap[str, str]
    image: _proxy_config_pb2.ProxyImage
    tracing: Tracing
    def __init__(self, proxy_admin_port: _Optional[int] = ..., concurrency: _Optional[_Union[_wrappers_pb2.Int32Value, _Mapping]] = ..., proxy_metadata: _Optional[_Mapping[str, str]] = ..., image: _Optional[_Union[_proxy_config_pb2.ProxyImage, _Mapping]] = ..., tracing: _Optional[_Union[Tracing, _Mapping]] = ...) -> None: ...

class Tracing(_message.Message):
    __slots__ = ("zipkin", "lightstep", "datadog", "stackdriver", "open_census_agent", "custom_tags", "max_path_tag_length", "sampling", "tls_settings", "enable_istio_tags")
    class Zipkin(_message.Message):
        __slots__ = ("address",)
        ADDRESS_FIELD_NUMBER: _ClassVar[int]
        address: str
        def __init__(self, address: _Optional[str] = ...) -> None: ...
    class Lightstep(_message.Message):
        __slots__ = ("address", "access_token")
        ADDRESS_FIELD_NUMBER: _ClassVar[int]
        ACCESS_TOKEN_FIELD_NUMBER: _ClassVar[int]
        address: str
        access_token: str
        def __init__(self, address: _Optional[str] = ..., access_token: _Optional[str] = ...) -> None: ...
    class Datadog(_message.Message):
        __slots__ = ("address",)
        ADDRESS_FIELD_NUMBER: _ClassVar[int]
        address: str
        def __init__(self, address: _Optional[str] = ...) -> None: ...
    class Stackdriver(_message.Message):
        __slots__ = ("debug", "max_number_of_attributes", "max_number_of_annotations", "max_number_of_message_events")
        DEBUG_FIELD_NUMBER: _ClassVar[int]
        MAX_NUMBER_OF_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
        MAX_NUMBER_OF_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
        MAX_NUMBER_OF_MESSAGE_EVENTS_FIELD_NUMBER: _ClassVar[int]
        debug: bool
        max_number_of_attributes: _wrappers_pb2.Int64Value
        max_number_of_annotations: _wrappers_pb2.Int64Value
        max_number_of_message_events: _wrappers_pb2.Int64Value
        def __init__(self, debug: _Optional[bool] = ..., max_number_of_attributes: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., max_number_of_annotations: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ..., max_number_of_message_events: _Optional[_Union[_wrappers_pb2.Int64Value, _Mapping]] = ...) -> None: ...
    class OpenCensusAgent(_message.Message):
        __slots__ = ("address", "context")
        class TraceContext(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            UNSPECIFIED: _ClassVar[Tracing.OpenCensusAgent.TraceContext]
            W3C_TRACE_CONTEXT: _ClassVar[Tracing.OpenCensusAgent.TraceContext]
            GRPC_BIN: _ClassVar[Tracing.OpenCensusAgent.TraceContext]
            CLOUD_TRACE_CONTEXT: _ClassVar[Tracing.OpenCensusAgent.TraceContext]
            B3: _ClassVar[Tracing.OpenCensusAgent.TraceContext]
        UNSPECIFIED: Tracing.OpenCensusAgent.TraceContext
        W3C_TRACE_CONTEXT: Tracing.OpenCensusAgent.TraceContext
        GRPC_BIN: Tracing.OpenCensusAgent.TraceContext
        CLOUD_TRACE_CONTEXT: Tracing.OpenCensusAgent.TraceContext
        B3: Tracing.OpenCensusAgent.TraceContext
        ADDRESS_FIELD_NUMBER: _ClassVar[int]
        CONTEXT_FIELD_NUMBER: _ClassVar[int]
        address: str
        context: _containers.RepeatedScalarFieldContainer[Tracing.OpenCensusAgent.TraceContext]
        def __init__(self, address: _Optional[str] = ..., context: _Optional[_Iterable[_Union[Tracing.OpenCensusAgent.TraceContext, str]]] = ...) -> None: ...
    class CustomTag(_message.Message):
        __slots__ = ("literal", "environment", "header")
        LITERAL_FIELD_NUMBER: _ClassVar[int]
        ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
        HEADER_FIELD_NUMBER: _ClassVar[int]
        literal: Tracing.Literal
        environment: Tracing.Environment
        header: Tracing.RequestHeader
        def __init__(self, literal: _Optional[_Union[Tracing.Literal, _Mapping]] = ..., environment: _Optional[_Union[Tracing.Environment, _Mapping]] = ..., header: _Optional[_Union[Tracing.RequestHeader, _Mapping]] = ...) -> None: ...
    class Literal(_message.Message):
        __slots__ = ("value",)
        VALUE_FIELD_NUMBER: _ClassVar[int]
        value: str
        def __init__(self, value: _Optional[str] = ...) -> None: ...
    class Environment(_message.Message):
        __slots__ = ("name", "default_value")
        NAME_FIELD_NUMBER: _ClassVar[int]
        DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
        name: str
        default_value: str
        def __init__(self, name: _Optional[str] = ..., default_value: _Optional[str] = ...) -> None: ...
    class RequestHeader(_message.Message):
        __slots__ = ("name", "default_value")
        NAME_FIELD_NUMBER: _ClassVar[int]
        DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
        name: str
        default_value: str
        def __init__(self, name: _Optional[str] = ..., default_value: _Optional[str] = ...) -> None: ...
    class CustomTagsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Tracing.CustomTag
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Tracing.CustomTag, _Mapping]] = ...) -> None: ...
    ZIPKIN_FIELD_NUMBER: _ClassVar[int]
    LIGHTSTEP_FIELD_NUMBER: _ClassVar[int]
    DATADOG_FIELD_NUMBER: _ClassVar[int]
    STACKDRIVER_FIELD_NUMBER: _ClassVar[int]
    OPEN_CENSUS_AGENT_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_TAGS_FIELD_NUMBER: _ClassVar[int]
    MAX_PATH_TAG_LENGTH_FIELD_NUMBER: _ClassVar[int]
    SAMPLING_FIELD_NUMBER: _ClassVar[int]
    TLS_SETTINGS_FIELD_NUMBER: _ClassVar[int]
    ENABLE_ISTIO_TAGS_FIELD_NUMBER: _ClassVar[int]
    zipkin: Tracing.Zipkin
    lightstep: Tracing.Lightstep
    datadog: Tracing.Datadog
    stackdriver: Tracing.Stackdriver
    open_census_agent: Tracing.OpenCensusAgent
    custom_tags: _containers.MessageMap[str, Tracing.CustomTag]
    max_path_tag_length: int
    sampling: float
    tls_settings: _destination_rule_pb2.ClientTLSSettings
    enable_istio_tags: _wrappers_pb2.BoolValue
    def __init__(self, zipkin: _Optional[_Union[Tracing.Zipkin, _Mapping]] = ..., lightstep: _Optional[_Union[Tracing.Lightstep, _Mapping]] = ..., datadog: _Optional[_Union[Tracing.Datadog, _Mapping]] = ..., stackdriver: _Optional[_Union[Tracing.Stackdriver, _Mapping]] = ..., open_census_agent: _Optional[_Union[Tracing.OpenCensusAgent, _Mapping]] = ..., custom_tags: _Optional[_Mapping[str, Tracing.CustomTag]] = ..., max_path_tag_length: _Optional[int] = ..., sampling: _Optional[float] = ..., tls_settings: _Optional[_Union[_destination_rule_pb2.ClientTLSSettings, _Mapping]] = ..., enable_istio_tags: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ...) -> None: ...
