"""Test helpers: Istio messages from their YAML/JSON spelling."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2


def policy(spec: dict[str, Any]) -> dr_pb2.TrafficPolicy:
    """A TrafficPolicy from its camelCase JSON form."""
    return json_format.ParseDict(spec, dr_pb2.TrafficPolicy())


def rule(spec: dict[str, Any]) -> dr_pb2.DestinationRule:
    """A DestinationRule spec from its camelCase JSON form."""
    return json_format.ParseDict(spec, dr_pb2.DestinationRule())
