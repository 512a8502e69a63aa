from google.protobuf import any_pb2 as _any_pb2
from pilothouse.api.istio.mcp.v1alpha1 import metadata_pb2 as _metadata_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Resource(_message.Message):
    __slots__ = ("metadata", "body")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    metadata: _metadata_pb2.Metadata
    body: _any_pb2.Any
    def __init__(self, metadata: _Optional[_Union[_metadata_pb2.Metadata, _Mapping]] = ..., body: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...
