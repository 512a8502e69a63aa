"""Unknown enum numbers (proto3 enums are open) are reported wherever they hide."""

from __future__ import annotations

from google.protobuf import struct_pb2

from pilothouse.api.istio.networking.v1alpha3.destination_rule_pb2 import DestinationRule
from pilothouse.api.istio.networking.v1alpha3.service_entry_pb2 import ServiceEntry
from pilothouse.config.validation.enums import check_enum_values
from pilothouse.config.validation.report import Report


def errors(message: object) -> list[str]:
    report = Report(namespace="default", name="x")
    check_enum_values(message, "spec", report)  # type: ignore[arg-type]
    return [f"{f.path}: {f.message}" for f in report.findings]


def test_known_values_pass() -> None:
    assert errors(ServiceEntry(hosts=["a.example.com"], resolution=ServiceEntry.DNS)) == []


def test_top_level_unknown_value() -> None:
    spec = ServiceEntry(hosts=["a.example.com"])
    spec.resolution = 42  # type: ignore[assignment]
    assert errors(spec) == [
        "spec.resolution: unknown Resolution value 42 "
        "(known: NONE, STATIC, DNS, DNS_ROUND_ROBIN, DYNAMIC_DNS)"
    ]


def test_nested_and_repeated_messages() -> None:
    spec = DestinationRule(host="a")
    spec.traffic_policy.load_balancer.simple = 77  # type: ignore[assignment]
    spec.subsets.add(name="v1").traffic_policy.tls.mode = 9  # type: ignore[assignment]
    found = errors(spec)
    assert len(found) == 2
    assert found[0].startswith("spec.trafficPolicy.loadBalancer.simple: unknown SimpleLB value 77")
    assert found[1].startswith("spec.subsets[0].trafficPolicy.tls.mode: unknown TLSmode value 9")


def test_map_values_and_recursive_types() -> None:
    inner = struct_pb2.Struct()
    inner.fields["deep"].null_value = 3  # type: ignore[assignment]
    outer = struct_pb2.Struct()
    outer.fields["a"].struct_value.CopyFrom(inner)
    outer.fields["b"].string_value = "fine"
    assert errors(outer) == [
        "spec.fields[a].structValue.fields[deep].nullValue: unknown NullValue value 3 "
        "(known: NULL_VALUE)"
    ]
