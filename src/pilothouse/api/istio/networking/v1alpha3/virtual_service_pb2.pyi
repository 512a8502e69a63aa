import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import wrappers_pb2 as _wrappers_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VirtualService(_message.Message):
    __slots__ = ("hosts", "gateways", "http", "tls", "tcp", "export_to")
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    GATEWAYS_FIELD_NUMBER: _ClassVar[int]
    HTTP_FIELD_NUMBER: _ClassVar[int]
    TLS_FIELD_NUMBER: _ClassVar[int]
    TCP_FIELD_NUMBER: _ClassVar[int]
    EXPORT_TO_FIELD_NUMBER: _ClassVar[int]
    hosts: _containers.RepeatedScalarFieldContainer[str]
    gateways: _containers.RepeatedScalarFieldContainer[str]
    http: _containers.RepeatedCompositeFieldContainer[HTTPRoute]
    tls: _containers.RepeatedCompositeFieldContainer[TLSRoute]
    tcp: _containers.RepeatedCompositeFieldContainer[TCPRoute]
    export_to: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, hosts: _Optional[_Iterable[str]] = ..., gateways: _Optional[_Iterable[str]] = ..., http: _Optional[_Iterable[_Union[HTTPRoute, _Mapping]]] = ..., tls: _Optional[_Iterable[_Union[TLSRoute, _Mapping]]] = ..., tcp: _Optional[_Iterable[_Union[TCPRoute, _Mapping]]] = ..., export_to: _Optional[_Iterable[str]] = ...) -> None: ...

class Destination(_message.Message):
    __slots__ = ("host", "subset", "port")
    HOST_FIELD_NUMBER: _ClassVar[int]
    SUBSET_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    host: str
    subset: str
    port: PortSelector
    def __init__(self, host: _Optional[str] = ..., subset: _Optional[str] = ..., port: _Optional[_Union[PortSelector, _Mapping]] = ...) -> None: ...

class HTTPRoute(_message.Message):
    __slots__ = ("name", "match", "route", "redirect", "direct_response", "delegate", "rewrite", "timeout", "retries", "fault", "mirror", "mirrors", "mirror_percent", "mirror_percentage", "cors_policy", "headers")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    REDIRECT_FIELD_NUMBER: _ClassVar[int]
    DIRECT_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    DELEGATE_FIELD_NUMBER: _ClassVar[int]
    REWRITE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    RETRIES_FIELD_NUMBER: _ClassVar[int]
    FAULT_FIELD_NUMBER: _ClassVar[int]
    MIRROR_FIELD_NUMBER: _ClassVar[int]
    MIRRORS_FIELD_NUMBER: _ClassVar[int]
    MIRROR_PERCENT_FIELD_NUMBER: _ClassVar[int]
    MIRROR_PERCENTAGE_FIELD_NUMBER: _ClassVar[int]
    CORS_POLICY_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    match: _containers.RepeatedCompositeFieldContainer[HTTPMatchRequest]
    route: _containers.RepeatedCompositeFieldContainer[HTTPRouteDestination]
    redirect: HTTPRedirect
    direct_response: HTTPDirectResponse
    delegate: Delegate
    rewrite: HTTPRewrite
    timeout: _duration_pb2.Duration
    retries: HTTPRetry
    fault: HTTPFaultInjection
    mirror: Destination
    mirrors: _containers.RepeatedCompositeFieldContainer[HTTPMirrorPolicy]
    mirror_percent: _wrappers_pb2.UInt32Value
    mirror_percentage: Percent
    cors_policy: CorsPolicy
    headers: Headers
    def __init__(self, name: _Optional[str] = ..., match: _Optional[_Iterable[_Union[HTTPMatchRequest, _Mapping]]] = ..., route: _Optional[_Iterable[_Union[HTTPRouteDestination, _Mapping]]] = ..., redirect: _Optional[_Union[HTTPRedirect, _Mapping]] = ..., direct_response: _Optional[_Union[HTTPDirectResponse, _Mapping]] = ..., delegate: _Optional[_Union[Delegate, _Mapping]] = ..., rewrite: _Optional[_Union[HTTPRewrite, _Mapping]] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., retries: _Optional[_Union[HTTPRetry, _Mapping]] = ..., fault: _Optional[_Union[HTTPFaultInjection, _Mapping]] = ..., mirror: _Optional[_Union[Destination, _Mapping]] = ..., mirrors: _Optional[_Iterable[_Union[HTTPMirrorPolicy, _Mapping]]] = ..., mirror_percent: _Optional[_Union[_wrappers_pb2.UInt32Value, _Mapping]] = ..., mirror_percentage: _Optional[_Union[Percent, _Mapping]] = ..., cors_policy: _Optional[_Union[CorsPolicy, _Mapping]] = ..., headers: _Optional[_Union[Headers, _Mapping]] = ...) -> None: ...

class Delegate(_message.Message):
    __slots__ = ("name", "namespace")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class Headers(_message.Message):
    __slots__ = ("request", "response")
    class HeaderOperations(_message.Message):
        __slots__ = ("set", "add", "remove")
        class SetEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: str
            def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
        class AddEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: str
            def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
        SET_FIELD_NUMBER: _ClassVar[int]
        ADD_FIELD_NUMBER: _ClassVar[int]
        REMOVE_FIELD_NUMBER: _ClassVar[int]
        set: _containers.ScalarMap[str, str]
        add: _containers.ScalarMap[str, str]
        remove: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, set: _Optional[_Mapping[str, str]] = ..., add: _Optional[_Mapping[str, str]] = ..., remove: _Optional[_Iterable[str]] = ...) -> None: ...
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    request: Headers.HeaderOperations
    response: Headers.HeaderOperations
    def __init__(self, request: _Optional[_Union[Headers.HeaderOperations, _Mapping]] = ..., response: _Optional[_Union[Headers.HeaderOperations, _Mapping]] = ...) -> None: ...

class TLSRoute(_message.Message):
    __slots__ = ("match", "route")
    MATCH_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    match: _containers.RepeatedCompositeFieldContainer[TLSMatchAttributes]
    route: _containers.RepeatedCompositeFieldContainer[RouteDestination]
    def __init__(self, match: _Optional[_Iterable[_Union[TLSMatchAttributes, _Mapping]]] = ..., route: _Optional[_Iterable[_Union[RouteDestination, _Mapping]]] = ...) -> None: ...

class TCPRoute(_message.Message):
    __slots__ = ("match", "route")
    MATCH_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    match: _containers.RepeatedCompositeFieldContainer[L4MatchAttributes]
    route: _containers.RepeatedCompositeFieldContainer[RouteDestination]
    def __init__(self, match: _Optional[_Iterable[_Union[L4MatchAttributes, _Mapping]]] = ..., route: _Optional[_Iterable[_Union[RouteDestination, _Mapping]]] = ...) -> None: ...

class HTTPMatchRequest(_message.Message):
    __slots__ = ("name", "uri", "scheme", "method", "authority", "headers", "port", "source_labels", "gateways", "query_params", "ignore_uri_case", "without_headers", "source_namespace", "stat_prefix")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: StringMatch
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[StringMatch, _Mapping]] = ...) -> None: ...
    class SourceLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class QueryParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: StringMatch
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[StringMatch, _Mapping]] = ...) -> None: ...
    class WithoutHeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: StringMatch
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[StringMatch, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    SCHEME_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    AUTHORITY_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_LABELS_FIELD_NUMBER: _ClassVar[int]
    GATEWAYS_FIELD_NUMBER: _ClassVar[int]
    QUERY_PARAMS_FIELD_NUMBER: _ClassVar[int]
    IGNORE_URI_CASE_FIELD_NUMBER: _ClassVar[int]
    WITHOUT_HEADERS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    STAT_PREFIX_FIELD_NUMBER: _ClassVar[int]
    name: str
    uri: StringMatch
    scheme: StringMatch
    method: StringMatch
    authority: StringMatch
    headers: _containers.MessageMap[str, StringMatch]
    port: int
    source_labels: _containers.ScalarMap[str, str]
    gateways: _containers.RepeatedScalarFieldContainer[str]
    query_params: _containers.MessageMap[str, StringMatch]
    ignore_uri_case: bool
    without_headers: _containers.MessageMap[str, StringMatch]
    source_namespace: str
    stat_prefix: str
    def __init__(self, name: _Optional[str] = ..., uri: _Optional[_Union[StringMatch, _Mapping]] = ..., scheme: _Optional[_Union[StringMatch, _Mapping]] = ..., method: _Optional[_Union[StringMatch, _Mapping]] = ..., authority: _Optional[_Union[StringMatch, _Mapping]] = ..., headers: _Optional[_Mapping[str, StringMatch]] = ..., port: _Optional[int] = ..., source_labels: _Optional[_Mapping[str, str]] = ..., gateways: _Optional[_Iterable[str]] = ..., query_params: _Optional[_Mapping[str, StringMatch]] = ..., ignore_uri_case: _Optional[bool] = ..., without_headers: _Optional[_Mapping[str, StringMatch]] = ..., source_namespace: _Optional[str] = ..., stat_prefix: _Optional[str] = ...) -> None: ...

class HTTPRouteDestination(_message.Message):
    __slots__ = ("destination", "weight", "headers")
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    destination: Destination
    weight: int
    headers: Headers
    def __init__(self, destination: _Optional[_Union[Destination, _Mapping]] = ..., weight: _Optional[int] = ..., headers: _Optional[_Union[Headers, _Mapping]] = ...) -> None: ...

class RouteDestination(_message.Message):
    __slots__ = ("destination", "weight")
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    destination: Destination
    weight: int
    def __init__(self, destination: _Optional[_Union[Destination, _Mapping]] = ..., weight: _Optional[int] = ...) -> None: ...

class L4MatchAttributes(_message.Message):
    __slots__ = ("destination_subnets", "port", "source_subnet", "source_labels", "gateways", "source_namespace")
    class SourceLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    DESTINATION_SUBNETS_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SUBNET_FIELD_NUMBER: _ClassVar[int]
    SOURCE_LABELS_FIELD_NUMBER: _ClassVar[int]
    GATEWAYS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    destination_subnets: _containers.RepeatedScalarFieldContainer[str]
    port: int
    source_subnet: str
    source_labels: _containers.ScalarMap[str, str]
    gateways: _containers.RepeatedScalarFieldContainer[str]
    source_namespace: str
    def __init__(self, destination_subnets: _Optional[_Iterable[str]] = ..., port: _Optional[int] = ..., source_subnet: _Optional[str] = ..., source_labels: _Optional[_Mapping[str, str]] = ..., gateways: _Optional[_Iterable[str]] = ..., source_namespace: _Optional[str] = ...) -> None: ...

class TLSMatchAttributes(_message.Message):
    __slots__ = ("sni_hosts", "destination_subnets", "port", "source_labels", "gateways", "source_namespace")
    class SourceLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SNI_HOSTS_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_SUBNETS_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_LABELS_FIELD_NUMBER: _ClassVar[int]
    GATEWAYS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    sni_hosts: _containers.RepeatedScalarFieldContainer[str]
    destination_subnets: _containers.RepeatedScalarFieldContainer[str]
    port: int
    source_labels: _containers.ScalarMap[str, str]
    gateways: _containers.RepeatedScalarFieldContainer[str]
    source_namespace: str
    def __init__(self, sni_hosts: _Optional[_Iterable[str]] = ..., destination_subnets: _Optional[_Iterable[str]] = ..., port: _Optional[int] = ..., source_labels: _Optional[_Mapping[str, str]] = ..., gateways: _Optional[_Iterable[str]] = ..., source_namespace: _Optional[str] = ...) -> None: ...

class HTTPRedirect(_message.Message):
    __slots__ = ("uri", "authority", "port", "derive_port", "scheme", "redirect_code", "prefix_rewrite")
    class RedirectPortSelection(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        FROM_PROTOCOL_DEFAULT: _ClassVar[HTTPRedirect.RedirectPortSelection]
        FROM_REQUEST_PORT: _ClassVar[HTTPRedirect.RedirectPortSelection]
    FROM_PROTOCOL_DEFAULT: HTTPRedirect.RedirectPortSelection
    FROM_REQUEST_PORT: HTTPRedirect.RedirectPortSelection
    URI_FIELD_NUMBER: _ClassVar[int]
    AUTHORITY_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    DERIVE_PORT_FIELD_NUMBER: _ClassVar[int]
    SCHEME_FIELD_NUMBER: _ClassVar[int]
    REDIRECT_CODE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_REWRITE_FIELD_NUMBER: _ClassVar[int]
    uri: str
    authority: str
    port: int
    derive_port: HTTPRedirect.RedirectPortSelection
    scheme: str
    redirect_code: int
    prefix_rewrite: str
    def __init__(self, uri: _Optional[str] = ..., authority: _Optional[str] = ..., port: _Optional[int] = ..., derive_port: _Optional[_Union[HTTPRedirect.RedirectPortSelection, str]] = ..., scheme: _Optional[str] = ..., redirect_code: _Optional[int] = ..., prefix_rewrite: _Optional[str] = ...) -> None: ...

class HTTPDirectResponse(_message.Message):
    __slots__ = ("status", "body")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    status: int
    body: HTTPBody
    def __init__(self, status: _Optional[int] = ..., body: _Optional[_Union[HTTPBody, _Mapping]] = ...) -> None: ...

class HTTPBody(_message.Message):
    __slots__ = ("string", "bytes")
    STRING_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    string: str
    bytes: bytes
    def __init__(self, string: _Optional[str] = ..., bytes: _Optional[bytes] = ...) -> None: ...

class HTTPRewrite(_message.Message):
    __slots__ = ("uri", "authority", "uri_regex_rewrite")
    URI_FIELD_NUMBER: _ClassVar[int]
    AUTHORITY_FIELD_NUMBER: _ClassVar[int]
    URI_REGEX_REWRITE_FIELD_NUMBER: _ClassVar[int]
    uri: str
    authority: str
    uri_regex_rewrite: RegexRewrite
    def __init__(self, uri: _Optional[str] = ..., authority: _Optional[str] = ..., uri_regex_rewrite: _Optional[_Union[RegexRewrite, _Mapping]] = ...) -> None: ...

class RegexRewrite(_message.Message):
    __slots__ = ("match", "rewrite")
    MATCH_FIELD_NUMBER: _ClassVar[int]
    REWRITE_FIELD_NUMBER: _ClassVar[int]
    match: str
    rewrite: str
    def __init__(self, match: _Optional[str] = ..., rewrite: _Optional[str] = ...) -> None: ...

class StringMatch(_message.Message):
    __slots__ = ("exact", "prefix", "regex")
    EXACT_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    REGEX_FIELD_NUMBER: _ClassVar[int]
    exact: str
    prefix: str
    regex: str
    def __init__(self, exact: _Optional[str] = ..., prefix: _Optional[str] = ..., regex: _Optional[str] = ...) -> None: ...

class HTTPRetry(_message.Message):
    __slots__ = ("attempts", "per_try_timeout", "retry_on", "retry_remote_localities", "retry_ignore_previous_hosts", "backoff")
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    PER_TRY_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    RETRY_ON_FIELD_NUMBER: _ClassVar[int]
    RETRY_REMOTE_LOCALITIES_FIELD_NUMBER: _ClassVar[int]
    RETRY_IGNORE_PREVIOUS_HOSTS_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_FIELD_NUMBER: _ClassVar[int]
    attempts: int
    per_try_timeout: _duration_pb2.Duration
    retry_on: str
    retry_remote_localities: _wrappers_pb2.BoolValue
    retry_ignore_previous_hosts: _wrappers_pb2.BoolValue
    backoff: _duration_pb2.Duration
    def __init__(self, attempts: _Optional[int] = ..., per_try_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., retry_on: _Optional[str] = ..., retry_remote_localities: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ..., retry_ignore_previous_hosts: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ..., backoff: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class CorsPolicy(_message.Message):
    __slots__ = ("allow_origin", "allow_origins", "allow_methods", "allow_headers", "expose_headers", "max_age", "allow_credentials", "unmatched_preflights")
    class UnmatchedPreflights(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNSPECIFIED: _ClassVar[CorsPolicy.UnmatchedPreflights]
        FORWARD: _ClassVar[CorsPolicy.UnmatchedPreflights]
        IGNORE: _ClassVar[CorsPolicy.UnmatchedPreflights]
    UNSPECIFIED: CorsPolicy.UnmatchedPreflights
    FORWARD: CorsPolicy.UnmatchedPreflights
    IGNORE: CorsPolicy.UnmatchedPreflights
    ALLOW_ORIGIN_FIELD_NUMBER: _ClassVar[int]
    ALLOW_ORIGINS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_METHODS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_HEADERS_FIELD_NUMBER: _ClassVar[int]
    EXPOSE_HEADERS_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_FIELD_NUMBER: _ClassVar[int]
    ALLOW_CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    UNMATCHED_PREFLIGHTS_FIELD_NUMBER: _ClassVar[int]
    allow_origin: _containers.RepeatedScalarFieldContainer[str]
    allow_origins: _containers.RepeatedCompositeFieldContainer[StringMatch]
    allow_methods: _containers.RepeatedScalarFieldContainer[str]
    allow_headers: _containers.RepeatedScalarFieldContainer[str]
    expose_headers: _containers.RepeatedScalarFieldContainer[str]
    max_age: _duration_pb2.Duration
    allow_credentials: _wrappers_pb2.BoolValue
    unmatched_preflights: CorsPolicy.UnmatchedPreflights
    def __init__(self, allow_origin: _Optional[_Iterable[str]] = ..., allow_origins: _Optional[_Iterable[_Union[StringMatch, _Mapping]]] = ..., allow_methods: _Optional[_Iterable[str]] = ..., allow_headers: _Optional[_Iterable[str]] = ..., expose_headers: _Optional[_Iterable[str]] = ..., max_age: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., allow_credentials: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ..., unmatched_preflights: _Optional[_Union[CorsPolicy.UnmatchedPreflights, str]] = ...) -> None: ...

class HTTPFaultInjection(_message.Message):
    __slots__ = ("delay", "abort")
    class Delay(_message.Message):
        __slots__ = ("percent", "fixed_delay", "exponential_delay", "percentage")
        PERCENT_FIELD_NUMBER: _ClassVar[int]
        FIXED_DELAY_FIELD_NUMBER: _ClassVar[int]
        EXPONENTIAL_DELAY_FIELD_NUMBER: _ClassVar[int]
        PERCENTAGE_FIELD_NUMBER: _ClassVar[int]
        percent: int
        fixed_delay: _duration_pb2.Duration
        exponential_delay: _duration_pb2.Duration
        percentage: Percent
        def __init__(self, percent: _Optional[int] = ..., fixed_delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., exponential_delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., percentage: _Optional[_Union[Percent, _Mapping]] = ...) -> None: ...
    class Abort(_message.Message):
        __slots__ = ("http_status", "grpc_status", "http2_error", "percentage")
        HTTP_STATUS_FIELD_NUMBER: _ClassVar[int]
        GRPC_STATUS_FIELD_NUMBER: _ClassVar[int]
        HTTP2_ERROR_FIELD_NUMBER: _ClassVar[int]
        PERCENTAGE_FIELD_NUMBER: _ClassVar[int]
        http_status: int
        grpc_status: str
        http2_error: str
        percentage: Percent
        def __init__(self, http_status: _Optional[int] = ..., grpc_status: _Optional[str] = ..., http2_error: _Optional[str] = ..., percentage: _Optional[_Union[Percent, _Mapping]] = ...) -> None: ...
    DELAY_FIELD_NUMBER: _ClassVar[int]
    ABORT_FIELD_NUMBER: _ClassVar[int]
    delay: HTTPFaultInjection.Delay
    abort: HTTPFaultInjection.Abort
    def __init__(self, delay: _Optional[_Union[HTTPFaultInjection.Delay, _Mapping]] = ..., abort: _Optional[_Union[HTTPFaultInjection.Abort, _Mapping]] = ...) -> None: ...

class HTTPMirrorPolicy(_message.Message):
    __slots__ = ("destination", "percentage")
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    PERCENTAGE_FIELD_NUMBER: _ClassVar[int]
    destination: Destination
    percentage: Percent
    def __init__(self, destination: _Optional[_Union[Destination, _Mapping]] = ..., percentage: _Optional[_Union[Percent, _Mapping]] = ...) -> None: ...

class PortSelector(_message.Message):
    __slots__ = ("number",)
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    number: int
    def __init__(self, number: _Optional[int] = ...) -> None: ...

class Percent(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: float
    def __init__(self, value: _Optional[float] = ...) -> None: ...
