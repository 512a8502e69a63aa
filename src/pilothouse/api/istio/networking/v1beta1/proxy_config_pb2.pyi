from google.protobuf import wrappers_pb2 as _wrappers_pb2
from pilothouse.api.istio.type.v1beta1 import selector_pb2 as _selector_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProxyConfig(_message.Message):
    __slots__ = ("selector", "concurrency", "environment_variables", "image")
    class EnvironmentVariablesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_VARIABLES_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    selector: _selector_pb2.WorkloadSelector
    concurrency: _wrappers_pb2.Int32Value
    environment_variables: _containers.ScalarMap[str, str]
    image: ProxyImage
    def __init__(self, selector: _Optional[_Union[_selector_pb2.WorkloadSelector, _Mapping]] = ..., concurrency: _Optional[_Union[_wrappers_pb2.Int32Value, _Mapping]] = ..., environment_variables: _Optional[_Mapping[str, str]] = ..., image: _Optional[_Union[ProxyImage, _Mapping]] = ...) -> None: ...

class ProxyImage(_message.Message):
    __slots__ = ("image_type",)
    IMAGE_TYPE_FIELD_NUMBER: _ClassVar[int]
    image_type: str
    def __init__(self, image_type: _Optional[str] = ...) -> None: ...
