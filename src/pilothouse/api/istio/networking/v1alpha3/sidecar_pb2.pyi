from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as _destination_rule_pb2
from pilothouse.api.istio.networking.v1alpha3 import gateway_pb2 as _gateway_pb2
from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as _virtual_service_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CaptureMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DEFAULT: _ClassVar[CaptureMode]
    IPTABLES: _ClassVar[CaptureMode]
    NONE: _ClassVar[CaptureMode]
DEFAULT: CaptureMode
IPTABLES: CaptureMode
NONE: CaptureMode

class Sidecar(_message.Message):
    __slots__ = ("workload_selector", "ingress", "egress", "inbound_connection_pool", "outbound_traffic_policy")
    WORKLOAD_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    INGRESS_FIELD_NUMBER: _ClassVar[int]
    EGRESS_FIELD_NUMBER: _ClassVar[int]
    INBOUND_CONNECTION_POOL_FIELD_NUMBER: _ClassVar[int]
    OUTBOUND_TRAFFIC_POLICY_FIELD_NUMBER: _ClassVar[int]
    workload_selector: WorkloadSelector
    ingress: _containers.RepeatedCompositeFieldContainer[IstioIngressListener]
    egress: _containers.RepeatedCompositeFieldContainer[IstioEgressListener]
    inbound_connection_pool: _destination_rule_pb2.ConnectionPoolSettings
    outbound_traffic_policy: OutboundTrafficPolicy
    def __init__(self, workload_selector: _Optional[_Union[WorkloadSelector, _Mapping]] = ..., ingress: _Optional[_Iterable[_Union[IstioIngressListener, _Mapping]]] = ..., egress: _Optional[_Iterable[_Union[IstioEgressListener, _Mapping]]] = ..., inbound_connection_pool: _Optional[_Union[_destination_rule_pb2.ConnectionPoolSettings, _Mapping]] = ..., outbound_traffic_policy: _Optional[_Union[OutboundTrafficPolicy, _Mapping]] = ...) -> None: ...

class IstioIngressListener(_message.Message):
    __slots__ = ("port", "bind", "capture_mode", "default_endpoint", "tls", "connection_pool")
    PORT_FIELD_NUMBER: _ClassVar[int]
    BIND_FIELD_NUMBER: _ClassVar[int]
    CAPTURE_MODE_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    TLS_FIELD_NUMBER: _ClassVar[int]
    CONNECTION_POOL_FIELD_NUMBER: _ClassVar[int]
    port: SidecarPort
    bind: str
    capture_mode: CaptureMode
    default_endpoint: str
    tls: _gateway_pb2.ServerTLSSettings
    connection_pool: _destination_rule_pb2.ConnectionPoolSettings
    def __init__(self, port: _Optional[_Union[SidecarPort, _Mapping]] = ..., bind: _Optional[str] = ..., capture_mode: _Optional[_Union[CaptureMode, str]] = ..., default_endpoint: _Optional[str] = ..., tls: _Optional[_Union[_gateway_pb2.ServerTLSSettings, _Mapping]] = ..., connection_pool: _Optional[_Union[_destination_rule_pb2.ConnectionPoolSettings, _Mapping]] = ...) -> None: ...

class IstioEgressListener(_message.Message):
    __slots__ = ("port", "bind", "capture_mode", "hosts")
    PORT_FIELD_NUMBER: _ClassVar[int]
    BIND_FIELD_NUMBER: _ClassVar[int]
    CAPTURE_MODE_FIELD_NUMBER: _ClassVar[int]
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    port: SidecarPort
    bind: str
    capture_mode: CaptureMode
    hosts: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, port: _Optional[_Union[SidecarPort, _Mapping]] = ..., bind: _Optional[str] = ..., capture_mode: _Optional[_Union[CaptureMode, str]] = ..., hosts: _Optional[_Iterable[str]] = ...) -> None: ...

class WorkloadSelector(_message.Message):
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

class OutboundTrafficPolicy(_message.Message):
    __slots__ = ("mode", "egress_proxy")
    class Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        REGISTRY_ONLY: _ClassVar[OutboundTrafficPolicy.Mode]
        ALLOW_ANY: _ClassVar[OutboundTrafficPolicy.Mode]
    REGISTRY_ONLY: OutboundTrafficPolicy.Mode
    ALLOW_ANY: OutboundTrafficPolicy.Mode
    MODE_FIELD_NUMBER: _ClassVar[int]
    EGRESS_PROXY_FIELD_NUMBER: _ClassVar[int]
    mode: OutboundTrafficPolicy.Mode
    egress_proxy: _virtual_service_pb2.Destination
    def __init__(self, mode: _Optional[_Union[OutboundTrafficPolicy.Mode, str]] = ..., egress_proxy: _Optional[_Union[_virtual_service_pb2.Destination, _Mapping]] = ...) -> None: ...

class SidecarPort(_message.Message):
    __slots__ = ("number", "protocol", "name", "target_port")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_PORT_FIELD_NUMBER: _ClassVar[int]
    number: int
    protocol: str
    name: str
    target_port: int
    def __init__(self, number: _Optional[int] = ..., protocol: _Optional[str] = ..., name: _Optional[str] = ..., target_port: _Optional[int] = ...) -> None: ...
