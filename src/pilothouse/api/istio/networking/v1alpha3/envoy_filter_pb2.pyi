from google.protobuf import struct_pb2 as _struct_pb2
from pilothouse.api.istio.networking.v1alpha3 import sidecar_pb2 as _sidecar_pb2
from pilothouse.api.istio.type.v1beta1 import selector_pb2 as _selector_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EnvoyFilter(_message.Message):
    __slots__ = ("workload_selector", "target_refs", "config_patches", "priority")
    class ApplyTo(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        INVALID: _ClassVar[EnvoyFilter.ApplyTo]
        LISTENER: _ClassVar[EnvoyFilter.ApplyTo]
        FILTER_CHAIN: _ClassVar[EnvoyFilter.ApplyTo]
        NETWORK_FILTER: _ClassVar[EnvoyFilter.ApplyTo]
        HTTP_FILTER: _ClassVar[EnvoyFilter.ApplyTo]
        ROUTE_CONFIGURATION: _ClassVar[EnvoyFilter.ApplyTo]
        VIRTUAL_HOST: _ClassVar[EnvoyFilter.ApplyTo]
        HTTP_ROUTE: _ClassVar[EnvoyFilter.ApplyTo]
        CLUSTER: _ClassVar[EnvoyFilter.ApplyTo]
        EXTENSION_CONFIG: _ClassVar[EnvoyFilter.ApplyTo]
        BOOTSTRAP: _ClassVar[EnvoyFilter.ApplyTo]
        LISTENER_FILTER: _ClassVar[EnvoyFilter.ApplyTo]
    INVALID: EnvoyFilter.ApplyTo
    LISTENER: EnvoyFilter.ApplyTo
    FILTER_CHAIN: EnvoyFilter.ApplyTo
    NETWORK_FILTER: EnvoyFilter.ApplyTo
    HTTP_FILTER: EnvoyFilter.ApplyTo
    ROUTE_CONFIGURATION: EnvoyFilter.ApplyTo
    VIRTUAL_HOST: EnvoyFilter.ApplyTo
    HTTP_ROUTE: EnvoyFilter.ApplyTo
    CLUSTER: EnvoyFilter.ApplyTo
    EXTENSION_CONFIG: EnvoyFilter.ApplyTo
    BOOTSTRAP: EnvoyFilter.ApplyTo
    LISTENER_FILTER: EnvoyFilter.ApplyTo
    class PatchContext(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ANY: _ClassVar[EnvoyFilter.PatchContext]
        SIDECAR_INBOUND: _ClassVar[EnvoyFilter.PatchContext]
        SIDECAR_OUTBOUND: _ClassVar[EnvoyFilter.PatchContext]
        GATEWAY: _ClassVar[EnvoyFilter.PatchContext]
        WAYPOINT: _ClassVar[EnvoyFilter.PatchContext]
    ANY: EnvoyFilter.PatchContext
    SIDECAR_INBOUND: EnvoyFilter.PatchContext
    SIDECAR_OUTBOUND: EnvoyFilter.PatchContext
    GATEWAY: EnvoyFilter.PatchContext
    WAYPOINT: EnvoyFilter.PatchContext
    class ProxyMatch(_message.Message):
        __slots__ = ("proxy_version", "metadata")
        class MetadataEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: str
            def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
        PROXY_VERSION_FIELD_NUMBER: _ClassVar[int]
        METADATA_FIELD_NUMBER: _ClassVar[int]
        proxy_version: str
        metadata: _containers.ScalarMap[str, str]
        def __init__(self, proxy_version: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...
    class ClusterMatch(_message.Message):
        __slots__ = ("port_number", "service", "subset", "name")
        PORT_NUMBER_FIELD_NUMBER: _ClassVar[int]
        SERVICE_FIELD_NUMBER: _ClassVar[int]
        SUBSET_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        port_number: int
        service: str
        subset: str
        name: str
        def __init__(self, port_number: _Optional[int] = ..., service: _Optional[str] = ..., subset: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...
    class RouteConfigurationMatch(_message.Message):
        __slots__ = ("port_number", "port_name", "gateway", "vhost", "name")
        class RouteMatch(_message.Message):
            __slots__ = ("name", "action")
            class Action(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
                __slots__ = ()
                ANY: _ClassVar[EnvoyFilter.RouteConfigurationMatch.RouteMatch.Action]
                ROUTE: _ClassVar[EnvoyFilter.RouteConfigurationMatch.RouteMatch.Action]
                REDIRECT: _ClassVar[EnvoyFilter.RouteConfigurationMatch.RouteMatch.Action]
                DIRECT_RESPONSE: _ClassVar[EnvoyFilter.RouteConfigurationMatch.RouteMatch.Action]
            ANY: EnvoyFilter.RouteConfigurationMatch.RouteMatch.Action
            ROUTE: EnvoyFilter.RouteConfigurationMatch.RouteMatch.Action
            REDIRECT: EnvoyFilter.RouteConfigurationMatch.RouteMatch.Action
            DIRECT_RESPONSE: EnvoyFilter.RouteConfigurationMatch.RouteMatch.Action
            NAME_FIELD_NUMBER: _ClassVar[int]
            ACTION_FIELD_NUMBER: _ClassVar[int]
            name: str
            action: EnvoyFilter.RouteConfigurationMatch.RouteMatch.Action
            def __init__(self, name: _Optional[str] = ..., action: _Optional[_Union[EnvoyFilter.RouteConfigurationMatch.RouteMatch.Action, str]] = ...) -> None: ...
        class VirtualHostMatch(_message.Message):
            __slots__ = ("name", "route", "domain_name")
            NAME_FIELD_NUMBER: _ClassVar[int]
            ROUTE_FIELD_NUMBER: _ClassVar[int]
            DOMAIN_NAME_FIELD_NUMBER: _ClassVar[int]
            name: str
            route: EnvoyFilter.RouteConfigurationMatch.RouteMatch
            domain_name: str
            def __init__(self, name: _Optional[str] = ..., route: _Optional[_Union[EnvoyFilter.RouteConfigurationMatch.RouteMatch, _Mapping]] = ..., domain_name: _Optional[str] = ...) -> None: ...
        PORT_NUMBER_FIELD_NUMBER: _ClassVar[int]
        PORT_NAME_FIELD_NUMBER: _ClassVar[int]
        GATEWAY_FIELD_NUMBER: _ClassVar[int]
        VHOST_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        port_number: int
        port_name: str
        gateway: str
        vhost: EnvoyFilter.RouteConfigurationMatch.VirtualHostMatch
        name: str
        def __init__(self, port_number: _Optional[int] = ..., port_name: _Optional[str] = ..., gateway: _Optional[str] = ..., vhost: _Optional[_Union[EnvoyFilter.RouteConfigurationMatch.VirtualHostMatch, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...
    class ListenerMatch(_message.Message):
        __slots__ = ("port_number", "port_name", "filter_chain", "name", "listener_filter")
        class SubFilterMatch(_message.Message):
            __slots__ = ("name",)
            NAME_FIELD_NUMBER: _ClassVar[int]
            name: str
            def __init__(self, name: _Optional[str] = ...) -> None: ...
        class FilterMatch(_message.Message):
            __slots__ = ("name", "sub_filter")
            NAME_FIELD_NUMBER: _ClassVar[int]
            SUB_FILTER_FIELD_NUMBER: _ClassVar[int]
            name: str
            sub_filter: EnvoyFilter.ListenerMatch.SubFilterMatch
            def __init__(self, name: _Optional[str] = ..., sub_filter: _Optional[_Union[EnvoyFilter.ListenerMatch.SubFilterMatch, _Mapping]] = ...) -> None: ...
        class FilterChainMatch(_message.Message):
            __slots__ = ("name", "sni", "transport_protocol", "application_protocols", "filter", "destination_port")
            NAME_FIELD_NUMBER: _ClassVar[int]
            SNI_FIELD_NUMBER: _ClassVar[int]
            TRANSPORT_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
            APPLICATION_PROTOCOLS_FIELD_NUMBER: _ClassVar[int]
            FILTER_FIELD_NUMBER: _ClassVar[int]
            DESTINATION_PORT_FIELD_NUMBER: _ClassVar[int]
            name: str
            sni: str
            transport_protocol: str
            application_protocols: str
            filter: EnvoyFilter.ListenerMatch.FilterMatch
            destination_port: int
            def __init__(self, name: _Optional[str] = ..., sni: _Optional[str] = ..., transport_protocol: _Optional[str] = ..., application_protocols: _Optional[str] = ..., filter: _Optional[_Union[EnvoyFilter.ListenerMatch.FilterMatch, _Mapping]] = ..., destination_port: _Optional[int] = ...) -> None: ...
        PORT_NUMBER_FIELD_NUMBER: _ClassVar[int]
        PORT_NAME_FIELD_NUMBER: _ClassVar[int]
        FILTER_CHAIN_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        LISTENER_FILTER_FIELD_NUMBER: _ClassVar[int]
        port_number: int
        port_name: str
        filter_chain: EnvoyFilter.ListenerMatch.FilterChainMatch
        name: str
        listener_filter: str
        def __init__(self, port_number: _Optional[int] = ..., port_name: _Optional[str] = ..., filter_chain: _Optional[_Union[EnvoyFilter.ListenerMatch.FilterChainMatch, _Mapping]] = ..., name: _Optional[str] = ..., listener_filter: _Optional[str] = ...) -> None: ...
    class WaypointMatch(_message.Message):
        __slots__ = ("port_number", "route", "filter")
        class RouteMatch(_message.Message):
            __slots__ = ("name",)
            NAME_FIELD_NUMBER: _ClassVar[int]
            name: str
            def __init__(self, name: _Optional[str] = ...) -> None: ...
        class FilterMatch(_message.Message):
            __slots__ = ("name", "sub_filter")
            class SubFilterMatch(_message.Message):
                __slots__ = ("name",)
                NAME_FIELD_NUMBER: _ClassVar[int]
                name: str
                def __init__(self, name: _Optional[str] = ...) -> None: ...
            NAME_FIELD_NUMBER: _ClassVar[int]
            SUB_FILTER_FIELD_NUMBER: _ClassVar[int]
            name: str
            sub_filter: EnvoyFilter.WaypointMatch.FilterMatch.SubFilterMatch
            def __init__(self, name: _Optional[str] = ..., sub_filter: _Optional[_Union[EnvoyFilter.WaypointMatch.FilterMatch.SubFilterMatch, _Mapping]] = ...) -> None: ...
        PORT_NUMBER_FIELD_NUMBER: _ClassVar[int]
        ROUTE_FIELD_NUMBER: _ClassVar[int]
        FILTER_FIELD_NUMBER: _ClassVar[int]
        port_number: int
        route: EnvoyFilter.WaypointMatch.RouteMatch
        filter: EnvoyFilter.WaypointMatch.FilterMatch
        def __init__(self, port_number: _Optional[int] = ..., route: _Optional[_Union[EnvoyFilter.WaypointMatch.RouteMatch, _Mapping]] = ..., filter: _Optional[_Union[EnvoyFilter.WaypointMatch.FilterMatch, _Mapping]] = ...) -> None: ...
    class Patch(_message.Message):
        __slots__ = ("operation", "value", "filter_class")
        class Operation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            INVALID: _ClassVar[EnvoyFilter.Patch.Operation]
            MERGE: _ClassVar[EnvoyFilter.Patch.Operation]
            ADD: _ClassVar[EnvoyFilter.Patch.Operation]
            REMOVE: _ClassVar[EnvoyFilter.Patch.Operation]
            INSERT_BEFORE: _ClassVar[EnvoyFilter.Patch.Operation]
            INSERT_AFTER: _ClassVar[EnvoyFilter.Patch.Operation]
            INSERT_FIRST: _ClassVar[EnvoyFilter.Patch.Operation]
            REPLACE: _ClassVar[EnvoyFilter.Patch.Operation]
            MERGE_AND_REPLACE_LIST: _ClassVar[EnvoyFilter.Patch.Operation]
        INVALID: EnvoyFilter.Patch.Operation
        MERGE: EnvoyFilter.Patch.Operation
        ADD: EnvoyFilter.Patch.Operation
        REMOVE: EnvoyFilter.Patch.Operation
        INSERT_BEFORE: EnvoyFilter.Patch.Operation
        INSERT_AFTER: EnvoyFilter.Patch.Operation
        INSERT_FIRST: EnvoyFilter.Patch.Operation
        REPLACE: EnvoyFilter.Patch.Operation
        MERGE_AND_REPLACE_LIST: EnvoyFilter.Patch.Operation
        class FilterClass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            UNSPECIFIED: _ClassVar[EnvoyFilter.Patch.FilterClass]
            AUTHN: _ClassVar[EnvoyFilter.Patch.FilterClass]
            AUTHZ: _ClassVar[EnvoyFilter.Patch.FilterClass]
            STATS: _ClassVar[EnvoyFilter.Patch.FilterClass]
        UNSPECIFIED: EnvoyFilter.Patch.FilterClass
        AUTHN: EnvoyFilter.Patch.FilterClass
        AUTHZ: EnvoyFilter.Patch.FilterClass
        STATS: EnvoyFilter.Patch.FilterClass
        OPERATION_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        FILTER_CLASS_FIELD_NUMBER: _ClassVar[int]
        operation: EnvoyFilter.Patch.Operation
        value: _struct_pb2.Struct
        filter_class: EnvoyFilter.Patch.FilterClass
        def __init__(self, operation: _Optional[_Union[EnvoyFilter.Patch.Operation, str]] = ..., value: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., filter_class: _Optional[_Union[EnvoyFilter.Patch.FilterClass, str]] = ...) -> None: ...
    class EnvoyConfigObjectMatch(_message.Message):
        __slots__ = ("context", "proxy", "listener", "route_configuration", "cluster", "waypoint")
        CONTEXT_FIELD_NUMBER: _ClassVar[int]
        PROXY_FIELD_NUMBER: _ClassVar[int]
        LISTENER_FIELD_NUMBER: _ClassVar[int]
        ROUTE_CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
        CLUSTER_FIELD_NUMBER: _ClassVar[int]
        WAYPOINT_FIELD_NUMBER: _ClassVar[int]
        context: EnvoyFilter.PatchContext
        proxy: EnvoyFilter.ProxyMatch
        listener: EnvoyFilter.ListenerMatch
        route_configuration: EnvoyFilter.RouteConfigurationMatch
        cluster: EnvoyFilter.ClusterMatch
        waypoint: EnvoyFilter.WaypointMatch
        def __init__(self, context: _Optional[_Union[EnvoyFilter.PatchContext, str]] = ..., proxy: _Optional[_Union[EnvoyFilter.ProxyMatch, _Mapping]] = ..., listener: _Optional[_Union[EnvoyFilter.ListenerMatch, _Mapping]] = ..., route_configuration: _Optional[_Union[EnvoyFilter.RouteConfigurationMatch, _Mapping]] = ..., cluster: _Optional[_Union[EnvoyFilter.ClusterMatch, _Mapping]] = ..., waypoint: _Optional[_Union[EnvoyFilter.WaypointMatch, _Mapping]] = ...) -> None: ...
    class EnvoyConfigObjectPatch(_message.Message):
        __slots__ = ("apply_to", "match", "patch")
        APPLY_TO_FIELD_NUMBER: _ClassVar[int]
        MATCH_FIELD_NUMBER: _ClassVar[int]
        PATCH_FIELD_NUMBER: _ClassVar[int]
        apply_to: EnvoyFilter.ApplyTo
        match: EnvoyFilter.EnvoyConfigObjectMatch
        patch: EnvoyFilter.Patch
        def __init__(self, apply_to: _Optional[_Union[EnvoyFilter.ApplyTo, str]] = ..., match: _Optional[_Union[EnvoyFilter.EnvoyConfigObjectMatch, _Mapping]] = ..., patch: _Optional[_Union[EnvoyFilter.Patch, _Mapping]] = ...) -> None: ...
    WORKLOAD_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TARGET_REFS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_PATCHES_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    workload_selector: _sidecar_pb2.WorkloadSelector
    target_refs: _containers.RepeatedCompositeFieldContainer[_selector_pb2.PolicyTargetReference]
    config_patches: _containers.RepeatedCompositeFieldContainer[EnvoyFilter.EnvoyConfigObjectPatch]
    priority: int
    def __init__(self, workload_selector: _Optional[_Union[_sidecar_pb2.WorkloadSelector, _Mapping]] = ..., target_refs: _Optional[_Iterable[_Union[_selector_pb2.PolicyTargetReference, _Mapping]]] = ..., config_patches: _Optional[_Iterable[_Union[EnvoyFilter.EnvoyConfigObjectPatch, _Mapping]]] = ..., priority: _Optional[int] = ...) -> None: ...
