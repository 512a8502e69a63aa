import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import wrappers_pb2 as _wrappers_pb2
from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as _destination_rule_pb2
from pilothouse.api.istio.mesh.v1alpha1 import proxy_pb2 as _proxy_pb2
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
    __slots__ = ("proxy_listen_port", "proxy_inbound_listen_port", "connect_timeout", "outbound_traffic_policy", "config_sources", "trust_domain", "trust_domain_aliases", "default_service_export_to", "default_virtual_service_export_to", "default_destination_rule_export_to", "root_namespace", "locality_lb_setting", "dns_refresh_rate", "enable_auto_mtls", "default_http_retry_policy", "default_config", "proxy_http_port", "hbone_idle_timeout", "protocol_detection_timeout", "tcp_keepalive", "ingress_class", "ingress_service", "ingress_controller_mode", "ingress_selector", "enable_tracing", "access_log_file", "access_log_format", "access_log_encoding", "enable_envoy_access_log_service", "disable_envoy_listener_log", "inbound_traffic_policy", "ca_certificates", "zone_aware_lb_setting", "h2_upgrade_policy", "inbound_cluster_stat_name", "outbound_cluster_stat_name", "service_settings", "enable_prometheus_merge", "verify_certificate_at_client", "ca", "path_normalization", "mesh_mTLS", "tls_defaults", "default_traffic_policy", "discovery_selectors", "service_scope_configs", "service_entry_visibility", "certificates")
    class IngressControllerMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNSPECIFIED: _ClassVar[MeshConfig.IngressControllerMode]
        OFF: _ClassVar[MeshConfig.IngressControllerMode]
        DEFAULT: _ClassVar[MeshConfig.IngressControllerMode]
        STRICT: _ClassVar[MeshConfig.IngressControllerMode]
    UNSPECIFIED: MeshConfig.IngressControllerMode
    OFF: MeshConfig.IngressControllerMode
    DEFAULT: MeshConfig.IngressControllerMode
    STRICT: MeshConfig.IngressControllerMode
    class AccessLogEncoding(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        TEXT: _ClassVar[MeshConfig.AccessLogEncoding]
        JSON: _ClassVar[MeshConfig.AccessLogEncoding]
    TEXT: MeshConfig.AccessLogEncoding
    JSON: MeshConfig.AccessLogEncoding
    class H2UpgradePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DO_NOT_UPGRADE: _ClassVar[MeshConfig.H2UpgradePolicy]
        UPGRADE: _ClassVar[MeshConfig.H2UpgradePolicy]
    DO_NOT_UPGRADE: MeshConfig.H2UpgradePolicy
    UPGRADE: MeshConfig.H2UpgradePolicy
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
    class InboundTrafficPolicy(_message.Message):
        __slots__ = ("mode",)
        class Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            PASSTHROUGH: _ClassVar[MeshConfig.InboundTrafficPolicy.Mode]
            LOCALHOST: _ClassVar[MeshConfig.InboundTrafficPolicy.Mode]
        PASSTHROUGH: MeshConfig.InboundTrafficPolicy.Mode
        LOCALHOST: MeshConfig.InboundTrafficPolicy.Mode
        MODE_FIELD_NUMBER: _ClassVar[int]
        mode: MeshConfig.InboundTrafficPolicy.Mode
        def __init__(self, mode: _Optional[_Union[MeshConfig.InboundTrafficPolicy.Mode, str]] = ...) -> None: ...
    class CertificateData(_message.Message):
        __slots__ = ("pem", "spiffe_bundle_url", "cert_signers", "trust_domains")
        PEM_FIELD_NUMBER: _ClassVar[int]
        SPIFFE_BUNDLE_URL_FIELD_NUMBER: _ClassVar[int]
        CERT_SIGNERS_FIELD_NUMBER: _ClassVar[int]
        TRUST_DOMAINS_FIELD_NUMBER: _ClassVar[int]
        pem: str
        spiffe_bundle_url: str
        cert_signers: _containers.RepeatedScalarFieldContainer[str]
        trust_domains: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, pem: _Optional[str] = ..., spiffe_bundle_url: _Optional[str] = ..., cert_signers: _Optional[_Iterable[str]] = ..., trust_domains: _Optional[_Iterable[str]] = ...) -> None: ...
    class ServiceSettings(_message.Message):
        __slots__ = ("settings", "hosts")
        class Settings(_message.Message):
            __slots__ = ("cluster_local",)
            CLUSTER_LOCAL_FIELD_NUMBER: _ClassVar[int]
            cluster_local: bool
            def __init__(self, cluster_local: _Optional[bool] = ...) -> None: ...
        SETTINGS_FIELD_NUMBER: _ClassVar[int]
        HOSTS_FIELD_NUMBER: _ClassVar[int]
        settings: MeshConfig.ServiceSettings.Settings
        hosts: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, settings: _Optional[_Union[MeshConfig.ServiceSettings.Settings, _Mapping]] = ..., hosts: _Optional[_Iterable[str]] = ...) -> None: ...
    class CA(_message.Message):
        __slots__ = ("address", "tls_settings", "request_timeout", "istiod_side")
        ADDRESS_FIELD_NUMBER: _ClassVar[int]
        TLS_SETTINGS_FIELD_NUMBER: _ClassVar[int]
        REQUEST_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
        ISTIOD_SIDE_FIELD_NUMBER: _ClassVar[int]
        address: str
        tls_settings: _destination_rule_pb2.ClientTLSSettings
        request_timeout: _duration_pb2.Duration
        istiod_side: bool
        def __init__(self, address: _Optional[str] = ..., tls_settings: _Optional[_Union[_destination_rule_pb2.ClientTLSSettings, _Mapping]] = ..., request_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., istiod_side: _Optional[bool] = ...) -> None: ...
    class ProxyPathNormalization(_message.Message):
        __slots__ = ("normalization",)
        class NormalizationType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            DEFAULT: _ClassVar[MeshConfig.ProxyPathNormalization.NormalizationType]
            NONE: _ClassVar[MeshConfig.ProxyPathNormalization.NormalizationType]
            BASE: _ClassVar[MeshConfig.ProxyPathNormalization.NormalizationType]
            MERGE_SLASHES: _ClassVar[MeshConfig.ProxyPathNormalization.NormalizationType]
            DECODE_AND_MERGE_SLASHES: _ClassVar[MeshConfig.ProxyPathNormalization.NormalizationType]
        DEFAULT: MeshConfig.ProxyPathNormalization.NormalizationType
        NONE: MeshConfig.ProxyPathNormalization.NormalizationType
        BASE: MeshConfig.ProxyPathNormalization.NormalizationType
        MERGE_SLASHES: MeshConfig.ProxyPathNormalization.NormalizationType
        DECODE_AND_MERGE_SLASHES: MeshConfig.ProxyPathNormalization.NormalizationType
        NORMALIZATION_FIELD_NUMBER: _ClassVar[int]
        normalization: MeshConfig.ProxyPathNormalization.NormalizationType
        def __init__(self, normalization: _Optional[_Union[MeshConfig.ProxyPathNormalization.NormalizationType, str]] = ...) -> None: ...
    class TLSConfig(_message.Message):
        __slots__ = ("min_protocol_version", "ecdh_curves", "cipher_suites")
        class TLSProtocol(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            TLS_AUTO: _ClassVar[MeshConfig.TLSConfig.TLSProtocol]
            TLSV1_2: _ClassVar[MeshConfig.TLSConfig.TLSProtocol]
            TLSV1_3: _ClassVar[MeshConfig.TLSConfig.TLSProtocol]
        TLS_AUTO: MeshConfig.TLSConfig.TLSProtocol
        TLSV1_2: MeshConfig.TLSConfig.TLSProtocol
        TLSV1_3: MeshConfig.TLSConfig.TLSProtocol
        MIN_PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
        ECDH_CURVES_FIELD_NUMBER: _ClassVar[int]
        CIPHER_SUITES_FIELD_NUMBER: _ClassVar[int]
        min_protocol_version: MeshConfig.TLSConfig.TLSProtocol
        ecdh_curves: _containers.RepeatedScalarFieldContainer[str]
        cipher_suites: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, min_protocol_version: _Optional[_Union[MeshConfig.TLSConfig.TLSProtocol, str]] = ..., ecdh_curves: _Optional[_Iterable[str]] = ..., cipher_suites: _Optional[_Iterable[str]] = ...) -> None: ...
    class DefaultTrafficPolicy(_message.Message):
        __slots__ = ("connection_pool", "outlier_detection")
        CONNECTION_POOL_FIELD_NUMBER: _ClassVar[int]
        OUTLIER_DETECTION_FIELD_NUMBER: _ClassVar[int]
        connection_pool: _destination_rule_pb2.ConnectionPoolSettings
        outlier_detection: _destination_rule_pb2.OutlierDetection
        def __init__(self, connection_pool: _Optional[_Union[_destination_rule_pb2.ConnectionPoolSettings, _Mapping]] = ..., outlier_detection: _Optional[_Union[_destination_rule_pb2.OutlierDetection, _Mapping]] = ...) -> None: ...
    class ServiceScopeConfigs(_message.Message):
        __slots__ = ("namespace_selector", "services_selector", "scope")
        class Scope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            LOCAL: _ClassVar[MeshConfig.ServiceScopeConfigs.Scope]
            GLOBAL: _ClassVar[MeshConfig.ServiceScopeConfigs.Scope]
        LOCAL: MeshConfig.ServiceScopeConfigs.Scope
        GLOBAL: MeshConfig.ServiceScopeConfigs.Scope
        NAMESPACE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
        SERVICES_SELECTOR_FIELD_NUMBER: _ClassVar[int]
        SCOPE_FIELD_NUMBER: _ClassVar[int]
        namespace_selector: LabelSelector
        services_selector: LabelSelector
        scope: MeshConfig.ServiceScopeConfigs.Scope
        def __init__(self, namespace_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., services_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., scope: _Optional[_Union[MeshConfig.ServiceScopeConfigs.Scope, str]] = ...) -> None: ...
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
    DEFAULT_CONFIG_FIELD_NUMBER: _ClassVar[int]
    PROXY_HTTP_PORT_FIELD_NUMBER: _ClassVar[int]
    HBONE_IDLE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_DETECTION_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TCP_KEEPALIVE_FIELD_NUMBER: _ClassVar[int]
    INGRESS_CLASS_FIELD_NUMBER: _ClassVar[int]
    INGRESS_SERVICE_FIELD_NUMBER: _ClassVar[int]
    INGRESS_CONTROLLER_MODE_FIELD_NUMBER: _ClassVar[int]
    INGRESS_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    ENABLE_TRACING_FIELD_NUMBER: _ClassVar[int]
    ACCESS_LOG_FILE_FIELD_NUMBER: _ClassVar[int]
    ACCESS_LOG_FORMAT_FIELD_NUMBER: _ClassVar[int]
    ACCESS_LOG_ENCODING_FIELD_NUMBER: _ClassVar[int]
    ENABLE_ENVOY_ACCESS_LOG_SERVICE_FIELD_NUMBER: _ClassVar[int]
    DISABLE_ENVOY_LISTENER_LOG_FIELD_NUMBER: _ClassVar[int]
    INBOUND_TRAFFIC_POLICY_FIELD_NUMBER: _ClassVar[int]
    CA_CERTIFICATES_FIELD_NUMBER: _ClassVar[int]
    ZONE_AWARE_LB_SETTING_FIELD_NUMBER: _ClassVar[int]
    H2_UPGRADE_POLICY_FIELD_NUMBER: _ClassVar[int]
    INBOUND_CLUSTER_STAT_NAME_FIELD_NUMBER: _ClassVar[int]
    OUTBOUND_CLUSTER_STAT_NAME_FIELD_NUMBER: _ClassVar[int]
    SERVICE_SETTINGS_FIELD_NUMBER: _ClassVar[int]
    ENABLE_PROMETHEUS_MERGE_FIELD_NUMBER: _ClassVar[int]
    VERIFY_CERTIFICATE_AT_CLIENT_FIELD_NUMBER: _ClassVar[int]
    CA_FIELD_NUMBER: _ClassVar[int]
    PATH_NORMALIZATION_FIELD_NUMBER: _ClassVar[int]
    MESH_MTLS_FIELD_NUMBER: _ClassVar[int]
    TLS_DEFAULTS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_TRAFFIC_POLICY_FIELD_NUMBER: _ClassVar[int]
    DISCOVERY_SELECTORS_FIELD_NUMBER: _ClassVar[int]
    SERVICE_SCOPE_CONFIGS_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ENTRY_VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    CERTIFICATES_FIELD_NUMBER: _ClassVar[int]
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
    default_config: _proxy_pb2.ProxyConfig
    proxy_http_port: int
    hbone_idle_timeout: _duration_pb2.Duration
    protocol_detection_timeout: _duration_pb2.Duration
    tcp_keepalive: _destination_rule_pb2.ConnectionPoolSettings.TCPSettings.TcpKeepalive
    ingress_class: str
    ingress_service: str
    ingress_controller_mode: MeshConfig.IngressControllerMode
    ingress_selector: str
    enable_tracing: bool
    access_log_file: str
    access_log_format: str
    access_log_encoding: MeshConfig.AccessLogEncoding
    enable_envoy_access_log_service: bool
    disable_envoy_listener_log: bool
    inbound_traffic_policy: MeshConfig.InboundTrafficPolicy
    ca_certificates: _containers.RepeatedCompositeFieldContainer[MeshConfig.CertificateData]
    zone_aware_lb_setting: _destination_rule_pb2.ZoneAwareLoadBalancerSetting
    h2_upgrade_policy: MeshConfig.H2UpgradePolicy
    inbound_cluster_stat_name: str
    outbound_cluster_stat_name: str
    service_settings: _containers.RepeatedCompositeFieldContainer[MeshConfig.ServiceSettings]
    enable_prometheus_merge: _wrappers_pb2.BoolValue
    verify_certificate_at_client: _wrappers_pb2.BoolValue
    ca: MeshConfig.CA
    path_normalization: MeshConfig.ProxyPathNormalization
    mesh_mTLS: MeshConfig.TLSConfig
    tls_defaults: MeshConfig.TLSConfig
    default_traffic_policy: MeshConfig.DefaultTrafficPolicy
    discovery_selectors: _containers.RepeatedCompositeFieldContainer[LabelSelector]
    service_scope_configs: _containers.RepeatedCompositeFieldContainer[MeshConfig.ServiceScopeConfigs]
    service_entry_visibility: ServiceEntryVisibility
    certificates: _containers.RepeatedCompositeFieldContainer[Certificate]
    def __init__(self, proxy_listen_port: _Optional[int] = ..., proxy_inbound_listen_port: _Optional[int] = ..., connect_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., outbound_traffic_policy: _Optional[_Union[MeshConfig.OutboundTrafficPolicy, _Mapping]] = ..., config_sources: _Optional[_Iterable[_Union[ConfigSource, _Mapping]]] = ..., trust_domain: _Optional[str] = ..., trust_domain_aliases: _Optional[_Iterable[str]] = ..., default_service_export_to: _Optional[_Iterable[str]] = ..., default_virtual_service_export_to: _Optional[_Iterable[str]] = ..., default_destination_rule_export_to: _Optional[_Iterable[str]] = ..., root_namespace: _Optional[str] = ..., locality_lb_setting: _Optional[_Union[_destination_rule_pb2.LocalityLoadBalancerSetting, _Mapping]] = ..., dns_refresh_rate: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., enable_auto_mtls: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ..., default_http_retry_policy: _Optional[_Union[_virtual_service_pb2.HTTPRetry, _Mapping]] = ..., default_config: _Optional[_Union[_proxy_pb2.ProxyConfig, _Mapping]] = ..., proxy_http_port: _Optional[int] = ..., hbone_idle_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., protocol_detection_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., tcp_keepalive: _Optional[_Union[_destination_rule_pb2.ConnectionPoolSettings.TCPSettings.TcpKeepalive, _Mapping]] = ..., ingress_class: _Optional[str] = ..., ingress_service: _Optional[str] = ..., ingress_controller_mode: _Optional[_Union[MeshConfig.IngressControllerMode, str]] = ..., ingress_selector: _Optional[str] = ..., enable_tracing: _Optional[bool] = ..., access_log_file: _Optional[str] = ..., access_log_format: _Optional[str] = ..., access_log_encoding: _Optional[_Union[MeshConfig.AccessLogEncoding, str]] = ..., enable_envoy_access_log_service: _Optional[bool] = ..., disable_envoy_listener_log: _Optional[bool] = ..., inbound_traffic_policy: _Optional[_Union[MeshConfig.InboundTrafficPolicy, _Mapping]] = ..., ca_certificates: _Optional[_Iterable[_Union[MeshConfig.CertificateData, _Mapping]]] = ..., zone_aware_lb_setting: _Optional[_Union[_destination_rule_pb2.ZoneAwareLoadBalancerSetting, _Mapping]] = ..., h2_upgrade_policy: _Optional[_Union[MeshConfig.H2UpgradePolicy, str]] = ..., inbound_cluster_stat_name: _Optional[str] = ..., outbound_cluster_stat_name: _Optional[str] = ..., service_settings: _Optional[_Iterable[_Union[MeshConfig.ServiceSettings, _Mapping]]] = ..., enable_prometheus_merge: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ..., verify_certificate_at_client: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ..., ca: _Optional[_Union[MeshConfig.CA, _Mapping]] = ..., path_normalization: _Optional[_Union[MeshConfig.ProxyPathNormalization, _Mapping]] = ..., mesh_mTLS: _Optional[_Union[MeshConfig.TLSConfig, _Mapping]] = ..., tls_defaults: _Optional[_Union[MeshConfig.TLSConfig, _Mapping]] = ..., default_traffic_policy: _Optional[_Union[MeshConfig.DefaultTrafficPolicy, _Mapping]] = ..., discovery_selectors: _Optional[_Iterable[_Union[LabelSelector, _Mapping]]] = ..., service_scope_configs: _Optional[_Iterable[_Union[MeshConfig.ServiceScopeConfigs, _Mapping]]] = ..., service_entry_visibility: _Optional[_Union[ServiceEntryVisibility, _Mapping]] = ..., certificates: _Optional[_Iterable[_Union[Certificate, _Mapping]]] = ...) -> None: ...

class LabelSelector(_message.Message):
    __slots__ = ("matchLabels", "matchExpressions")
    class MatchLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MATCHLABELS_FIELD_NUMBER: _ClassVar[int]
    MATCHEXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    matchLabels: _containers.ScalarMap[str, str]
    matchExpressions: _containers.RepeatedCompositeFieldContainer[LabelSelectorRequirement]
    def __init__(self, matchLabels: _Optional[_Mapping[str, str]] = ..., matchExpressions: _Optional[_Iterable[_Union[LabelSelectorRequirement, _Mapping]]] = ...) -> None: ...

class LabelSelectorRequirement(_message.Message):
    __slots__ = ("key", "operator", "values")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class ServiceEntryVisibility(_message.Message):
    __slots__ = ("default_visibility", "apply_to_sidecars", "policies")
    class Visibility(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        VISIBILITY_UNSPECIFIED: _ClassVar[ServiceEntryVisibility.Visibility]
        NONE: _ClassVar[ServiceEntryVisibility.Visibility]
        NAMESPACE: _ClassVar[ServiceEntryVisibility.Visibility]
        PUBLIC: _ClassVar[ServiceEntryVisibility.Visibility]
    VISIBILITY_UNSPECIFIED: ServiceEntryVisibility.Visibility
    NONE: ServiceEntryVisibility.Visibility
    NAMESPACE: ServiceEntryVisibility.Visibility
    PUBLIC: ServiceEntryVisibility.Visibility
    class Policy(_message.Message):
        __slots__ = ("visibility", "matching_rules")
        VISIBILITY_FIELD_NUMBER: _ClassVar[int]
        MATCHING_RULES_FIELD_NUMBER: _ClassVar[int]
        visibility: ServiceEntryVisibility.Visibility
        matching_rules: _containers.RepeatedCompositeFieldContainer[ServiceEntryVisibility.MatchRule]
        def __init__(self, visibility: _Optional[_Union[ServiceEntryVisibility.Visibility, str]] = ..., matching_rules: _Optional[_Iterable[_Union[ServiceEntryVisibility.MatchRule, _Mapping]]] = ...) -> None: ...
    class MatchRule(_message.Message):
        __slots__ = ("namespace_selector",)
        NAMESPACE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
        namespace_selector: LabelSelector
        def __init__(self, namespace_selector: _Optional[_Union[LabelSelector, _Mapping]] = ...) -> None: ...
    DEFAULT_VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    APPLY_TO_SIDECARS_FIELD_NUMBER: _ClassVar[int]
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    default_visibility: ServiceEntryVisibility.Visibility
    apply_to_sidecars: bool
    policies: _containers.RepeatedCompositeFieldContainer[ServiceEntryVisibility.Policy]
    def __init__(self, default_visibility: _Optional[_Union[ServiceEntryVisibility.Visibility, str]] = ..., apply_to_sidecars: _Optional[bool] = ..., policies: _Optional[_Iterable[_Union[ServiceEntryVisibility.Policy, _Mapping]]] = ...) -> None: ...

class Certificate(_message.Message):
    __slots__ = ("secret_name", "dns_names")
    SECRET_NAME_FIELD_NUMBER: _ClassVar[int]
    DNS_NAMES_FIELD_NUMBER: _ClassVar[int]
    secret_name: str
    dns_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, secret_name: _Optional[str] = ..., dns_names: _Optional[_Iterable[str]] = ...) -> None: ...

class ConfigSource(_message.Message):
    __slots__ = ("address", "tls_settings", "subscribed_resources")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    TLS_SETTINGS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    address: str
    tls_settings: _destination_rule_pb2.ClientTLSSettings
    subscribed_resources: _containers.RepeatedScalarFieldContainer[Resource]
    def __init__(self, address: _Optional[str] = ..., tls_settings: _Optional[_Union[_destination_rule_pb2.ClientTLSSettings, _Mapping]] = ..., subscribed_resources: _Optional[_Iterable[_Union[Resource, str]]] = ...) -> None: ...
