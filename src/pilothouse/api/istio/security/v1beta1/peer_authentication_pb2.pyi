from pilothouse.api.istio.type.v1beta1 import selector_pb2 as _selector_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PeerAuthentication(_message.Message):
    __slots__ = ("selector", "mtls", "port_level_mtls")
    class MutualTLS(_message.Message):
        __slots__ = ("mode",)
        class Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            UNSET: _ClassVar[PeerAuthentication.MutualTLS.Mode]
            DISABLE: _ClassVar[PeerAuthentication.MutualTLS.Mode]
            PERMISSIVE: _ClassVar[PeerAuthentication.MutualTLS.Mode]
            STRICT: _ClassVar[PeerAuthentication.MutualTLS.Mode]
        UNSET: PeerAuthentication.MutualTLS.Mode
        DISABLE: PeerAuthentication.MutualTLS.Mode
        PERMISSIVE: PeerAuthentication.MutualTLS.Mode
        STRICT: PeerAuthentication.MutualTLS.Mode
        MODE_FIELD_NUMBER: _ClassVar[int]
        mode: PeerAuthentication.MutualTLS.Mode
        def __init__(self, mode: _Optional[_Union[PeerAuthentication.MutualTLS.Mode, str]] = ...) -> None: ...
    class PortLevelMtlsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: PeerAuthentication.MutualTLS
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[PeerAuthentication.MutualTLS, _Mapping]] = ...) -> None: ...
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    MTLS_FIELD_NUMBER: _ClassVar[int]
    PORT_LEVEL_MTLS_FIELD_NUMBER: _ClassVar[int]
    selector: _selector_pb2.WorkloadSelector
    mtls: PeerAuthentication.MutualTLS
    port_level_mtls: _containers.MessageMap[int, PeerAuthentication.MutualTLS]
    def __init__(self, selector: _Optional[_Union[_selector_pb2.WorkloadSelector, _Mapping]] = ..., mtls: _Optional[_Union[PeerAuthentication.MutualTLS, _Mapping]] = ..., port_level_mtls: _Optional[_Mapping[int, PeerAuthentication.MutualTLS]] = ...) -> None: ...
