from pilothouse.api.k8s.gateway.v1 import shared_pb2 as _shared_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GatewayClass(_message.Message):
    __slots__ = ("controller_name", "parameters_ref", "description")
    CONTROLLER_NAME_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_REF_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    controller_name: str
    parameters_ref: _shared_pb2.ParametersReference
    description: str
    def __init__(self, controller_name: _Optional[str] = ..., parameters_ref: _Optional[_Union[_shared_pb2.ParametersReference, _Mapping]] = ..., description: _Optional[str] = ...) -> None: ...

class Gateway(_message.Message):
    __slots__ = ("gateway_class_name", "listeners", "addresses", "infrastructure")
    GATEWAY_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    LISTENERS_FIELD_NUMBER: _ClassVar[int]
    ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    INFRASTRUCTURE_FIELD_NUMBER: _ClassVar[int]
    gateway_class_name: str
    listeners: _containers.RepeatedCompositeFieldContainer[Listener]
    addresses: _containers.RepeatedCompositeFieldContainer[GatewayAddress]
    infrastructure: GatewayInfrastructure
    def __init__(self, gateway_class_name: _Optional[str] = ..., listeners: _Optional[_Iterable[_Union[Listener, _Mapping]]] = ..., addresses: _Optional[_Iterable[_Union[GatewayAddress, _Mapping]]] = ..., infrastructure: _Optional[_Union[GatewayInfrastructure, _Mapping]] = ...) -> None: ...

class GatewayAddress(_message.Message):
    __slots__ = ("type", "value")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    type: str
    value: str
    def __init__(self, type: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class GatewayInfrastructure(_message.Message):
    __slots__ = ("labels", "annotations", "parameters_ref")
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
    PARAMETERS_REF_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    parameters_ref: _shared_pb2.LocalObjectReference
    def __init__(self, labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ..., parameters_ref: _Optional[_Union[_shared_pb2.LocalObjectReference, _Mapping]] = ...) -> None: ...

class Listener(_message.Message):
    __slots__ = ("name", "hostname", "port", "protocol", "tls", "allowed_routes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    TLS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_ROUTES_FIELD_NUMBER: _ClassVar[int]
    name: str
    hostname: str
    port: int
    protocol: str
    tls: GatewayTLSConfig
    allowed_routes: AllowedRoutes
    def __init__(self, name: _Optional[str] = ..., hostname: _Optional[str] = ..., port: _Optional[int] = ..., protocol: _Optional[str] = ..., tls: _Optional[_Union[GatewayTLSConfig, _Mapping]] = ..., allowed_routes: _Optional[_Union[AllowedRoutes, _Mapping]] = ...) -> None: ...

class GatewayTLSConfig(_message.Message):
    __slots__ = ("mode", "certificate_refs", "frontend_validation", "options")
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MODE_FIELD_NUMBER: _ClassVar[int]
    CERTIFICATE_REFS_FIELD_NUMBER: _ClassVar[int]
    FRONTEND_VALIDATION_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    mode: str
    certificate_refs: _containers.RepeatedCompositeFieldContainer[_shared_pb2.SecretObjectReference]
    frontend_validation: FrontendTLSValidation
    options: _containers.ScalarMap[str, str]
    def __init__(self, mode: _Optional[str] = ..., certificate_refs: _Optional[_Iterable[_Union[_shared_pb2.SecretObjectReference, _Mapping]]] = ..., frontend_validation: _Optional[_Union[FrontendTLSValidation, _Mapping]] = ..., options: _Optional[_Mapping[str, str]] = ...) -> None: ...

class FrontendTLSValidation(_message.Message):
    __slots__ = ("ca_certificate_refs",)
    CA_CERTIFICATE_REFS_FIELD_NUMBER: _ClassVar[int]
    ca_certificate_refs: _containers.RepeatedCompositeFieldContainer[ObjectReference]
    def __init__(self, ca_certificate_refs: _Optional[_Iterable[_Union[ObjectReference, _Mapping]]] = ...) -> None: ...

class ObjectReference(_message.Message):
    __slots__ = ("group", "kind", "name", "namespace")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    group: str
    kind: str
    name: str
    namespace: str
    def __init__(self, group: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class AllowedRoutes(_message.Message):
    __slots__ = ("namespaces", "kinds")
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    namespaces: RouteNamespaces
    kinds: _containers.RepeatedCompositeFieldContainer[RouteGroupKind]
    def __init__(self, namespaces: _Optional[_Union[RouteNamespaces, _Mapping]] = ..., kinds: _Optional[_Iterable[_Union[RouteGroupKind, _Mapping]]] = ...) -> None: ...

class RouteNamespaces(_message.Message):
    __slots__ = ("selector",)
    FROM_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    selector: _shared_pb2.LabelSelector
    def __init__(self, selector: _Optional[_Union[_shared_pb2.LabelSelector, _Mapping]] = ..., **kwargs) -> None: ...

class RouteGroupKind(_message.Message):
    __slots__ = ("group", "kind")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    group: str
    kind: str
    def __init__(self, group: _Optional[str] = ..., kind: _Optional[str] = ...) -> None: ...
