from google.rpc import status_pb2 as _status_pb2
from pilothouse.api.istio.mcp.v1alpha1 import resource_pb2 as _resource_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SinkNode(_message.Message):
    __slots__ = ("id", "annotations")
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    id: str
    annotations: _containers.ScalarMap[str, str]
    def __init__(self, id: _Optional[str] = ..., annotations: _Optional[_Mapping[str, str]] = ...) -> None: ...

class MeshConfigRequest(_message.Message):
    __slots__ = ("version_info", "sink_node", "type_url", "response_nonce", "error_detail")
    VERSION_INFO_FIELD_NUMBER: _ClassVar[int]
    SINK_NODE_FIELD_NUMBER: _ClassVar[int]
    TYPE_URL_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_NONCE_FIELD_NUMBER: _ClassVar[int]
    ERROR_DETAIL_FIELD_NUMBER: _ClassVar[int]
    version_info: str
    sink_node: SinkNode
    type_url: str
    response_nonce: str
    error_detail: _status_pb2.Status
    def __init__(self, version_info: _Optional[str] = ..., sink_node: _Optional[_Union[SinkNode, _Mapping]] = ..., type_url: _Optional[str] = ..., response_nonce: _Optional[str] = ..., error_detail: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class MeshConfigResponse(_message.Message):
    __slots__ = ("version_info", "resources", "type_url", "nonce")
    VERSION_INFO_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    TYPE_URL_FIELD_NUMBER: _ClassVar[int]
    NONCE_FIELD_NUMBER: _ClassVar[int]
    version_info: str
    resources: _containers.RepeatedCompositeFieldContainer[_resource_pb2.Resource]
    type_url: str
    nonce: str
    def __init__(self, version_info: _Optional[str] = ..., resources: _Optional[_Iterable[_Union[_resource_pb2.Resource, _Mapping]]] = ..., type_url: _Optional[str] = ..., nonce: _Optional[str] = ...) -> None: ...

class IncrementalMeshConfigRequest(_message.Message):
    __slots__ = ("sink_node", "type_url", "initial_resource_versions", "response_nonce", "error_detail")
    class InitialResourceVersionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SINK_NODE_FIELD_NUMBER: _ClassVar[int]
    TYPE_URL_FIELD_NUMBER: _ClassVar[int]
    INITIAL_RESOURCE_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_NONCE_FIELD_NUMBER: _ClassVar[int]
    ERROR_DETAIL_FIELD_NUMBER: _ClassVar[int]
    sink_node: SinkNode
    type_url: str
    initial_resource_versions: _containers.ScalarMap[str, str]
    response_nonce: str
    error_detail: _status_pb2.Status
    def __init__(self, sink_node: _Optional[_Union[SinkNode, _Mapping]] = ..., type_url: _Optional[str] = ..., initial_resource_versions: _Optional[_Mapping[str, str]] = ..., response_nonce: _Optional[str] = ..., error_detail: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class IncrementalMeshConfigResponse(_message.Message):
    __slots__ = ("system_version_info", "resources", "removed_resources", "nonce")
    SYSTEM_VERSION_INFO_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    REMOVED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    NONCE_FIELD_NUMBER: _ClassVar[int]
    system_version_info: str
    resources: _containers.RepeatedCompositeFieldContainer[_resource_pb2.Resource]
    removed_resources: _containers.RepeatedScalarFieldContainer[str]
    nonce: str
    def __init__(self, system_version_info: _Optional[str] = ..., resources: _Optional[_Iterable[_Union[_resource_pb2.Resource, _Mapping]]] = ..., removed_resources: _Optional[_Iterable[str]] = ..., nonce: _Optional[str] = ...) -> None: ...

class RequestResources(_message.Message):
    __slots__ = ("sink_node", "collection", "initial_resource_versions", "response_nonce", "error_detail", "incremental")
    class InitialResourceVersionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SINK_NODE_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    INITIAL_RESOURCE_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_NONCE_FIELD_NUMBER: _ClassVar[int]
    ERROR_DETAIL_FIELD_NUMBER: _ClassVar[int]
    INCREMENTAL_FIELD_NUMBER: _ClassVar[int]
    sink_node: SinkNode
    collection: str
    initial_resource_versions: _containers.ScalarMap[str, str]
    response_nonce: str
    error_detail: _status_pb2.Status
    incremental: bool
    def __init__(self, sink_node: _Optional[_Union[SinkNode, _Mapping]] = ..., collection: _Optional[str] = ..., initial_resource_versions: _Optional[_Mapping[str, str]] = ..., response_nonce: _Optional[str] = ..., error_detail: _Optional[_Union[_status_pb2.Status, _Mapping]] = ..., incremental: _Optional[bool] = ...) -> None: ...

class Resources(_message.Message):
    __slots__ = ("system_version_info", "collection", "resources", "removed_resources", "nonce", "incremental")
    SYSTEM_VERSION_INFO_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    REMOVED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    NONCE_FIELD_NUMBER: _ClassVar[int]
    INCREMENTAL_FIELD_NUMBER: _ClassVar[int]
    system_version_info: str
    collection: str
    resources: _containers.RepeatedCompositeFieldContainer[_resource_pb2.Resource]
    removed_resources: _containers.RepeatedScalarFieldContainer[str]
    nonce: str
    incremental: bool
    def __init__(self, system_version_info: _Optional[str] = ..., collection: _Optional[str] = ..., resources: _Optional[_Iterable[_Union[_resource_pb2.Resource, _Mapping]]] = ..., removed_resources: _Optional[_Iterable[str]] = ..., nonce: _Optional[str] = ..., incremental: _Optional[bool] = ...) -> None: ...
