from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ParentReference(_message.Message):
    __slots__ = ("group", "kind", "namespace", "name", "section_name", "port")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SECTION_NAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    group: str
    kind: str
    namespace: str
    name: str
    section_name: str
    port: int
    def __init__(self, group: _Optional[str] = ..., kind: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., section_name: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class BackendObjectReference(_message.Message):
    __slots__ = ("group", "kind", "name", "namespace", "port")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    group: str
    kind: str
    name: str
    namespace: str
    port: int
    def __init__(self, group: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., namespace: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class BackendRef(_message.Message):
    __slots__ = ("group", "kind", "name", "namespace", "port", "weight")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    group: str
    kind: str
    name: str
    namespace: str
    port: int
    weight: int
    def __init__(self, group: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., namespace: _Optional[str] = ..., port: _Optional[int] = ..., weight: _Optional[int] = ...) -> None: ...

class SecretObjectReference(_message.Message):
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

class LocalObjectReference(_message.Message):
    __slots__ = ("group", "kind", "name")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    group: str
    kind: str
    name: str
    def __init__(self, group: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class ParametersReference(_message.Message):
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

class HTTPHeader(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class HTTPHeaderFilter(_message.Message):
    __slots__ = ("set", "add", "remove")
    SET_FIELD_NUMBER: _ClassVar[int]
    ADD_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    set: _containers.RepeatedCompositeFieldContainer[HTTPHeader]
    add: _containers.RepeatedCompositeFieldContainer[HTTPHeader]
    remove: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, set: _Optional[_Iterable[_Union[HTTPHeader, _Mapping]]] = ..., add: _Optional[_Iterable[_Union[HTTPHeader, _Mapping]]] = ..., remove: _Optional[_Iterable[str]] = ...) -> None: ...

class HTTPPathModifier(_message.Message):
    __slots__ = ("type", "replace_full_path", "replace_prefix_match")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    REPLACE_FULL_PATH_FIELD_NUMBER: _ClassVar[int]
    REPLACE_PREFIX_MATCH_FIELD_NUMBER: _ClassVar[int]
    type: str
    replace_full_path: str
    replace_prefix_match: str
    def __init__(self, type: _Optional[str] = ..., replace_full_path: _Optional[str] = ..., replace_prefix_match: _Optional[str] = ...) -> None: ...

class HTTPRequestRedirectFilter(_message.Message):
    __slots__ = ("scheme", "hostname", "path", "port", "status_code")
    SCHEME_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    STATUS_CODE_FIELD_NUMBER: _ClassVar[int]
    scheme: str
    hostname: str
    path: HTTPPathModifier
    port: int
    status_code: int
    def __init__(self, scheme: _Optional[str] = ..., hostname: _Optional[str] = ..., path: _Optional[_Union[HTTPPathModifier, _Mapping]] = ..., port: _Optional[int] = ..., status_code: _Optional[int] = ...) -> None: ...

class HTTPURLRewriteFilter(_message.Message):
    __slots__ = ("hostname", "path")
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    hostname: str
    path: HTTPPathModifier
    def __init__(self, hostname: _Optional[str] = ..., path: _Optional[_Union[HTTPPathModifier, _Mapping]] = ...) -> None: ...

class Fraction(_message.Message):
    __slots__ = ("numerator", "denominator")
    NUMERATOR_FIELD_NUMBER: _ClassVar[int]
    DENOMINATOR_FIELD_NUMBER: _ClassVar[int]
    numerator: int
    denominator: int
    def __init__(self, numerator: _Optional[int] = ..., denominator: _Optional[int] = ...) -> None: ...

class HTTPRequestMirrorFilter(_message.Message):
    __slots__ = ("backend_ref", "percent", "fraction")
    BACKEND_REF_FIELD_NUMBER: _ClassVar[int]
    PERCENT_FIELD_NUMBER: _ClassVar[int]
    FRACTION_FIELD_NUMBER: _ClassVar[int]
    backend_ref: BackendObjectReference
    percent: int
    fraction: Fraction
    def __init__(self, backend_ref: _Optional[_Union[BackendObjectReference, _Mapping]] = ..., percent: _Optional[int] = ..., fraction: _Optional[_Union[Fraction, _Mapping]] = ...) -> None: ...

class HTTPCORSFilter(_message.Message):
    __slots__ = ("allow_origins", "allow_credentials", "allow_methods", "allow_headers", "expose_headers", "max_age")
    ALLOW_ORIGINS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_METHODS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_HEADERS_FIELD_NUMBER: _ClassVar[int]
    EXPOSE_HEADERS_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_FIELD_NUMBER: _ClassVar[int]
    allow_origins: _containers.RepeatedScalarFieldContainer[str]
    allow_credentials: bool
    allow_methods: _containers.RepeatedScalarFieldContainer[str]
    allow_headers: _containers.RepeatedScalarFieldContainer[str]
    expose_headers: _containers.RepeatedScalarFieldContainer[str]
    max_age: int
    def __init__(self, allow_origins: _Optional[_Iterable[str]] = ..., allow_credentials: _Optional[bool] = ..., allow_methods: _Optional[_Iterable[str]] = ..., allow_headers: _Optional[_Iterable[str]] = ..., expose_headers: _Optional[_Iterable[str]] = ..., max_age: _Optional[int] = ...) -> None: ...

class LabelSelector(_message.Message):
    __slots__ = ("match_labels", "match_expressions")
    class MatchLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MATCH_LABELS_FIELD_NUMBER: _ClassVar[int]
    MATCH_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    match_labels: _containers.ScalarMap[str, str]
    match_expressions: _containers.RepeatedCompositeFieldContainer[LabelSelectorRequirement]
    def __init__(self, match_labels: _Optional[_Mapping[str, str]] = ..., match_expressions: _Optional[_Iterable[_Union[LabelSelectorRequirement, _Mapping]]] = ...) -> None: ...

class LabelSelectorRequirement(_message.Message):
    __slots__ = ("key", "operator", "values")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...
