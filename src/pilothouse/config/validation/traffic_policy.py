"""DestinationRule traffic policies: outlier detection, tunnels, retry budgets, port-level
settings, tying together load balancing, connection pools and TLS."""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3.destination_rule_pb2 import (
    OutlierDetection,
    TrafficPolicy,
)
from pilothouse.config.validation.addresses import is_ip
from pilothouse.config.validation.client_tls import check_client_tls
from pilothouse.config.validation.connection_pool import check_connection_pool
from pilothouse.config.validation.hosts import host_problem
from pilothouse.config.validation.load_balancer import check_load_balancer
from pilothouse.config.validation.ports import check_port_number
from pilothouse.config.validation.quantities import check_duration, check_whole_percent
from pilothouse.config.validation.report import Report

_POLICY_FIELDS = (
    "load_balancer",
    "connection_pool",
    "outlier_detection",
    "tls",
    "port_level_settings",
    "tunnel",
    "proxy_protocol",
    "retry_budget",
)


def check_traffic_policy(policy: TrafficPolicy, path: str, report: Report) -> None:
    if not any(_is_set(policy, field) for field in _POLICY_FIELDS):
        report.error(path, "traffic policy must set at least one field")
        return
    if policy.HasField("tunnel") and policy.HasField("proxy_protocol"):
        report.error(path, "tunnel and proxyProtocol cannot both be set")
    _check_common(policy, path, report)
    seen_ports: dict[int, int] = {}
    for index, port_policy in enumerate(policy.port_level_settings):
        item = f"{path}.portLevelSettings[{index}]"
        if not port_policy.HasField("port"):
            report.error(f"{item}.port", "port-level settings need a port")
        else:
            number = port_policy.port.number
            if check_port_number(number, f"{item}.port.number", report):
                if number in seen_ports:
                    report.error(
                        f"{item}.port.number",
                        f"port {number} already has settings in portLevelSettings"
                        f"[{seen_ports[number]}]",
                    )
                else:
                    seen_ports[number] = index
        if not any(
            port_policy.HasField(field)
            for field in ("load_balancer", "connection_pool", "outlier_detection", "tls")
        ):
            report.error(item, "port-level settings must set at least one policy")
        _check_common(port_policy, item, report)
    if policy.HasField("tunnel"):
        _check_tunnel(policy.tunnel, f"{path}.tunnel", report)
    if policy.HasField("retry_budget"):
        _check_retry_budget(policy.retry_budget, f"{path}.retryBudget", report)


def _is_set(policy: TrafficPolicy, field: str) -> bool:
    if field == "port_level_settings":
        return len(policy.port_level_settings) > 0
    return policy.HasField(field)


def _check_common(
    policy: TrafficPolicy | TrafficPolicy.PortTrafficPolicy, path: str, report: Report
) -> None:
    if policy.HasField("outlier_detection"):
        check_outlier_detection(policy.outlier_detection, f"{path}.outlierDetection", report)
    if policy.HasField("connection_pool"):
        check_connection_pool(policy.connection_pool, f"{path}.connectionPool", report)
    if policy.HasField("load_balancer"):
        check_load_balancer(
            policy.load_balancer,
            f"{path}.loadBalancer",
            report,
            has_outlier_detection=policy.HasField("outlier_detection"),
        )
    if policy.HasField("tls"):
        check_client_tls(policy.tls, f"{path}.tls", report)


def check_outlier_detection(outlier: OutlierDetection, path: str, report: Report) -> None:
    if outlier.consecutive_errors:
        report.warn(
            f"{path}.consecutiveErrors",
            "consecutiveErrors is deprecated; use consecutive5xxErrors or consecutiveGatewayErrors",
        )
    if (
        not outlier.split_external_local_origin_errors
        and outlier.consecutive_local_origin_failures.value > 0
    ):
        report.error(
            f"{path}.consecutiveLocalOriginFailures",
            "consecutiveLocalOriginFailures needs splitExternalLocalOriginErrors: true",
        )
    for field, json_name in (("interval", "interval"), ("base_ejection_time", "baseEjectionTime")):
        if outlier.HasField(field):
            check_duration(getattr(outlier, field), f"{path}.{json_name}", report)
    check_whole_percent(outlier.max_ejection_percent, f"{path}.maxEjectionPercent", report)
    check_whole_percent(outlier.min_health_percent, f"{path}.minHealthPercent", report)
    for index, code in enumerate(outlier.outlier_detection_http_error_codes):
        if not 100 <= code <= 599:
            report.error(
                f"{path}.outlierDetectionHttpErrorCodes[{index}]",
                f"HTTP status {code} must be in 100..599",
            )


def _check_tunnel(tunnel: TrafficPolicy.TunnelSettings, path: str, report: Report) -> None:
    if tunnel.protocol and tunnel.protocol not in ("CONNECT", "POST"):
        report.error(
            f"{path}.protocol", f"tunnel protocol {tunnel.protocol!r} must be CONNECT or POST"
        )
    if not is_ip(tunnel.target_host) and host_problem(tunnel.target_host, wildcard=False):
        report.error(
            f"{path}.targetHost",
            f"tunnel target host {tunnel.target_host!r} must be an FQDN or an IP address",
        )
    check_port_number(tunnel.target_port, f"{path}.targetPort", report)


def _check_retry_budget(budget: TrafficPolicy.RetryBudget, path: str, report: Report) -> None:
    if budget.HasField("percent") and not 0 <= budget.percent.value <= 100:
        report.error(
            f"{path}.percent", f"retry budget percent {budget.percent.value:g} must be in 0..100"
        )
    if budget.HasField("budget_interval"):
        check_duration(budget.budget_interval, f"{path}.budgetInterval", report)
