"""Load balancer settings: consistent hashing and locality-aware balancing."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pilothouse.api.istio.networking.v1alpha3.destination_rule_pb2 import (
    LoadBalancerSettings,
    LocalityLoadBalancerSetting,
)
from pilothouse.config.validation.quantities import check_duration
from pilothouse.config.validation.report import Report

# Envoy's largest Maglev table (a prime) and its ring hash maximum_ring_size default.
MAGLEV_TABLE_LIMIT = 5_000_011
RING_SIZE_LIMIT = 8_388_608
_TOPOLOGY_LABELS = frozenset(
    {"topology.kubernetes.io/region", "topology.kubernetes.io/zone", "topology.istio.io/subzone"}
)


def check_load_balancer(
    lb: LoadBalancerSettings, path: str, report: Report, *, has_outlier_detection: bool
) -> None:
    if lb.HasField("consistent_hash"):
        _check_consistent_hash(lb.consistent_hash, f"{path}.consistentHash", report)
    if lb.HasField("locality_lb_setting"):
        check_locality_lb(
            lb.locality_lb_setting,
            f"{path}.localityLbSetting",
            report,
            has_outlier_detection=has_outlier_detection,
        )
    if lb.HasField("warmup_duration_secs"):
        check_duration(lb.warmup_duration_secs, f"{path}.warmupDurationSecs", report)
    if lb.HasField("warmup"):
        warmup = lb.warmup
        if warmup.HasField("duration"):
            check_duration(warmup.duration, f"{path}.warmup.duration", report)
        else:
            report.error(f"{path}.warmup.duration", "warmup needs a duration (as istiod)")
        if warmup.HasField("minimum_percent") and not 0 <= warmup.minimum_percent.value <= 100:
            report.error(
                f"{path}.warmup.minimumPercent",
                f"minimumPercent {warmup.minimum_percent.value:g} must be in 0..100",
            )
        if warmup.HasField("aggression") and warmup.aggression.value < 1:
            report.error(
                f"{path}.warmup.aggression",
                f"aggression {warmup.aggression.value:g} must be at least 1 (as istiod)",
            )


def _check_consistent_hash(
    hash_lb: LoadBalancerSettings.ConsistentHashLB, path: str, report: Report
) -> None:
    key = hash_lb.WhichOneof("hash_key")
    if key is None:
        report.error(
            path,
            "consistent hashing needs a hash key: httpHeaderName, httpCookie, useSourceIp or "
            "httpQueryParameterName",
        )
    elif key == "http_header_name" and not hash_lb.http_header_name:
        report.error(f"{path}.httpHeaderName", "header name must not be empty")
    elif key == "http_query_parameter_name" and not hash_lb.http_query_parameter_name:
        report.error(f"{path}.httpQueryParameterName", "query parameter name must not be empty")
    elif key == "http_cookie":
        if not hash_lb.http_cookie.name:
            report.error(f"{path}.httpCookie.name", "the hash cookie needs a name")
        if hash_lb.http_cookie.HasField("ttl") and hash_lb.http_cookie.ttl.seconds < 0:
            report.error(f"{path}.httpCookie.ttl", "cookie ttl must not be negative")
    algorithm = hash_lb.WhichOneof("hash_algorithm")
    if hash_lb.minimum_ring_size:
        report.warn(f"{path}.minimumRingSize", "minimumRingSize is deprecated; use ringHash")
        if algorithm is not None:
            report.error(
                f"{path}.minimumRingSize",
                "minimumRingSize cannot be combined with ringHash or maglev",
            )
        elif hash_lb.minimum_ring_size > RING_SIZE_LIMIT:
            report.error(
                f"{path}.minimumRingSize",
                f"ring size {hash_lb.minimum_ring_size} exceeds Envoy's limit {RING_SIZE_LIMIT}",
            )
    if algorithm == "ring_hash" and hash_lb.ring_hash.minimum_ring_size > RING_SIZE_LIMIT:
        report.error(
            f"{path}.ringHash.minimumRingSize",
            f"ring size {hash_lb.ring_hash.minimum_ring_size} exceeds Envoy's limit "
            f"{RING_SIZE_LIMIT}",
        )
    if algorithm == "maglev":
        size = hash_lb.maglev.table_size
        size_path = f"{path}.maglev.tableSize"
        if size == 0:
            report.error(size_path, "maglev needs a tableSize")
        elif size >= MAGLEV_TABLE_LIMIT:
            report.error(size_path, f"maglev tableSize {size} must be below {MAGLEV_TABLE_LIMIT}")
        elif not _is_prime(size):
            report.error(size_path, f"maglev tableSize {size} must be a prime number")


def _is_prime(value: int) -> bool:
    if value < 2:
        return False
    if value < 4:
        return True
    if value % 2 == 0:
        return False
    return all(value % factor for factor in range(3, math.isqrt(value) + 1, 2))


def check_locality_lb(
    setting: LocalityLoadBalancerSetting,
    path: str,
    report: Report,
    *,
    has_outlier_detection: bool,
) -> None:
    if setting.distribute and setting.failover:
        report.error(path, "distribute and failover cannot both be set")
        return
    if setting.failover:
        for index, label in enumerate(setting.failover_priority):
            if label in _TOPOLOGY_LABELS:
                report.error(
                    f"{path}.failoverPriority[{index}]",
                    f"topology label {label!r} cannot be used together with failover",
                )
    for index, rule in enumerate(setting.distribute):
        item = f"{path}.distribute[{index}]"
        total = 0
        for locality in sorted(rule.to):
            weight = rule.to[locality]
            if not 1 <= weight <= 100:
                report.error(
                    f"{item}.to[{locality}]", f"locality weight {weight} must be in 1..100"
                )
            total += weight
        if rule.to and total != 100:
            report.error(
                f"{item}.to", f"locality weights add up to {total}; they must add up to 100"
            )
        if not rule.to:
            report.error(f"{item}.to", "distribute needs at least one target locality")
        _check_localities([(name, f"{item}.to[{name}]") for name in sorted(rule.to)], report)
    _check_localities(
        [
            (getattr(rule, "from"), f"{path}.distribute[{index}].from")
            for index, rule in enumerate(setting.distribute)
        ],
        report,
    )
    for index, failover in enumerate(setting.failover):
        item = f"{path}.failover[{index}]"
        origin = getattr(failover, "from")
        if origin == failover.to:
            report.error(item, "failover from and to must be different regions")
        if "/" in origin or "/" in failover.to:
            report.error(item, "failover names regions only (no zone or subzone)")
        if "*" in origin or "*" in failover.to:
            report.error(item, "failover regions cannot contain the '*' wildcard")
    if (setting.failover or setting.failover_priority) and not has_outlier_detection:
        report.warn(path, "failover needs outlierDetection to notice unhealthy endpoints")


def _check_localities(localities: Sequence[tuple[str, str]], report: Report) -> None:
    """Localities are ``region[/zone[/subzone]]``; a ``*`` may only end one; none may overlap.

    Each entry is a (locality, path) pair.
    """
    parsed: list[tuple[str, tuple[str, ...]]] = []
    for locality, path in localities:
        stars = locality.count("*")
        if stars > 1 or (stars == 1 and not locality.endswith("*")):
            report.error(path, f"locality {locality!r}: '*' may appear once, at the end")
            continue
        parts = locality.split("/", 2)
        if any(not part for part in parts):
            report.error(path, f"locality {locality!r} has an empty region, zone or subzone")
            continue
        if parts[-1] == "*":
            parts = parts[:-1]
        elif stars:
            report.error(
                path, f"locality {locality!r}: '*' must be a whole region, zone or subzone"
            )
            continue
        for other_name, other in parsed:
            shorter, longer = (parts, other) if len(parts) <= len(other) else (other, parts)
            if tuple(longer[: len(shorter)]) == tuple(shorter):
                report.error(path, f"locality {locality!r} overlaps locality {other_name!r}")
                break
        else:
            parsed.append((locality, tuple(parts)))
