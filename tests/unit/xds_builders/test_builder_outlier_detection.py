"""OutlierDetection → Envoy outlier_detection and the healthy panic threshold."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from pilothouse.xds.builders.cluster import ClusterInputs, build_cluster
from tests.unit.xds_builders.policies import policy

NAME = "outbound|80||svc.example"
OFF = {"enforcing_success_rate": 0}


def outlier_json(spec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    cluster = build_cluster(ClusterInputs(name=NAME, policy=policy({"outlierDetection": spec})))
    as_json = json_format.MessageToDict(cluster, preserving_proto_field_name=True)
    return as_json["outlier_detection"], as_json["common_lb_config"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({}, OFF, id="empty-only-success-rate-off"),
        pytest.param(
            {"consecutive5xxErrors": 5},
            {**OFF, "consecutive_5xx": 5, "enforcing_consecutive_5xx": 100},
            id="5xx",
        ),
        pytest.param(
            {"consecutive5xxErrors": 0},
            {**OFF, "consecutive_5xx": 0, "enforcing_consecutive_5xx": 0},
            id="5xx-explicit-zero-disables",
        ),
        pytest.param(
            {"consecutiveGatewayErrors": 2},
            {
                **OFF,
                "consecutive_gateway_failure": 2,
                "enforcing_consecutive_gateway_failure": 100,
            },
            id="gateway",
        ),
        pytest.param(
            {"consecutiveGatewayErrors": 0},
            {
                **OFF,
                "consecutive_gateway_failure": 0,
                "enforcing_consecutive_gateway_failure": 0,
            },
            id="gateway-zero",
        ),
        pytest.param(
            {"consecutiveErrors": 4},
            {
                **OFF,
                "consecutive_gateway_failure": 4,
                "enforcing_consecutive_gateway_failure": 100,
                "enforcing_consecutive_5xx": 0,
            },
            id="deprecated-consecutive-errors-are-gateway-errors",
        ),
        pytest.param(
            {"consecutiveErrors": 4, "consecutive5xxErrors": 6},
            {
                **OFF,
                "consecutive_gateway_failure": 4,
                "enforcing_consecutive_gateway_failure": 100,
                "consecutive_5xx": 6,
                "enforcing_consecutive_5xx": 100,
            },
            id="new-5xx-field-wins-over-deprecated",
        ),
        pytest.param(
            {"interval": "5s", "baseEjectionTime": "60s", "maxEjectionPercent": 40},
            {
                **OFF,
                "interval": "5s",
                "base_ejection_time": "60s",
                "max_ejection_percent": 40,
            },
            id="timing-and-percent",
        ),
        pytest.param(
            {"splitExternalLocalOriginErrors": True, "consecutiveLocalOriginFailures": 3},
            {
                **OFF,
                "split_external_local_origin_errors": True,
                "consecutive_local_origin_failure": 3,
                "enforcing_consecutive_local_origin_failure": 100,
                "enforcing_local_origin_success_rate": 0,
            },
            id="local-origin",
        ),
        pytest.param(
            {"splitExternalLocalOriginErrors": True},
            {
                **OFF,
                "split_external_local_origin_errors": True,
                "enforcing_local_origin_success_rate": 0,
            },
            id="split-without-count",
        ),
        pytest.param(
            {"consecutiveLocalOriginFailures": 3},
            OFF,
            id="local-origin-count-needs-split",
        ),
    ],
)
def test_builder_outlier_detection(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    outlier, _ = outlier_json(spec)
    assert outlier == expected


@pytest.mark.parametrize(("percent", "threshold"), [(None, 0.0), (0, 0.0), (25, 25.0)])
def test_builder_outlier_panic_threshold(percent: int | None, threshold: float) -> None:
    spec = {} if percent is None else {"minHealthPercent": percent}
    cluster = build_cluster(ClusterInputs(name=NAME, policy=policy({"outlierDetection": spec})))
    assert cluster.common_lb_config.HasField("healthy_panic_threshold")
    assert cluster.common_lb_config.healthy_panic_threshold.value == threshold


def test_builder_no_outlier_detection_no_panic_threshold() -> None:
    cluster = build_cluster(ClusterInputs(name=NAME))
    assert not cluster.HasField("outlier_detection")
    assert not cluster.common_lb_config.HasField("healthy_panic_threshold")
    assert cluster.HasField("common_lb_config")
