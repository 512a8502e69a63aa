from google.protobuf import wrappers_pb2 as _wrappers_pb2
from pilothouse.api.istio.networking.v1beta1 import proxy_config_pb2 as _proxy_config_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProxyConfig(_message.Message):
    __slots__ = ("proxy_admin_port", "concurrency", "proxy_metadata", "image")
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
    proxy_admin_port: int
    concurrency: _wrappers_pb2.Int32Value
    proxy_metadata: _containers.ScalarMap[str, str]
    image: _proxy_config_pb2.ProxyImage
    def __init__(self, proxy_admin_port: _Optional[int] = ..., concurrency: _Optional[_Union[_wrappers_pb2.Int32Value, _Mapping]] = ..., proxy_metadata: _Optional[_Mapping[str, str]] = ..., image: _Optional[_Union[_proxy_config_pb2.ProxyImage, _Mapping]] = ...) -> None: ...
