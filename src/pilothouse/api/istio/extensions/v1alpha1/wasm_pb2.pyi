from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import wrappers_pb2 as _wrappers_pb2
from pilothouse.api.istio.type.v1beta1 import selector_pb2 as _selector_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PluginType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNSPECIFIED_PLUGIN_TYPE: _ClassVar[PluginType]
    HTTP: _ClassVar[PluginType]
    NETWORK: _ClassVar[PluginType]

class PluginPhase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNSPECIFIED_PHASE: _ClassVar[PluginPhase]
    AUTHN: _ClassVar[PluginPhase]
    AUTHZ: _ClassVar[PluginPhase]
    STATS: _ClassVar[PluginPhase]

class PullPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNSPECIFIED_POLICY: _ClassVar[PullPolicy]
    IfNotPresent: _ClassVar[PullPolicy]
    Always: _ClassVar[PullPolicy]

class EnvValueSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INLINE: _ClassVar[EnvValueSource]
    HOST: _ClassVar[EnvValueSource]

class FailStrategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FAIL_CLOSE: _ClassVar[FailStrategy]
    FAIL_OPEN: _ClassVar[FailStrategy]
    FAIL_RELOAD: _ClassVar[FailStrategy]
UNSPECIFIED_PLUGIN_TYPE: PluginType
HTTP: PluginType
NETWORK: PluginType
UNSPECIFIED_PHASE: PluginPhase
AUTHN: PluginPhase
AUTHZ: PluginPhase
STATS: PluginPhase
UNSPECIFIED_POLICY: PullPolicy
IfNotPresent: PullPolicy
Always: PullPolicy
INLINE: EnvValueSource
HOST: EnvValueSource
FAIL_CLOSE: FailStrategy
FAIL_OPEN: FailStrategy
FAIL_RELOAD: FailStrategy

class WasmPlugin(_message.Message):
    __slots__ = ("selector", "url", "sha256", "image_pull_policy", "image_pull_secret", "verification_key", "plugin_config", "plugin_name", "phase", "priority", "vm_config", "match", "fail_strategy", "type", "target_ref", "target_refs")
    class TrafficSelector(_message.Message):
        __slots__ = ("mode", "ports")
        MODE_FIELD_NUMBER: _ClassVar[int]
        PORTS_FIELD_NUMBER: _ClassVar[int]
        mode: _selector_pb2.WorkloadMode
        ports: _containers.RepeatedCompositeFieldContainer[_selector_pb2.PortSelector]
        def __init__(self, mode: _Optional[_Union[_selector_pb2.WorkloadMode, str]] = ..., ports: _Optional[_Iterable[_Union[_selector_pb2.PortSelector, _Mapping]]] = ...) -> None: ...
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    IMAGE_PULL_POLICY_FIELD_NUMBER: _ClassVar[int]
    IMAGE_PULL_SECRET_FIELD_NUMBER: _ClassVar[int]
    VERIFICATION_KEY_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_CONFIG_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_NAME_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    VM_CONFIG_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    FAIL_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TARGET_REF_FIELD_NUMBER: _ClassVar[int]
    TARGET_REFS_FIELD_NUMBER: _ClassVar[int]
    selector: _selector_pb2.WorkloadSelector
    url: str
    sha256: str
    image_pull_policy: PullPolicy
    image_pull_secret: str
    verification_key: str
    plugin_config: _struct_pb2.Struct
    plugin_name: str
    phase: PluginPhase
    priority: _wrappers_pb2.Int32Value
    vm_config: VmConfig
    match: _containers.RepeatedCompositeFieldContainer[WasmPlugin.TrafficSelector]
    fail_strategy: FailStrategy
    type: PluginType
    target_ref: _selector_pb2.PolicyTargetReference
    target_refs: _containers.RepeatedCompositeFieldContainer[_selector_pb2.PolicyTargetReference]
    def __init__(self, selector: _Optional[_Union[_selector_pb2.WorkloadSelector, _Mapping]] = ..., url: _Optional[str] = ..., sha256: _Optional[str] = ..., image_pull_policy: _Optional[_Union[PullPolicy, str]] = ..., image_pull_secret: _Optional[str] = ..., verification_key: _Optional[str] = ..., plugin_config: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., plugin_name: _Optional[str] = ..., phase: _Optional[_Union[PluginPhase, str]] = ..., priority: _Optional[_Union[_wrappers_pb2.Int32Value, _Mapping]] = ..., vm_config: _Optional[_Union[VmConfig, _Mapping]] = ..., match: _Optional[_Iterable[_Union[WasmPlugin.TrafficSelector, _Mapping]]] = ..., fail_strategy: _Optional[_Union[FailStrategy, str]] = ..., type: _Optional[_Union[PluginType, str]] = ..., target_ref: _Optional[_Union[_selector_pb2.PolicyTargetReference, _Mapping]] = ..., target_refs: _Optional[_Iterable[_Union[_selector_pb2.PolicyTargetReference, _Mapping]]] = ...) -> None: ...

class VmConfig(_message.Message):
    __slots__ = ("env",)
    ENV_FIELD_NUMBER: _ClassVar[int]
    env: _containers.RepeatedCompositeFieldContainer[EnvVar]
    def __init__(self, env: _Optional[_Iterable[_Union[EnvVar, _Mapping]]] = ...) -> None: ...

class EnvVar(_message.Message):
    __slots__ = ("name", "value", "value_from")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FROM_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    value_from: EnvValueSource
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., value_from: _Optional[_Union[EnvValueSource, str]] = ...) -> None: ...
