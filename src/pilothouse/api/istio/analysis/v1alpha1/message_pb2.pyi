from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AnalysisMessageBase(_message.Message):
    __slots__ = ("type", "level", "documentation_url")
    class Level(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[AnalysisMessageBase.Level]
        ERROR: _ClassVar[AnalysisMessageBase.Level]
        WARNING: _ClassVar[AnalysisMessageBase.Level]
        INFO: _ClassVar[AnalysisMessageBase.Level]
    UNKNOWN: AnalysisMessageBase.Level
    ERROR: AnalysisMessageBase.Level
    WARNING: AnalysisMessageBase.Level
    INFO: AnalysisMessageBase.Level
    class Type(_message.Message):
        __slots__ = ("name", "code")
        NAME_FIELD_NUMBER: _ClassVar[int]
        CODE_FIELD_NUMBER: _ClassVar[int]
        name: str
        code: str
        def __init__(self, name: _Optional[str] = ..., code: _Optional[str] = ...) -> None: ...
    TYPE_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTATION_URL_FIELD_NUMBER: _ClassVar[int]
    type: AnalysisMessageBase.Type
    level: AnalysisMessageBase.Level
    documentation_url: str
    def __init__(self, type: _Optional[_Union[AnalysisMessageBase.Type, _Mapping]] = ..., level: _Optional[_Union[AnalysisMessageBase.Level, str]] = ..., documentation_url: _Optional[str] = ...) -> None: ...
