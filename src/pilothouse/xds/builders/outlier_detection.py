"""Istio ``OutlierDetection`` → Envoy ``OutlierDetection`` and the panic threshold.

The translation follows Istio's cluster builder:

- success-rate ejection is always off (``enforcing_success_rate`` 0);
- the deprecated ``consecutive_errors`` (when > 0) meant *gateway* errors
  (502/503/504, istio/api#617): it sets ``consecutive_gateway_failure`` with
  ``enforcing_consecutive_gateway_failure`` 100 and ``enforcing_consecutive_5xx``
  0.  The newer fields, when present, win over it;
- ``consecutive_5xx_errors`` present → ``consecutive_5xx`` = N and
  ``enforcing_consecutive_5xx`` = 100 if N > 0 else 0 (so an explicit 0 turns the
  check off); ``consecutive_gateway_errors`` likewise for gateway failures;
- ``interval`` and ``base_ejection_time`` are copied when set,
  ``max_ejection_percent`` when > 0;
- ``split_external_local_origin_errors`` → the same flag,
  ``enforcing_local_origin_success_rate`` 0, and, when
  ``consecutive_local_origin_failures`` > 0, that count with enforcement 100;
- ``min_health_percent`` → ``common_lb_config.healthy_panic_threshold``.  It is
  set whenever outlier detection is, even at 0: Istio turns Envoy's 50 % panic
  mode off by default.
"""

from __future__ import annotations

from envoy.config.cluster.v3 import outlier_detection_pb2  # type: ignore[import-untyped]
from envoy.type.v3 import percent_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2

_ENFORCED = 100


def build_outlier_detection(
    outlier: dr_pb2.OutlierDetection,
) -> outlier_detection_pb2.OutlierDetection:
    """The Envoy outlier detection for an Istio one."""
    out = outlier_detection_pb2.OutlierDetection()
    out.enforcing_success_rate.value = 0

    if outlier.consecutive_errors > 0:
        out.consecutive_gateway_failure.value = outlier.consecutive_errors
        out.enforcing_consecutive_gateway_failure.value = _ENFORCED
        out.enforcing_consecutive_5xx.value = 0
    if outlier.HasField("consecutive_5xx_errors"):
        count = outlier.consecutive_5xx_errors.value
        out.consecutive_5xx.value = count
        out.enforcing_consecutive_5xx.value = _ENFORCED if count > 0 else 0
    if outlier.HasField("consecutive_gateway_errors"):
        count = outlier.consecutive_gateway_errors.value
        out.consecutive_gateway_failure.value = count
        out.enforcing_consecutive_gateway_failure.value = _ENFORCED if count > 0 else 0

    if outlier.HasField("interval"):
        out.interval.CopyFrom(outlier.interval)
    if outlier.HasField("base_ejection_time"):
        out.base_ejection_time.CopyFrom(outlier.base_ejection_time)
    if outlier.max_ejection_percent > 0:
        out.max_ejection_percent.value = outlier.max_ejection_percent

    if outlier.split_external_local_origin_errors:
        out.split_external_local_origin_errors = True
        local_failures = outlier.consecutive_local_origin_failures.value
        if local_failures > 0:
            out.consecutive_local_origin_failure.value = local_failures
            out.enforcing_consecutive_local_origin_failure.value = _ENFORCED
        out.enforcing_local_origin_success_rate.value = 0
    return out


def healthy_panic_threshold(outlier: dr_pb2.OutlierDetection) -> percent_pb2.Percent:
    """``common_lb_config.healthy_panic_threshold`` for a cluster with outlier detection."""
    return percent_pb2.Percent(value=float(max(outlier.min_health_percent, 0)))
