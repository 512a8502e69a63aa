import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import wrappers_pb2 as _wrappers_pb2
from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as _virtual_service_pb2
from pilothouse.api.istio.type.v1beta1 import selector_pb2 as _selector_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DestinationRule(_message.Message):
    __slots__ = ("host", "traffic_policy", "subsets", "export_to", "workload_selector")
    HOST_FIELD_NUMBER: _ClassVar[int]
    TRAFFIC_POLICY_FIELD_NUMBER: _ClassVar[int]
    SUBSETS_FIELD_NUMBER: _ClassVar[int]
    EXPORT_TO_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    host: str
    traffic_policy: TrafficPolicy
    subsets: _containers.RepeatedCompositeFieldContainer[Subset]
    export_to: _containers.RepeatedScalarFieldContainer[str]
    workload_selector: _selector_pb2.WorkloadSelector
    def __init__(self, host: _Optional[str] = ..., traffic_policy: _Optional[_Union[TrafficPolicy, _Mapping]] = ..., subsets: _Optional[_Iterable[_Union[Subset, _Mapping]]] = ..., export_to: _Optional[_Iterable[str]] = ..., workload_selector: _Optional[_Union[_selector_pb2.WorkloadSelector, _Mapping]] = ...) -> None: ...

class TrafficPolicy(_message.Message):
    __slots__ = ("load_balancer", "connection_pool", "outlier_detection", "tls", "port_level_settings", "tunnel", "proxy_protocol", "retry_budget")
    class PortTrafficPolicy(_message.Message):
        __slots__ = ("port", "load_balancer", "connection_pool", "outlier_detection", "tls")
        PORT_FIELD_NUMBER: _ClassVar[int]
        LOAD_BALANCER_FIELD_NUMBER: _ClassVar[int]
        CONNECTION_POOL_FIELD_NUMBER: _ClassVar[int]
        OUTLIER_DETECTION_FIELD_NUMBER: _ClassVar[int]
        TLS_FIELD_NUMBER: _ClassVar[int]
        port: _virtual_service_pb2.PortSelector
        load_balancer: LoadBalancerSettings
        connection_pool: ConnectionPoolSettings
        outlier_detection: OutlierDetection
        tls: ClientTLSSettings
        def __init__(self, port: _Optional[_Union[_virtual_service_pb2.PortSelector, _Mapping]] = ..., load_balancer: _Optional[_Union[LoadBalancerSettings, _Mapping]] = ..., connection_pool: _Optional[_Union[ConnectionPoolSettings, _Mapping]] = ..., outlier_detection: _Optional[_Union[OutlierDetection, _Mapping]] = ..., tls: _Optional[_Union[ClientTLSSettings, _Mapping]] = ...) -> None: ...
    class TunnelSettings(_message.Message):
        __slots__ = ("protocol", "target_host", "target_port")
        PROTOCOL_FIELD_NUMBER: _ClassVar[int]
        TARGET_HOST_FIELD_NUMBER: _ClassVar[int]
        TARGET_PORT_FIELD_NUMBER: _ClassVar[int]
        protocol: str
        target_host: str
        target_port: int
        def __init__(self, protocol: _Optional[str] = ..., target_host: _Optional[str] = ..., target_port: _Optional[int] = ...) -> None: ...
    class ProxyProtocol(_message.Message):
        __slots__ = ("version",)
        class VERSION(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            V1: _ClassVar[TrafficPolicy.ProxyProtocol.VERSION]
            V2: _ClassVar[TrafficPolicy.ProxyProtocol.VERSION]
        V1: TrafficPolicy.ProxyProtocol.VERSION
        V2: TrafficPolicy.ProxyProtocol.VERSION
        VERSION_FIELD_NUMBER: _ClassVar[int]
        version: TrafficPolicy.ProxyProtocol.VERSION
        def __init__(self, version: _Optional[_Union[TrafficPolicy.ProxyProtocol.VERSION, str]] = ...) -> None: ...
    class RetryBudget(_message.Message):
        __slots__ = ("percent", "min_retry_concurrency", "budget_interval")
        PERCENT_FIELD_NUMBER: _ClassVar[int]
        MIN_RETRY_CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
        BUDGET_INTERVAL_FIELD_NUMBER: _ClassVar[int]
        percent: _wrappers_pb2.DoubleValue
        min_retry_concurrency: int
        budget_interval: _duration_pb2.Duration
        def __init__(self, percent: _Optional[_Union[_wrappers_pb2.DoubleValue, _Mapping]] = ..., min_retry_concurrency: _Optional[int] = ..., budget_interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...
    LOAD_BALANCER_FIELD_NUMBER: _ClassVar[int]
    CONNECTION_POOL_FIELD_NUMBER: _ClassVar[int]
    OUTLIER_DETECTION_FIELD_NUMBER: _ClassVar[int]
    TLS_FIELD_NUMBER: _ClassVar[int]
    PORT_LEVEL_SETTINGS_FIELD_NUMBER: _ClassVar[int]
    TUNNEL_FIELD_NUMBER: _ClassVar[int]
    PROXY_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    RETRY_BUDGET_FIELD_NUMBER: _ClassVar[int]
    load_balancer: LoadBalancerSettings
    connection_pool: ConnectionPoolSettings
    outlier_detection: OutlierDetection
    tls: ClientTLSSettings
    port_level_settings: _containers.RepeatedCompositeFieldContainer[TrafficPolicy.PortTrafficPolicy]
    tunnel: TrafficPolicy.TunnelSettings
    proxy_protocol: TrafficPolicy.ProxyProtocol
    retry_budget: TrafficPolicy.RetryBudget
    def __init__(self, load_balancer: _Optional[_Union[LoadBalancerSettings, _Mapping]] = ..., connection_pool: _Optional[_Union[ConnectionPoolSettings, _Mapping]] = ..., outlier_detection: _Optional[_Union[OutlierDetection, _Mapping]] = ..., tls: _Optional[_Union[ClientTLSSettings, _Mapping]] = ..., port_level_settings: _Optional[_Iterable[_Union[TrafficPolicy.PortTrafficPolicy, _Mapping]]] = ..., tunnel: _Optional[_Union[TrafficPolicy.TunnelSettings, _Mapping]] = ..., proxy_protocol: _Optional[_Union[TrafficPolicy.ProxyProtocol, _Mapping]] = ..., retry_budget: _Optional[_Union[TrafficPolicy.RetryBudget, _Mapping]] = ...) -> None: ...

class Subset(_message.Message):
    __slots__ = ("name", "labels", "traffic_policy")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    TRAFFIC_POLICY_FIELD_NUMBER: _ClassVar[int]
    name: str
    labels: _containers.ScalarMap[str, str]
    traffic_policy: TrafficPolicy
    def __init__(self, name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., traffic_policy: _Optional[_Union[TrafficPolicy, _Mapping]] = ...) -> None: ...

class LoadBalancerSettings(_message.Message):
    __slots__ = ("simple", "consistent_hash", "locality_lb_setting", "zone_aware_lb_setting", "warmup_duration_secs", "warmup")
    class SimpleLB(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNSPECIFIED: _ClassVar[LoadBalancerSettings.SimpleLB]
        LEAST_CONN: _ClassVar[LoadBalancerSettings.SimpleLB]
        RANDOM: _ClassVar[LoadBalancerSettings.SimpleLB]
        PASSTHROUGH: _ClassVar[LoadBalancerSettings.SimpleLB]
        ROUND_ROBIN: _ClassVar[LoadBalancerSettings.SimpleLB]
        LEAST_REQUEST: _ClassVar[LoadBalancerSettings.SimpleLB]
    UNSPECIFIED: LoadBalancerSettings.SimpleLB
    LEAST_CONN: LoadBalancerSettings.SimpleLB
    RANDOM: LoadBalancerSettings.SimpleLB
    PASSTHROUGH: LoadBalancerSettings.SimpleLB
    ROUND_ROBIN: LoadBalancerSettings.SimpleLB
    LEAST_REQUEST: LoadBalancerSettings.SimpleLB
    class ConsistentHashLB(_message.Message):
        __slots__ = ("http_header_name", "http_cookie", "use_source_ip", "http_query_parameter_name", "ring_hash", "maglev", "minimum_ring_size")
        class RingHash(_message.Message):
            __slots__ = ("minimum_ring_size",)
            MINIMUM_RING_SIZE_FIELD_NUMBER: _ClassVar[int]
            minimum_ring_size: int
            def __init__(self, minimum_ring_size: _Optional[int] = ...) -> None: ...
        class MagLev(_message.Message):
            __slots__ = ("table_size",)
            TABLE_SIZE_FIELD_NUMBER: _ClassVar[int]
            table_size: int
            def __init__(self, table_size: _Optional[int] = ...) -> None: ...
        class HTTPCookie(_message.Message):
            __slots__ = ("name", "path", "ttl", "attributes")
            class Attribute(_message.Message):
                __slots__ = ("name", "value")
                NAME_FIELD_NUMBER: _ClassVar[int]
                VALUE_FIELD_NUMBER: _ClassVar[int]
                name: str
                value: str
                def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
            NAME_FIELD_NUMBER: _ClassVar[int]
            PATH_FIELD_NUMBER: _ClassVar[int]
            TTL_FIELD_NUMBER: _ClassVar[int]
            ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
            name: str
            path: str
            ttl: _duration_pb2.Duration
            attributes: _containers.RepeatedCompositeFieldContainer[LoadBalancerSettings.ConsistentHashLB.HTTPCookie.Attribute]
            def __init__(self, name: _Optional[str] = ..., path: _Optional[str] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., attributes: _Optional[_Iterable[_Union[LoadBalancerSettings.ConsistentHashLB.HTTPCookie.Attribute, _Mapping]]] = ...) -> None: ...
        HTTP_HEADER_NAME_FIELD_NUMBER: _ClassVar[int]
        HTTP_COOKIE_FIELD_NUMBER: _ClassVar[int]
        USE_SOURCE_IP_FIELD_NUMBER: _ClassVar[int]
        HTTP_QUERY_PARAMETER_NAME_FIELD_NUMBER: _ClassVar[int]
        RING_HASH_FIELD_NUMBER: _ClassVar[int]
        MAGLEV_FIELD_NUMBER: _ClassVar[int]
        MINIMUM_RING_SIZE_FIELD_NUMBER: _ClassVar[int]
        http_header_name: str
        http_cookie: LoadBalancerSettings.ConsistentHashLB.HTTPCookie
        use_source_ip: bool
        http_query_parameter_name: str
        ring_hash: LoadBalancerSettings.ConsistentHashLB.RingHash
        maglev: LoadBalancerSettings.ConsistentHashLB.MagLev
        minimum_ring_size: int
        def __init__(self, http_header_name: _Optional[str] = ..., http_cookie: _Optional[_Union[LoadBalancerSettings.ConsistentHashLB.HTTPCookie, _Mapping]] = ..., use_source_ip: _Optional[bool] = ..., http_query_parameter_name: _Optional[str] = ..., ring_hash: _Optional[_Union[LoadBalancerSettings.ConsistentHashLB.RingHash, _Mapping]] = ..., maglev: _Optional[_Union[LoadBalancerSettings.ConsistentHashLB.MagLev, _Mapping]] = ..., minimum_ring_size: _Optional[int] = ...) -> None: ...
    SIMPLE_FIELD_NUMBER: _ClassVar[int]
    CONSISTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    LOCALITY_LB_SETTING_FIELD_NUMBER: _ClassVar[int]
    ZONE_AWARE_LB_SETTING_FIELD_NUMBER: _ClassVar[int]
    WARMUP_DURATION_SECS_FIELD_NUMBER: _ClassVar[int]
    WARMUP_FIELD_NUMBER: _ClassVar[int]
    simple: LoadBalancerSettings.SimpleLB
    consistent_hash: LoadBalancerSettings.ConsistentHashLB
    locality_lb_setting: LocalityLoadBalancerSetting
    zone_aware_lb_setting: ZoneAwareLoadBalancerSetting
    warmup_duration_secs: _duration_pb2.Duration
    warmup: WarmupConfiguration
    def __init__(self, simple: _Optional[_Union[LoadBalancerSettings.SimpleLB, str]] = ..., consistent_hash: _Optional[_Union[LoadBalancerSettings.ConsistentHashLB, _Mapping]] = ..., locality_lb_setting: _Optional[_Union[LocalityLoadBalancerSetting, _Mapping]] = ..., zone_aware_lb_setting: _Optional[_Union[ZoneAwareLoadBalancerSetting, _Mapping]] = ..., warmup_duration_secs: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., warmup: _Optional[_Union[WarmupConfiguration, _Mapping]] = ...) -> None: ...

class WarmupConfiguration(_message.Message):
    __slots__ = ("duration", "minimum_percent", "aggression")
    DURATION_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_PERCENT_FIELD_NUMBER: _ClassVar[int]
    AGGRESSION_FIELD_NUMBER: _ClassVar[int]
    duration: _duration_pb2.Duration
    minimum_percent: _wrappers_pb2.DoubleValue
    aggression: _wrappers_pb2.DoubleValue
    def __init__(self, duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., minimum_percent: _Optional[_Union[_wrappers_pb2.DoubleValue, _Mapping]] = ..., aggression: _Optional[_Union[_wrappers_pb2.DoubleValue, _Mapping]] = ...) -> None: ...

class ConnectionPoolSettings(_message.Message):
    __slots__ = ("tcp", "http")
    class TCPSettings(_message.Message):
        __slots__ = ("max_connections", "connect_timeout", "tcp_keepalive", "max_connection_duration", "idle_timeout")
        class TcpKeepalive(_message.Message):
            __slots__ = ("probes", "time", "interval")
            PROBES_FIELD_NUMBER: _ClassVar[int]
            TIME_FIELD_NUMBER: _ClassVar[int]
            INTERVAL_FIELD_NUMBER: _ClassVar[int]
            probes: int
            time: _duration_pb2.Duration
            interval: _duration_pb2.Duration
            def __init__(self, probes: _Optional[int] = ..., time: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...
        MAX_CONNECTIONS_FIELD_NUMBER: _ClassVar[int]
        CONNECT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
        TCP_KEEPALIVE_FIELD_NUMBER: _ClassVar[int]
        MAX_CONNECTION_DURATION_FIELD_NUMBER: _ClassVar[int]
        IDLE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
        max_connections: int
        connect_timeout: _duration_pb2.Duration
        tcp_keepalive: ConnectionPoolSettings.TCPSettings.TcpKeepalive
        max_connection_duration: _duration_pb2.Duration
        idle_timeout: _duration_pb2.Duration
        def __init__(self, max_connections: _Optional[int] = ..., connect_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., tcp_keepalive: _Optional[_Union[ConnectionPoolSettings.TCPSettings.TcpKeepalive, _Mapping]] = ..., max_connection_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., idle_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...
    class HTTPSettings(_message.Message):
        __slots__ = ("http1_max_pending_requests", "http2_max_requests", "max_requests_per_connection", "max_retries", "idle_timeout", "h2_upgrade_policy", "use_client_protocol", "max_concurrent_streams", "http2_keep_alive")
        class H2UpgradePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            DEFAULT: _ClassVar[ConnectionPoolSettings.HTTPSettings.H2UpgradePolicy]
            DO_NOT_UPGRADE: _ClassVar[ConnectionPoolSettings.HTTPSettings.H2UpgradePolicy]
            UPGRADE: _ClassVar[ConnectionPoolSettings.HTTPSettings.H2UpgradePolicy]
        DEFAULT: ConnectionPoolSettings.HTTPSettings.H2UpgradePolicy
        DO_NOT_UPGRADE: ConnectionPoolSettings.HTTPSettings.H2UpgradePolicy
        UPGRADE: ConnectionPoolSettings.HTTPSettings.H2UpgradePolicy
        class ConnectionKeepalive(_message.Message):
            __slots__ = ("interval", "timeout")
            INTERVAL_FIELD_NUMBER: _ClassVar[int]
            TIMEOUT_FIELD_NUMBER: _ClassVar[int]
            interval: _duration_pb2.Duration
            timeout: _duration_pb2.Duration
            def __init__(self, interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...
        HTTP1_MAX_PENDING_REQUESTS_FIELD_NUMBER: _ClassVar[int]
        HTTP2_MAX_REQUESTS_FIELD_NUMBER: _ClassVar[int]
        MAX_REQUESTS_PER_CONNECTION_FIELD_NUMBER: _ClassVar[int]
        MAX_RETRIES_FIELD_NUMBER: _ClassVar[int]
        IDLE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
        H2_UPGRADE_POLICY_FIELD_NUMBER: _ClassVar[int]
        USE_CLIENT_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
        MAX_CONCURRENT_STREAMS_FIELD_NUMBER: _ClassVar[int]
        HTTP2_KEEP_ALIVE_FIELD_NUMBER: _ClassVar[int]
        http1_max_pending_requests: int
        http2_max_requests: int
        max_requests_per_connection: int
        max_retries: int
        idle_timeout: _duration_pb2.Duration
        h2_upgrade_policy: ConnectionPoolSettings.HTTPSettings.H2UpgradePolicy
        use_client_protocol: bool
        max_concurrent_streams: int
        http2_keep_alive: ConnectionPoolSettings.HTTPSettings.ConnectionKeepalive
        def __init__(self, http1_max_pending_requests: _Optional[int] = ..., http2_max_requests: _Optional[int] = ..., max_requests_per_connection: _Optional[int] = ..., max_retries: _Optional[int] = ..., idle_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., h2_upgrade_policy: _Optional[_Union[ConnectionPoolSettings.HTTPSettings.H2UpgradePolicy, str]] = ..., use_client_protocol: _Optional[bool] = ..., max_concurrent_streams: _Optional[int] = ..., http2_keep_alive: _Optional[_Union[ConnectionPoolSettings.HTTPSettings.ConnectionKeepalive, _Mapping]] = ...) -> None: ...
    TCP_FIELD_NUMBER: _ClassVar[int]
    HTTP_FIELD_NUMBER: _ClassVar[int]
    tcp: ConnectionPoolSettings.TCPSettings
    http: ConnectionPoolSettings.HTTPSettings
    def __init__(self, tcp: _Optional[_Union[ConnectionPoolSettings.TCPSettings, _Mapping]] = ..., http: _Optional[_Union[ConnectionPoolSettings.HTTPSettings, _Mapping]] = ...) -> None: ...

class OutlierDetection(_message.Message):
    __slots__ = ("consecutive_errors", "split_external_local_origin_errors", "consecutive_local_origin_failures", "consecutive_gateway_errors", "consecutive_5xx_errors", "interval", "base_ejection_time", "max_ejection_percent", "min_health_percent", "outlier_detection_http_error_codes")
    CONSECUTIVE_ERRORS_FIELD_NUMBER: _ClassVar[int]
    SPLIT_EXTERNAL_LOCAL_ORIGIN_ERRORS_FIELD_NUMBER: _ClassVar[int]
    CONSECUTIVE_LOCAL_ORIGIN_FAILURES_FIELD_NUMBER: _ClassVar[int]
    CONSECUTIVE_GATEWAY_ERRORS_FIELD_NUMBER: _ClassVar[int]
    CONSECUTIVE_5XX_ERRORS_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    BASE_EJECTION_TIME_FIELD_NUMBER: _ClassVar[int]
    MAX_EJECTION_PERCENT_FIELD_NUMBER: _ClassVar[int]
    MIN_HEALTH_PERCENT_FIELD_NUMBER: _ClassVar[int]
    OUTLIER_DETECTION_HTTP_ERROR_CODES_FIELD_NUMBER: _ClassVar[int]
    consecutive_errors: int
    split_external_local_origin_errors: bool
    consecutive_local_origin_failures: _wrappers_pb2.UInt32Value
    consecutive_gateway_errors: _wrappers_pb2.UInt32Value
    consecutive_5xx_errors: _wrappers_pb2.UInt32Value
    interval: _duration_pb2.Duration
    base_ejection_time: _duration_pb2.Duration
    max_ejection_percent: int
    min_health_percent: int
    outlier_detection_http_error_codes: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, consecutive_errors: _Optional[int] = ..., split_external_local_origin_errors: _Optional[bool] = ..., consecutive_local_origin_failures: _Optional[_Union[_wrappers_pb2.UInt32Value, _Mapping]] = ..., consecutive_gateway_errors: _Optional[_Union[_wrappers_pb2.UInt32Value, _Mapping]] = ..., consecutive_5xx_errors: _Optional[_Union[_wrappers_pb2.UInt32Value, _Mapping]] = ..., interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., base_ejection_time: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., max_ejection_percent: _Optional[int] = ..., min_health_percent: _Optional[int] = ..., outlier_detection_http_error_codes: _Optional[_Iterable[int]] = ...) -> None: ...

class ClientTLSSettings(_message.Message):
    __slots__ = ("mode", "client_certificate", "private_key", "ca_certificates", "credential_name", "subject_alt_names", "sni", "insecure_skip_verify", "ca_crl")
    class TLSmode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DISABLE: _ClassVar[ClientTLSSettings.TLSmode]
        SIMPLE: _ClassVar[ClientTLSSettings.TLSmode]
        MUTUAL: _ClassVar[ClientTLSSettings.TLSmode]
        ISTIO_MUTUAL: _ClassVar[ClientTLSSettings.TLSmode]
    DISABLE: ClientTLSSettings.TLSmode
    SIMPLE: ClientTLSSettings.TLSmode
    MUTUAL: ClientTLSSettings.TLSmode
    ISTIO_MUTUAL: ClientTLSSettings.TLSmode
    MODE_FIELD_NUMBER: _ClassVar[int]
    CLIENT_CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    PRIVATE_KEY_FIELD_NUMBER: _ClassVar[int]
    CA_CERTIFICATES_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_ALT_NAMES_FIELD_NUMBER: _ClassVar[int]
    SNI_FIELD_NUMBER: _ClassVar[int]
    INSECURE_SKIP_VERIFY_FIELD_NUMBER: _ClassVar[int]
    CA_CRL_FIELD_NUMBER: _ClassVar[int]
    mode: ClientTLSSettings.TLSmode
    client_certificate: str
    private_key: str
    ca_certificates: str
    credential_name: str
    subject_alt_names: _containers.RepeatedScalarFieldContainer[str]
    sni: str
    insecure_skip_verify: _wrappers_pb2.BoolValue
    ca_crl: str
    def __init__(self, mode: _Optional[_Union[ClientTLSSettings.TLSmode, str]] = ..., client_certificate: _Optional[str] = ..., private_key: _Optional[str] = ..., ca_certificates: _Optional[str] = ..., credential_name: _Optional[str] = ..., subject_alt_names: _Optional[_Iterable[str]] = ..., sni: _Optional[str] = ..., insecure_skip_verify: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ..., ca_crl: _Optional[str] = ...) -> None: ...

class LocalityLoadBalancerSetting(_message.Message):
    __slots__ = ("distribute", "failover", "failover_priority", "enabled")
    class Distribute(_message.Message):
        __slots__ = ("to",)
        class ToEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: int
            def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
        FROM_FIELD_NUMBER: _ClassVar[int]
        TO_FIELD_NUMBER: _ClassVar[int]
        to: _containers.ScalarMap[str, int]
        def __init__(self, to: _Optional[_Mapping[str, int]] = ..., **kwargs) -> None: ...
    class Failover(_message.Message):
        __slots__ = ("to",)
        FROM_FIELD_NUMBER: _ClassVar[int]
        TO_FIELD_NUMBER: _ClassVar[int]
        to: str
        def __init__(self, to: _Optional[str] = ..., **kwargs) -> None: ...
    DISTRIBUTE_FIELD_NUMBER: _ClassVar[int]
    FAILOVER_FIELD_NUMBER: _ClassVar[int]
    FAILOVER_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    distribute: _containers.RepeatedCompositeFieldContainer[LocalityLoadBalancerSetting.Distribute]
    failover: _containers.RepeatedCompositeFieldContainer[LocalityLoadBalancerSetting.Failover]
    failover_priority: _containers.RepeatedScalarFieldContainer[str]
    enabled: _wrappers_pb2.BoolValue
    def __init__(self, distribute: _Optional[_Iterable[_Union[LocalityLoadBalancerSetting.Distribute, _Mapping]]] = ..., failover: _Optional[_Iterable[_Union[LocalityLoadBalancerSetting.Failover, _Mapping]]] = ..., failover_priority: _Optional[_Iterable[str]] = ..., enabled: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ...) -> None: ...

class ZoneAwareLoadBalancerSetting(_message.Message):
    __slots__ = ("enabled", "failover", "failover_priority", "min_cluster_size")
    class Failover(_message.Message):
        __slots__ = ("to",)
        FROM_FIELD_NUMBER: _ClassVar[int]
        TO_FIELD_NUMBER: _ClassVar[int]
        to: str
        def __init__(self, to: _Optional[str] = ..., **kwargs) -> None: ...
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    FAILOVER_FIELD_NUMBER: _ClassVar[int]
    FAILOVER_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    MIN_CLUSTER_SIZE_FIELD_NUMBER: _ClassVar[int]
    enabled: _wrappers_pb2.BoolValue
    failover: _containers.RepeatedCompositeFieldContainer[ZoneAwareLoadBalancerSetting.Failover]
    failover_priority: _containers.RepeatedScalarFieldContainer[str]
    min_cluster_size: _wrappers_pb2.UInt64Value
    def __init__(self, enabled: _Optional[_Union[_wrappers_pb2.BoolValue, _Mapping]] = ..., failover: _Optional[_Iterable[_Union[ZoneAwareLoadBalancerSetting.Failover, _Mapping]]] = ..., failover_priority: _Optional[_Iterable[str]] = ..., min_cluster_size: _Optional[_Union[_wrappers_pb2.UInt64Value, _Mapping]] = ...) -> None: ...
