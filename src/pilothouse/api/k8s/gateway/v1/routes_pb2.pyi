from pilothouse.api.k8s.gateway.v1 import shared_pb2 as _shared_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class HTTPRoute(_message.Message):
    __slots__ = ("parent_refs", "hostnames", "rules")
    PARENT_REFS_FIELD_NUMBER: _ClassVar[int]
    HOSTNAMES_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    parent_refs: _containers.RepeatedCompositeFieldContainer[_shared_pb2.ParentReference]
    hostnames: _containers.RepeatedScalarFieldContainer[str]
    rules: _containers.RepeatedCompositeFieldContainer[HTTPRouteRule]
    def __init__(self, parent_refs: _Optional[_Iterable[_Union[_shared_pb2.ParentReference, _Mapping]]] = ..., hostnames: _Optional[_Iterable[str]] = ..., rules: _Optional[_Iterable[_Union[HTTPRouteRule, _Mapping]]] = ...) -> None: ...

class HTTPRouteRule(_message.Message):
    __slots__ = ("name", "matches", "filters", "backend_refs", "timeouts", "retry")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    BACKEND_REFS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    name: str
    matches: _containers.RepeatedCompositeFieldContainer[HTTPRouteMatch]
    filters: _containers.RepeatedCompositeFieldContainer[HTTPRouteFilter]
    backend_refs: _containers.RepeatedCompositeFieldContainer[HTTPBackendRef]
    timeouts: HTTPRouteTimeouts
    retry: HTTPRouteRetry
    def __init__(self, name: _Optional[str] = ..., matches: _Optional[_Iterable[_Union[HTTPRouteMatch, _Mapping]]] = ..., filters: _Optional[_Iterable[_Union[HTTPRouteFilter, _Mapping]]] = ..., backend_refs: _Optional[_Iterable[_Union[HTTPBackendRef, _Mapping]]] = ..., timeouts: _Optional[_Union[HTTPRouteTimeouts, _Mapping]] = ..., retry: _Optional[_Union[HTTPRouteRetry, _Mapping]] = ...) -> None: ...

class HTTPRouteMatch(_message.Message):
    __slots__ = ("path", "headers", "query_params", "method")
    PATH_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    QUERY_PARAMS_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    path: HTTPPathMatch
    headers: _containers.RepeatedCompositeFieldContainer[HTTPHeaderMatch]
    query_params: _containers.RepeatedCompositeFieldContainer[HTTPQueryParamMatch]
    method: str
    def __init__(self, path: _Optional[_Union[HTTPPathMatch, _Mapping]] = ..., headers: _Optional[_Iterable[_Union[HTTPHeaderMatch, _Mapping]]] = ..., query_params: _Optional[_Iterable[_Union[HTTPQueryParamMatch, _Mapping]]] = ..., method: _Optional[str] = ...) -> None: ...

class HTTPPathMatch(_message.Message):
    __slots__ = ("type", "value")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    type: str
    value: str
    def __init__(self, type: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class HTTPHeaderMatch(_message.Message):
    __slots__ = ("type", "name", "value")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    type: str
    name: str
    value: str
    def __init__(self, type: _Optional[str] = ..., name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class HTTPQueryParamMatch(_message.Message):
    __slots__ = ("type", "name", "value")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    type: str
    name: str
    value: str
    def __init__(self, type: _Optional[str] = ..., name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class HTTPRouteFilter(_message.Message):
    __slots__ = ("type", "request_header_modifier", "response_header_modifier", "request_mirror", "request_redirect", "url_rewrite", "extension_ref", "cors")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_HEADER_MODIFIER_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_HEADER_MODIFIER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_MIRROR_FIELD_NUMBER: _ClassVar[int]
    REQUEST_REDIRECT_FIELD_NUMBER: _ClassVar[int]
    URL_REWRITE_FIELD_NUMBER: _ClassVar[int]
    EXTENSION_REF_FIELD_NUMBER: _ClassVar[int]
    CORS_FIELD_NUMBER: _ClassVar[int]
    type: str
    request_header_modifier: _shared_pb2.HTTPHeaderFilter
    response_header_modifier: _shared_pb2.HTTPHeaderFilter
    request_mirror: _shared_pb2.HTTPRequestMirrorFilter
    request_redirect: _shared_pb2.HTTPRequestRedirectFilter
    url_rewrite: _shared_pb2.HTTPURLRewriteFilter
    extension_ref: _shared_pb2.LocalObjectReference
    cors: _shared_pb2.HTTPCORSFilter
    def __init__(self, type: _Optional[str] = ..., request_header_modifier: _Optional[_Union[_shared_pb2.HTTPHeaderFilter, _Mapping]] = ..., response_header_modifier: _Optional[_Union[_shared_pb2.HTTPHeaderFilter, _Mapping]] = ..., request_mirror: _Optional[_Union[_shared_pb2.HTTPRequestMirrorFilter, _Mapping]] = ..., request_redirect: _Optional[_Union[_shared_pb2.HTTPRequestRedirectFilter, _Mapping]] = ..., url_rewrite: _Optional[_Union[_shared_pb2.HTTPURLRewriteFilter, _Mapping]] = ..., extension_ref: _Optional[_Union[_shared_pb2.LocalObjectReference, _Mapping]] = ..., cors: _Optional[_Union[_shared_pb2.HTTPCORSFilter, _Mapping]] = ...) -> None: ...

class HTTPBackendRef(_message.Message):
    __slots__ = ("group", "kind", "name", "namespace", "port", "weight", "filters")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    group: str
    kind: str
    name: str
    namespace: str
    port: int
    weight: int
    filters: _containers.RepeatedCompositeFieldContainer[HTTPRouteFilter]
    def __init__(self, group: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., namespace: _Optional[str] = ..., port: _Optional[int] = ..., weight: _Optional[int] = ..., filters: _Optional[_Iterable[_Union[HTTPRouteFilter, _Mapping]]] = ...) -> None: ...

class HTTPRouteTimeouts(_message.Message):
    __slots__ = ("request", "backend_request")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    BACKEND_REQUEST_FIELD_NUMBER: _ClassVar[int]
    request: str
    backend_request: str
    def __init__(self, request: _Optional[str] = ..., backend_request: _Optional[str] = ...) -> None: ...

class HTTPRouteRetry(_message.Message):
    __slots__ = ("codes", "attempts", "backoff")
    CODES_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_FIELD_NUMBER: _ClassVar[int]
    codes: _containers.RepeatedScalarFieldContainer[int]
    attempts: int
    backoff: str
    def __init__(self, codes: _Optional[_Iterable[int]] = ..., attempts: _Optional[int] = ..., backoff: _Optional[str] = ...) -> None: ...

class GRPCRoute(_message.Message):
    __slots__ = ("parent_refs", "hostnames", "rules")
    PARENT_REFS_FIELD_NUMBER: _ClassVar[int]
    HOSTNAMES_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    parent_refs: _containers.RepeatedCompositeFieldContainer[_shared_pb2.ParentReference]
    hostnames: _containers.RepeatedScalarFieldContainer[str]
    rules: _containers.RepeatedCompositeFieldContainer[GRPCRouteRule]
    def __init__(self, parent_refs: _Optional[_Iterable[_Union[_shared_pb2.ParentReference, _Mapping]]] = ..., hostnames: _Optional[_Iterable[str]] = ..., rules: _Optional[_Iterable[_Union[GRPCRouteRule, _Mapping]]] = ...) -> None: ...

class GRPCRouteRule(_message.Message):
    __slots__ = ("name", "matches", "filters", "backend_refs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    BACKEND_REFS_FIELD_NUMBER: _ClassVar[int]
    name: str
    matches: _containers.RepeatedCompositeFieldContainer[GRPCRouteMatch]
    filters: _containers.RepeatedCompositeFieldContainer[GRPCRouteFilter]
    backend_refs: _containers.RepeatedCompositeFieldContainer[GRPCBackendRef]
    def __init__(self, name: _Optional[str] = ..., matches: _Optional[_Iterable[_Union[GRPCRouteMatch, _Mapping]]] = ..., filters: _Optional[_Iterable[_Union[GRPCRouteFilter, _Mapping]]] = ..., backend_refs: _Optional[_Iterable[_Union[GRPCBackendRef, _Mapping]]] = ...) -> None: ...

class GRPCRouteMatch(_message.Message):
    __slots__ = ("method", "headers")
    METHOD_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    method: GRPCMethodMatch
    headers: _containers.RepeatedCompositeFieldContainer[GRPCHeaderMatch]
    def __init__(self, method: _Optional[_Union[GRPCMethodMatch, _Mapping]] = ..., headers: _Optional[_Iterable[_Union[GRPCHeaderMatch, _Mapping]]] = ...) -> None: ...

class GRPCMethodMatch(_message.Message):
    __slots__ = ("type", "service", "method")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    type: str
    service: str
    method: str
    def __init__(self, type: _Optional[str] = ..., service: _Optional[str] = ..., method: _Optional[str] = ...) -> None: ...

class GRPCHeaderMatch(_message.Message):
    __slots__ = ("type", "name", "value")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    type: str
    name: str
    value: str
    def __init__(self, type: _Optional[str] = ..., name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class GRPCRouteFilter(_message.Message):
    __slots__ = ("type", "request_header_modifier", "response_header_modifier", "request_mirror", "extension_ref")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_HEADER_MODIFIER_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_HEADER_MODIFIER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_MIRROR_FIELD_NUMBER: _ClassVar[int]
    EXTENSION_REF_FIELD_NUMBER: _ClassVar[int]
    type: str
    request_header_modifier: _shared_pb2.HTTPHeaderFilter
    response_header_modifier: _shared_pb2.HTTPHeaderFilter
    request_mirror: _shared_pb2.HTTPRequestMirrorFilter
    extension_ref: _shared_pb2.LocalObjectReference
    def __init__(self, type: _Optional[str] = ..., request_header_modifier: _Optional[_Union[_shared_pb2.HTTPHeaderFilter, _Mapping]] = ..., response_header_modifier: _Optional[_Union[_shared_pb2.HTTPHeaderFilter, _Mapping]] = ..., request_mirror: _Optional[_Union[_shared_pb2.HTTPRequestMirrorFilter, _Mapping]] = ..., extension_ref: _Optional[_Union[_shared_pb2.LocalObjectReference, _Mapping]] = ...) -> None: ...

class GRPCBackendRef(_message.Message):
    __slots__ = ("group", "kind", "name", "namespace", "port", "weight", "filters")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    group: str
    kind: str
    name: str
    namespace: str
    port: int
    weight: int
    filters: _containers.RepeatedCompositeFieldContainer[GRPCRouteFilter]
    def __init__(self, group: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., namespace: _Optional[str] = ..., port: _Optional[int] = ..., weight: _Optional[int] = ..., filters: _Optional[_Iterable[_Union[GRPCRouteFilter, _Mapping]]] = ...) -> None: ...

class TCPRoute(_message.Message):
    __slots__ = ("parent_refs", "rules")
    PARENT_REFS_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    parent_refs: _containers.RepeatedCompositeFieldContainer[_shared_pb2.ParentReference]
    rules: _containers.RepeatedCompositeFieldContainer[L4RouteRule]
    def __init__(self, parent_refs: _Optional[_Iterable[_Union[_shared_pb2.ParentReference, _Mapping]]] = ..., rules: _Optional[_Iterable[_Union[L4RouteRule, _Mapping]]] = ...) -> None: ...

class TLSRoute(_message.Message):
    __slots__ = ("parent_refs", "hostnames", "rules")
    PARENT_REFS_FIELD_NUMBER: _ClassVar[int]
    HOSTNAMES_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    parent_refs: _containers.RepeatedCompositeFieldContainer[_shared_pb2.ParentReference]
    hostnames: _containers.RepeatedScalarFieldContainer[str]
    rules: _containers.RepeatedCompositeFieldContainer[L4RouteRule]
    def __init__(self, parent_refs: _Optional[_Iterable[_Union[_shared_pb2.ParentReference, _Mapping]]] = ..., hostnames: _Optional[_Iterable[str]] = ..., rules: _Optional[_Iterable[_Union[L4RouteRule, _Mapping]]] = ...) -> None: ...

class L4RouteRule(_message.Message):
    __slots__ = ("name", "backend_refs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BACKEND_REFS_FIELD_NUMBER: _ClassVar[int]
    name: str
    backend_refs: _containers.RepeatedCompositeFieldContainer[_shared_pb2.BackendRef]
    def __init__(self, name: _Optional[str] = ..., backend_refs: _Optional[_Iterable[_Union[_shared_pb2.BackendRef, _Mapping]]] = ...) -> None: ...
