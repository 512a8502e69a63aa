from pilothouse.api.istio.networking.v1alpha3 import workload_entry_pb2 as _workload_entry_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WorkloadGroup(_message.Message):
    __slots__ = ("metadata", "template", "probe")
    class ObjectMeta(_message.Message):
        __slots__ = ("labels", "annotations")
        class LabelsEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: str
            def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
        class AnnotationsEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: str
            def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
        LABELS_FIELD_NUMBER: _ClassVar[int]
        ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
        labels: _containers.ScalarMap[str, str]
        annotations: _containers.ScalarMap[str, str]
        def __init__(self, labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ...) -> None: ...
    METADATA_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    PROBE_FIELD_NUMBER: _ClassVar[int]
    metadata: WorkloadGroup.ObjectMeta
    template: _workload_entry_pb2.WorkloadEntry
    probe: ReadinessProbe
    def __init__(self, metadata: _Optional[_Union[WorkloadGroup.ObjectMeta, _Mapping]] = ..., template: _Optional[_Union[_workload_entry_pb2.WorkloadEntry, _Mapping]] = ..., probe: _Optional[_Union[ReadinessProbe, _Mapping]] = ...) -> None: ...

class ReadinessProbe(_message.Message):
    __slots__ = ("initial_delay_seconds", "timeout_seconds", "period_seconds", "success_threshold", "failure_threshold", "http_get", "tcp_socket", "exec", "grpc")
    INITIAL_DELAY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    FAILURE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    HTTP_GET_FIELD_NUMBER: _ClassVar[int]
    TCP_SOCKET_FIELD_NUMBER: _ClassVar[int]
    EXEC_FIELD_NUMBER: _ClassVar[int]
    GRPC_FIELD_NUMBER: _ClassVar[int]
    initial_delay_seconds: int
    timeout_seconds: int
    period_seconds: int
    success_threshold: int
    failure_threshold: int
    http_get: HTTPHealthCheckConfig
    tcp_socket: TCPHealthCheckConfig
    exec: ExecHealthCheckConfig
    grpc: GrpcHealthCheckConfig
    def __init__(self, initial_delay_seconds: _Optional[int] = ..., timeout_seconds: _Optional[int] = ..., period_seconds: _Optional[int] = ..., success_threshold: _Optional[int] = ..., failure_threshold: _Optional[int] = ..., http_get: _Optional[_Union[HTTPHealthCheckConfig, _Mapping]] = ..., tcp_socket: _Optional[_Union[TCPHealthCheckConfig, _Mapping]] = ..., exec: _Optional[_Union[ExecHealthCheckConfig, _Mapping]] = ..., grpc: _Optional[_Union[GrpcHealthCheckConfig, _Mapping]] = ...) -> None: ...

class HTTPHealthCheckConfig(_message.Message):
    __slots__ = ("path", "port", "host", "scheme", "http_headers")
    PATH_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    SCHEME_FIELD_NUMBER: _ClassVar[int]
    HTTP_HEADERS_FIELD_NUMBER: _ClassVar[int]
    path: str
    port: int
    host: str
    scheme: str
    http_headers: _containers.RepeatedCompositeFieldContainer[HTTPHeader]
    def __init__(self, path: _Optional[str] = ..., port: _Optional[int] = ..., host: _Optional[str] = ..., scheme: _Optional[str] = ..., http_headers: _Optional[_Iterable[_Union[HTTPHeader, _Mapping]]] = ...) -> None: ...

class HTTPHeader(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class TCPHealthCheckConfig(_message.Message):
    __slots__ = ("host", "port")
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    host: str
    port: int
    def __init__(self, host: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class ExecHealthCheckConfig(_message.Message):
    __slots__ = ("command",)
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    command: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, command: _Optional[_Iterable[str]] = ...) -> None: ...

class GrpcHealthCheckConfig(_message.Message):
    __slots__ = ("port", "service")
    PORT_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    port: int
    service: str
    def __init__(self, port: _Optional[int] = ..., service: _Optional[str] = ...) -> None: ...
