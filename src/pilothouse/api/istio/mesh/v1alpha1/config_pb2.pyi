import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import wrappers_pb2 as _wrappers_pb2
from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as _destination_rule_pb2
from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as _virtual_service_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Resource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SERVICE_REGISTRY: _ClassVar[Resource]
SERVICE_REGISTRY: Resource

class MeshConfig(_message.Message):
    __slots__ = ("proxy_listen_port", "proxy_inbound_listen_port", "connect_timeout", "outbound_traffic_policy", "config_sources", "trust_domain", "trust_domain_aliases", "default_service_export_to", "default_virtual_service_export_to", "default_destination_rule_export_to", "root_namespace", "locality_lb_setting", "dns_refresh_rate", "enable_auto_mtls", "default_http_retry_policy")
    class OutboundTrafficPolicy(_message.Message):
        __slots__ = ("mode",)
        class Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            REGISTRY_ONLY: _ClassVar[MeshConfig.OutboundTrafficPolicy.Mode]
            ALLOW_ANY: _ClassVar[MeshConfig.OutboundTrafficPolicy.Mode]
        REGISTRY_ONLY: MeshConfig.OutboundTrafficPolicy.Mode
        ALLOW_ANY: MeshConfig.OutboundTrafficPolicy.Mode
        MODE_FIELD_NUMBER: _ClassVar[int]
        mode: MeshConfig.OutboundTrafficPolicy.Mode
        def __init__(self, mode: _Optional[_Union[MeshConfig.OutboundTrafficPolicy.Mode, str]] = ...) -> None: ...
    PROXY_LISTEN_PORT_FIELD_NUMBER: _ClassVar[int]
    PROXY_INBOUND_LISTEN_PORT_FIELD_NUMBER: _ClassVar[int]
    CONNECT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    OUTBOUND_TRAFFIC_POLICY_FIELD_NUMBER: _ClassVar[int]
    CONFIG_SOURCES_FIELD_NUMBER: _ClassVar[int]
    TRUST_DOMAIN_FIELD_NUMBER: _ClassVar[int]
    TRUST_DOMAIN_ALIASES_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_SERVICE_EXPORT_TO_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VIRTUAL_SERVICE_EXPORT_TO_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_DESTINATION_RULE_EXPORT_TO_FIELD_NUMBER: _ClassVar[int]
    ROOT_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LOCALITY_LB_SETTING_FIELD_NUMBER: _ClassVar[int]
    DNS_REFRESH_RATE_FIELD_NUMBER: _ClassVar[int]
    ENABLE_AUTO_MTLS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_HTTP_RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    proxy_listen_port: int
    proxy_inbound_listen_port: int
    connect_timeout: _duration_pb2.Duration
    outbound_traffic_policy: MeshConfig.OutboundTrafficPolicy
    config_sources: _containers.RepeatedCompositeFieldContainer[ConfigSource]
    trust_domain: str
    trust_domain_aliases: _containers.RepeatedScalarFieldContainer[str]
    default_service_export_to: _containers.RepeatedScalarFieldContainer[str]
    default_virtual_service_export_to: _containers.RepeatedScalarFieldContainer[str]
    default_destination_rule_export_to: _containers.RepeatedScalarFieldContainer[str]
    root_namespace: str
    locality_lb_setting: _destination_rule_pb2.LocalityLoadBalancerSetting
    dns_refresh_rate: _duration_pb2.Duration
    enable_auto_mtls: _wrappers_pb2.BoolValue
    default_http_retry_policy: _virtual_service_pb2.HTTPRetry
    def __init__(self, proxy_listen_port: _Optional[int] = ..., proxy_inbound_listen_port: _Optional[int] = ..., connect_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., outbound_traffic_policy: _Optional[_Union[MeshConfig.OutboundTrafficPolicy, _Mapping]] = ..., config_sources: _Optional[_Iterable[_Union[ConfigSource, _Mapping]]] = ..., trust_domain: _Optional[str] = ..., trust_domain_aliases: _Optional[_Iterable[str]] = ..., default_service_export_to: _Optional[_Iterable[str]] = ..., default_virtual_service_export_to: _Optional[_Iterable[str]] = ..., default_destination_rule_export_to: _Optional[_Iterable[str]] = ..., root_namespace: _Optional[str] = ..., locality_lb_setting: _Optional[_Union[_destination_rule_pb2.LocalityLoadBalancerSetting, _Mapping]] = ..., dns_refresh_rate: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., enable_auto_mtls: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ..., default_http_retry_policy: _Optional[_Union[_virtual_service_pb2.HTTPRetry, _Mapping]] = ...) -> None: ...

class ConfigSource(_message.Message):
    __slots__ = ("address", "tls_settings", "subscribed_resources")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    TLS_SETTINGS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    address: str
    tls_settings: _destination_rule_pb2.ClientTLSSettings
    subscribed_resources: _containers.RepeatedScalarFieldContainer[Resource]
    def __init__(self, address: _Optional[str] = ..., tls_settings: _Optional[_Union[_destination_rule_pb2.ClientTLSSettings, _Mapping]] = ..., subscribed_resources: _Optional[_Iterable[_Union[Resource, str]]] = ...) -> None: ...
