"""ProxyConfig: the selector and the worker-thread count, checked as istiod checks them."""

from __future__ import annotations

from pilothouse.api.istio.networking.v1beta1.proxy_config_pb2 import ProxyConfig
from pilothouse.config.validation.labels import check_workload_selector
from pilothouse.config.validation.report import Report


def validate_proxy_config(spec: ProxyConfig, report: Report) -> None:
    """istiod's rules: a selector's labels as for any workload selector; a negative
    ``concurrency`` is warned about (istiod accepts it with a warning), and the
    environment's names must not be empty."""
    if spec.HasField("selector"):
        check_workload_selector(spec.selector.match_labels, "spec.selector.matchLabels", report)
    if spec.HasField("concurrency") and spec.concurrency.value < 0:
        report.warn(
            "spec.concurrency",
            f"concurrency {spec.concurrency.value} must be greater than or equal to 0",
        )
    for name in spec.environment_variables:
        if not name:
            report.error("spec.environmentVariables", "an environment variable needs a name")
