from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReferenceGrant(_message.Message):
    __slots__ = ("to",)
    FROM_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    to: _containers.RepeatedCompositeFieldContainer[ReferenceGrantTo]
    def __init__(self, to: _Optional[_Iterable[_Union[ReferenceGrantTo, _Mapping]]] = ..., **kwargs) -> None: ...

class ReferenceGrantFrom(_message.Message):
    __slots__ = ("group", "kind", "namespace")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    group: str
    kind: str
    namespace: str
    def __init__(self, group: _Optional[str] = ..., kind: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class ReferenceGrantTo(_message.Message):
    __slots__ = ("group", "kind", "name")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    group: str
    kind: str
    name: str
    def __init__(self, group: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...
