"""Decoding plain data into Istio protobuf specs: strict, with field paths."""

from __future__ import annotations

from typing import Any

import pytest

from pilothouse.api.istio.networking.v1alpha3 import (
    destination_rule_pb2,
    service_entry_pb2,
    virtual_service_pb2,
)
from pilothouse.api.istio.security.v1beta1 import peer_authentication_pb2
from pilothouse.config.decode import decode_message

VS = virtual_service_pb2.VirtualService


def test_istio_yaml_decodes() -> None:
    spec, problems = decode_message(
        {
            "hosts": ["reviews"],
            "http": [
                {
                    "match": [{"headers": {"end-user": {"exact": "jason"}}}],
                    "route": [{"destination": {"host": "reviews", "subset": "v2"}, "weight": 100}],
                    "timeout": "1m30s",
                    "retries": {"attempts": 3, "perTryTimeout": "250ms"},
                }
            ],
        },
        VS,
    )
    assert problems == ()
    assert isinstance(spec, VS)
    route = spec.http[0]
    assert route.match[0].headers["end-user"].exact == "jason"
    assert route.timeout.seconds == 90
    assert route.retries.per_try_timeout.nanos == 250_000_000


def test_snake_case_keys_are_accepted_too() -> None:
    spec, problems = decode_message({"hosts": ["a"], "export_to": ["."]}, VS)
    assert problems == () and spec is not None and list(spec.export_to) == ["."]


@pytest.mark.parametrize(
    ("data", "message", "path", "text"),
    [
        (
            {"http": [{"route": [{}, {"destination": {"hostt": "x"}}]}]},
            VS,
            "spec.http[0].route[1].destination.hostt",
            "unknown field (did you mean host?)",
        ),
        ({"hosts": "a"}, VS, "spec.hosts", "expected a list, got the string 'a'"),
        ({"hosts": [1]}, VS, "spec.hosts[0]", "expected a string, got the number 1 (quote it)"),
        ({"http": [{"timeout": "5 minutes"}]}, VS, "spec.http[0].timeout", "invalid duration"),
        ({"http": [{"timeout": 5}]}, VS, "spec.http[0].timeout", "expected a duration"),
        (
            {"http": [{"route": [{"weight": "ten"}]}]},
            VS,
            "spec.http[0].route[0].weight",
            "expected a whole number",
        ),
        (
            {"ports": [{"number": -1}]},
            service_entry_pb2.ServiceEntry,
            "spec.ports[0].number",
            "out of range",
        ),
        (
            {"resolution": "MAGIC"},
            service_entry_pb2.ServiceEntry,
            "spec.resolution",
            "unknown value 'MAGIC'; expected one of NONE, STATIC, DNS",
        ),
        (
            {"http": [{"match": [{"uri": {"exact": "/a", "prefix": "/b"}}]}]},
            VS,
            "spec.http[0].match[0].uri.prefix",
            "only one of exact and prefix may be set",
        ),
        (
            {"http": [{"match": [{"headers": {"x": {"exactt": "a"}}}]}]},
            VS,
            "spec.http[0].match[0].headers[x].exactt",
            "unknown field",
        ),
        (
            {"trafficPolicy": {"tls": {"insecureSkipVerify": "yes"}}},
            destination_rule_pb2.DestinationRule,
            "spec.trafficPolicy.tls.insecureSkipVerify",
            "expected true or false",
        ),
        (
            {"portLevelMtls": {"http": {"mode": "STRICT"}}},
            peer_authentication_pb2.PeerAuthentication,
            "spec.portLevelMtls[http]",
            "expected a whole number",
        ),
        (
            {"selector": {"matchLabels": {"a": "b"}}, "portLevelMtls": {}},
            peer_authentication_pb2.PeerAuthentication,
            "spec.portLevelMtls",
            "at least one entry",
        ),
        ({"http": {"a": 1}}, VS, "spec.http", "expected a list"),
        ("text", VS, "spec", "expected an object"),
    ],
)
def test_problems_name_the_field(data: Any, message: Any, path: str, text: str) -> None:
    spec, problems = decode_message(data, message)
    assert spec is None
    assert any(p.path == path and text in p.message for p in problems), problems


@pytest.mark.parametrize(
    ("written", "seconds", "nanos"),
    [
        ("5s", 5, 0),
        ("100ms", 0, 100_000_000),
        ("1h", 3600, 0),
        ("1.5s", 1, 500_000_000),
        ("2m3s", 123, 0),
        ("10us", 0, 10_000),
        ("0s", 0, 0),
    ],
)
def test_go_durations(written: str, seconds: int, nanos: int) -> None:
    spec, problems = decode_message({"http": [{"timeout": written}]}, VS)
    assert problems == () and spec is not None
    assert (spec.http[0].timeout.seconds, spec.http[0].timeout.nanos) == (seconds, nanos)


def test_null_and_empty_spec() -> None:
    spec, problems = decode_message(None, VS)
    assert problems == () and spec == VS()
    spec, problems = decode_message({"hosts": None}, VS)
    assert problems == () and spec == VS()


def test_map_with_integer_keys() -> None:
    spec, problems = decode_message(
        {"selector": {"matchLabels": {"app": "a"}}, "portLevelMtls": {"8080": {"mode": "DISABLE"}}},
        peer_authentication_pb2.PeerAuthentication,
    )
    assert problems == () and spec is not None
    assert spec.port_level_mtls[8080].mode == 1
