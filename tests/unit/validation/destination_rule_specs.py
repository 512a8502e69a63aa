"""Building DestinationRule specs around a traffic policy, for the DestinationRule tests."""

from __future__ import annotations

from typing import Any

from pilothouse.api.istio.networking.v1alpha3.destination_rule_pb2 import DestinationRule
from pilothouse.config.validation import Report, validate_destination_rule

from .checking import run

TP = "spec.trafficPolicy"
LB = f"{TP}.loadBalancer"
CH = f"{LB}.consistentHash"
LOC = f"{LB}.localityLbSetting"
POOL = f"{TP}.connectionPool"
OD = f"{TP}.outlierDetection"
TLS = f"{TP}.tls"


def tp(**policy: Any) -> dict[str, Any]:
    return {"host": "reviews", "trafficPolicy": policy}


def lb(**settings: Any) -> dict[str, Any]:
    return tp(loadBalancer=settings)


def hashed(**consistent_hash: Any) -> dict[str, Any]:
    return lb(consistentHash=consistent_hash)


def locality(**setting: Any) -> dict[str, Any]:
    return tp(loadBalancer={"localityLbSetting": setting}, outlierDetection={"interval": "1s"})


def tls(**settings: Any) -> dict[str, Any]:
    return tp(tls=settings)


def check(spec: dict[str, Any]) -> Report:
    return run(validate_destination_rule, DestinationRule, spec, namespace="prod")
