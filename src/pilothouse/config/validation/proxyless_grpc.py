"""Warnings for routing and policy that proxyless gRPC clients cannot honour.

pilothouse serves gRPC clients what gRPC implements (see
:mod:`pilothouse.xds.generators.grpc_cds` and ``grpc_rds``); the rest of a
VirtualService or DestinationRule is dropped, replaced, or ignored by gRPC. These
checks say so, as warnings: the config stays valid (Envoy sidecars use all of it).

Which hosts are gRPC-targeted cannot be told from one object: a VirtualService
names hosts, and only the ServiceEntry behind a host says its port speaks gRPC. So
this is an analyzer over a set of configs (:func:`analyze_proxyless_grpc`, for
``pilothouse validate`` over a directory, or over a store): a host is gRPC-targeted
when a ServiceEntry declares it with a port whose protocol is ``GRPC`` (or, with no
protocol, whose name is ``grpc`` or starts with ``grpc-``, Istio's port-name
convention). VirtualServices bound to the mesh whose hosts cover such a host, and
DestinationRules for it, are checked with
:func:`check_virtual_service_for_grpc` and :func:`check_destination_rule_for_grpc`,
which also serve a caller that knows the host is gRPC-targeted on its own.

What is reported (grpcio 1.85's behaviour):

- matches on ``queryParams`` (gRPC skips such routes), on ``authority``,
  ``method`` or ``scheme`` (gRPC matches metadata only, so these never match), and
  ``uri`` prefixes or exact paths that cannot match ``/package.Service/Method``;
- ``redirect`` and ``directResponse`` (a call matching them fails), ``rewrite``,
  ``headers``, ``mirror``/``mirrors`` (ignored), ``corsPolicy`` (dropped);
- retries: ``retryOn`` conditions that are not gRPC status names (gRPC retries only
  on cancelled, deadline-exceeded, internal, resource-exhausted, unavailable),
  ``perTryTimeout`` and ``retryRemoteLocalities`` (ignored);
- load balancing other than ROUND_ROBIN and consistent hashing (served as
  ROUND_ROBIN), MAGLEV (served as RING_HASH), cookie and query-parameter hash keys
  (gRPC hashes each call at random), warm-up and locality settings (ignored);
- outlier detection by consecutive errors (gRPC ejects only by success rate or
  failure percentage, which Istio does not configure: only the interval and the
  ejection time and percentage reach it);
- connection pool settings other than ``http2MaxRequests``; ``tls``, ``tunnel``,
  ``proxyProtocol`` and ``retryBudget`` (not sent to gRPC clients).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from pilothouse.api.istio.networking.v1alpha3.destination_rule_pb2 import (
    DestinationRule,
    LoadBalancerSettings,
    TrafficPolicy,
)
from pilothouse.api.istio.networking.v1alpha3.virtual_service_pb2 import (
    HTTPRoute,
    VirtualService,
)
from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.validation.report import Finding, Report

GRPC_RETRY_CONDITIONS: Final = frozenset(
    {"cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable"}
)
DEFAULT_DOMAIN_SUFFIX: Final = "cluster.local"
MESH_GATEWAY: Final = "mesh"

_SIMPLE_SERVED_AS_ROUND_ROBIN: Final = {
    LoadBalancerSettings.LEAST_REQUEST: "LEAST_REQUEST",
    LoadBalancerSettings.LEAST_CONN: "LEAST_CONN",
    LoadBalancerSettings.RANDOM: "RANDOM",
    LoadBalancerSettings.PASSTHROUGH: "PASSTHROUGH",
}
_CONSECUTIVE_ERRORS: Final = (
    "consecutive_errors",
    "consecutive_5xx_errors",
    "consecutive_gateway_errors",
    "consecutive_local_origin_failures",
)
_NOT_SENT: Final = {
    "tunnel": "tunnel",
    "proxy_protocol": "proxyProtocol",
    "retry_budget": "retryBudget",
}
_ROUTE_FIELDS: Final = (
    ("redirect", "redirect", "calls that match this route fail (UNAVAILABLE)"),
    ("direct_response", "directResponse", "calls that match this route fail (UNAVAILABLE)"),
    ("rewrite", "rewrite", "ignored by proxyless gRPC"),
    ("headers", "headers", "header changes are ignored by proxyless gRPC"),
    ("mirror", "mirror", "ignored by proxyless gRPC"),
    ("cors_policy", "corsPolicy", "not sent to proxyless gRPC"),
)
_PSEUDO_HEADERS: Final = (("authority", "authority"), ("method", "method"), ("scheme", "scheme"))
NOT_GRPC_PATH: Final = "cannot match a gRPC path (/package.Service/Method); proxyless gRPC skips"
OUTLIER_NOT_HONOURED: Final = (
    "proxyless gRPC does not eject endpoints on consecutive errors (only by success rate or "
    "failure percentage); only interval, baseEjectionTime and maxEjectionPercent reach it"
)
POOL_NOT_HONOURED: Final = "proxyless gRPC honours only http.http2MaxRequests (its request limit)"
HASH_KEY_NOT_HONOURED: Final = (
    "proxyless gRPC hashes only on headers (and useSourceIp, as its channel); each call "
    "gets a random endpoint"
)


def is_grpc_port(protocol: str, name: str) -> bool:
    """Whether a ServiceEntry port speaks gRPC (its protocol, else Istio's name convention)."""
    if protocol:
        return protocol.upper() == "GRPC"
    lowered = name.lower()
    return lowered == "grpc" or lowered.startswith("grpc-")


def qualified_host(host: str, namespace: str, domain_suffix: str) -> str:
    """A short host as Istio reads it in a config of ``namespace``."""
    if host.startswith("*") or "." in host:
        return host
    return f"{host}.{namespace}.svc.{domain_suffix}"


def grpc_hosts(configs: Iterable[Config]) -> frozenset[str]:
    """Hosts of ServiceEntries with at least one gRPC port."""
    found: set[str] = set()
    for config in configs:
        if config.kind != "ServiceEntry":
            continue
        spec: Any = config.spec
        if any(is_grpc_port(p.protocol, p.name) for p in spec.ports):
            found.update(spec.hosts)
    return frozenset(found)


def analyze_proxyless_grpc(
    configs: Iterable[Config], domain_suffix: str = DEFAULT_DOMAIN_SUFFIX
) -> list[tuple[ConfigKey, Finding]]:
    """Warnings for the VirtualServices and DestinationRules of gRPC-targeted hosts."""
    everything = list(configs)
    targeted = grpc_hosts(everything)
    out: list[tuple[ConfigKey, Finding]] = []
    if not targeted:
        return out
    for config in everything:
        spec: Any = config.spec
        report = Report(namespace=config.namespace, name=config.name)
        if config.kind == "VirtualService":
            if spec.gateways and MESH_GATEWAY not in spec.gateways:
                continue
            hosts = [qualified_host(h, config.namespace, domain_suffix) for h in spec.hosts]
            if any(_covers(h, t) for h in hosts for t in targeted):
                check_virtual_service_for_grpc(spec, report)
        elif config.kind == "DestinationRule":
            host = qualified_host(spec.host, config.namespace, domain_suffix)
            if any(_covers(host, t) for t in targeted):
                check_destination_rule_for_grpc(spec, report)
        out.extend((config.key, finding) for finding in report.findings)
    return out


def _covers(pattern: str, host: str) -> bool:
    if pattern in ("*", host):
        return True
    return pattern.startswith("*.") and host.endswith(pattern[1:])


# -- VirtualService ------------------------------------------------------------------


def check_virtual_service_for_grpc(spec: VirtualService, report: Report) -> None:
    """Warn about every HTTP route feature proxyless gRPC does not honour."""
    for index, route in enumerate(spec.http):
        check_http_route_for_grpc(route, f"spec.http[{index}]", report)


def check_http_route_for_grpc(route: HTTPRoute, path: str, report: Report) -> None:
    for index, match in enumerate(route.match):
        item = f"{path}.match[{index}]"
        if match.query_params:
            report.warn(
                f"{item}.queryParams", "proxyless gRPC skips routes that match query parameters"
            )
        for field, label in _PSEUDO_HEADERS:
            if match.HasField(field):
                report.warn(
                    f"{item}.{label}",
                    f"proxyless gRPC matches only metadata; a {label} match never matches",
                )
        if match.HasField("uri"):
            _check_grpc_path(match.uri, f"{item}.uri", report)
    for field, label, effect in _ROUTE_FIELDS:
        if route.HasField(field):
            report.warn(f"{path}.{label}", effect)
    if route.mirrors:
        report.warn(f"{path}.mirrors", "ignored by proxyless gRPC")
    if route.HasField("retries"):
        _check_grpc_retries(route.retries, f"{path}.retries", report)


def _check_grpc_path(uri: Any, path: str, report: Report) -> None:
    kind = uri.WhichOneof("match_type")
    if kind == "prefix":
        value = str(uri.prefix)
        parts = value[1:].split("/") if value.startswith("/") else None
        if parts is None or len(parts) > 2 or (len(parts) == 2 and not parts[0]):
            report.warn(f"{path}.prefix", f"prefix {value!r} {NOT_GRPC_PATH} the route")
    elif kind == "exact":
        value = str(uri.exact)
        parts = value[1:].split("/") if value.startswith("/") else []
        if len(parts) != 2 or not all(parts):
            report.warn(f"{path}.exact", f"path {value!r} {NOT_GRPC_PATH} the route")


def _check_grpc_retries(retries: Any, path: str, report: Report) -> None:
    conditions = [c.strip() for c in retries.retry_on.split(",") if c.strip()]
    ignored = [c for c in conditions if c not in GRPC_RETRY_CONDITIONS]
    if ignored:
        report.warn(
            f"{path}.retryOn",
            "proxyless gRPC retries only on gRPC status names "
            f"({', '.join(sorted(GRPC_RETRY_CONDITIONS))}); it ignores {', '.join(ignored)}",
        )
    if retries.HasField("per_try_timeout"):
        report.warn(f"{path}.perTryTimeout", "ignored by proxyless gRPC")
    if retries.HasField("retry_remote_localities"):
        report.warn(f"{path}.retryRemoteLocalities", "ignored by proxyless gRPC")


# -- DestinationRule -----------------------------------------------------------------


def check_destination_rule_for_grpc(spec: DestinationRule, report: Report) -> None:
    """Warn about every traffic policy setting proxyless gRPC does not honour."""
    if spec.HasField("traffic_policy"):
        check_traffic_policy_for_grpc(spec.traffic_policy, "spec.trafficPolicy", report)
    for index, subset in enumerate(spec.subsets):
        if subset.HasField("traffic_policy"):
            check_traffic_policy_for_grpc(
                subset.traffic_policy, f"spec.subsets[{index}].trafficPolicy", report
            )


def check_traffic_policy_for_grpc(policy: TrafficPolicy, path: str, report: Report) -> None:
    _check_components(policy, path, report)
    for index, entry in enumerate(policy.port_level_settings):
        _check_components(entry, f"{path}.portLevelSettings[{index}]", report)
    for field, label in _NOT_SENT.items():
        if policy.HasField(field):
            report.warn(f"{path}.{label}", "not sent to proxyless gRPC clients")


def _check_components(policy: Any, path: str, report: Report) -> None:
    """The parts a TrafficPolicy and a port-level entry share."""
    if policy.HasField("load_balancer"):
        _check_load_balancer(policy.load_balancer, f"{path}.loadBalancer", report)
    if policy.HasField("outlier_detection"):
        outlier = policy.outlier_detection
        if (
            any(_is_set(outlier, f) for f in _CONSECUTIVE_ERRORS)
            or outlier.split_external_local_origin_errors
            or outlier.min_health_percent
        ):
            report.warn(f"{path}.outlierDetection", OUTLIER_NOT_HONOURED)
    if policy.HasField("connection_pool"):
        pool = policy.connection_pool
        others = [f.name for f, _ in pool.http.ListFields() if f.name != "http2_max_requests"]
        if pool.HasField("tcp") or others:
            report.warn(f"{path}.connectionPool", POOL_NOT_HONOURED)
    if policy.HasField("tls"):
        report.warn(f"{path}.tls", "not sent to proxyless gRPC clients")


def _check_load_balancer(lb: LoadBalancerSettings, path: str, report: Report) -> None:
    kind = lb.WhichOneof("lb_policy")
    if kind == "simple" and lb.simple in _SIMPLE_SERVED_AS_ROUND_ROBIN:
        report.warn(
            f"{path}.simple",
            "proxyless gRPC balances with ROUND_ROBIN or RING_HASH only; "
            f"{_SIMPLE_SERVED_AS_ROUND_ROBIN[lb.simple]} is served as ROUND_ROBIN",
        )
    if kind == "consistent_hash":
        hashing = lb.consistent_hash
        if hashing.WhichOneof("hash_algorithm") == "maglev":
            report.warn(
                f"{path}.consistentHash.maglev",
                "proxyless gRPC has no MAGLEV; served as RING_HASH",
            )
        key = hashing.WhichOneof("hash_key")
        if key == "http_cookie":
            report.warn(f"{path}.consistentHash.httpCookie", HASH_KEY_NOT_HONOURED)
        elif key == "http_query_parameter_name":
            report.warn(f"{path}.consistentHash.httpQueryParameterName", HASH_KEY_NOT_HONOURED)
    if lb.HasField("warmup") or lb.HasField("warmup_duration_secs"):
        report.warn(f"{path}.warmup", "proxyless gRPC has no slow start; ignored")
    if lb.HasField("locality_lb_setting"):
        report.warn(f"{path}.localityLbSetting", "ignored by proxyless gRPC")


def _is_set(message: Any, field: str) -> bool:
    """A positive count, plain or wrapped (an explicit 0 turns the check off)."""
    value = getattr(message, field)
    if not isinstance(value, int):
        value = value.value if message.HasField(field) else 0
    return bool(value > 0)
