"""Node metadata read straight from its Struct equals what the JSON printer reads."""

from __future__ import annotations

import math

import pytest
from envoy.config.core.v3 import base_pb2  # type: ignore[import-untyped]
from google.protobuf import json_format, struct_pb2

from pilothouse.push.proxy import BadNode
from pilothouse.xds.server.ads import node_identity
from pilothouse.xds.server.node_metadata import struct_dict

ENVOY_LIKE = {
    "NAMESPACE": "shop",
    "CLUSTER_ID": "Kubernetes",
    "INSTANCE_IPS": "10.1.2.3,fd00::3",
    "LABELS": {"app": "cart", "version": "v2"},
    "ANNOTATIONS": {"sidecar.istio.io/status": '{"containers":["istio-proxy"]}'},
    "INTERCEPTION_MODE": "REDIRECT",
    "PROXY_CONFIG": {"concurrency": 2.0, "holdApplicationUntilProxyStarts": True},
    "APP_CONTAINERS": ["cart", "sidecar"],
    "EMPTY": {},
    "NOTHING": None,
    "NUMBERS": [0.5, -3.0, 1e300],
    "NESTED": {"a": [{"b": [True, False, None, "x"]}]},
}


def _struct(values: dict[str, object]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(values)
    return struct


def test_struct_dict_equals_the_json_printer() -> None:
    struct = _struct(ENVOY_LIKE)
    read = struct_dict(struct)
    assert read == json_format.MessageToDict(struct)
    assert list(read) == list(json_format.MessageToDict(struct))
    assert isinstance(read["PROXY_CONFIG"]["concurrency"], float)
    unset = struct_pb2.Struct()
    unset.fields["blank"].CopyFrom(struct_pb2.Value())  # no kind set: null, as the printer says
    assert struct_dict(unset) == json_format.MessageToDict(unset) == {"blank": None}


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_a_number_json_cannot_express_is_refused(number: float) -> None:
    struct = _struct({"LABELS": {"app": "a"}, "BAD": [number]})
    with pytest.raises(ValueError):
        struct_dict(struct)
    node = base_pb2.Node(id="sidecar~10.0.0.1~a-1.shop~shop.svc.cluster.local")
    node.metadata.CopyFrom(struct)
    with pytest.raises(BadNode, match="cannot be read as JSON"):
        node_identity(node)


def test_node_identity_reads_the_metadata() -> None:
    node = base_pb2.Node(id="sidecar~10.1.2.3~cart-1.shop~shop.svc.cluster.local")
    node.metadata.CopyFrom(_struct(ENVOY_LIKE))
    proxy = node_identity(node)
    assert proxy.namespace == "shop"
    assert proxy.ip_addresses == ("10.1.2.3", "fd00::3")
    assert dict(proxy.labels) == {"app": "cart", "version": "v2"}
    assert (
        proxy.metadata["PROXY_CONFIG"]
        == '{"concurrency":2.0,"holdApplicationUntilProxyStarts":true}'
    )
