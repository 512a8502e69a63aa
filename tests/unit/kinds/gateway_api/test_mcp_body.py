"""Over MCP a Gateway API object's body is a google.protobuf.Struct of its spec (how
istiod carries kinds without protos), and comes back as the same validated object."""

from __future__ import annotations

import datetime

from google.protobuf import struct_pb2

from pilothouse.api.istio.mcp.v1alpha1 import resource_pb2
from pilothouse.config.load import Loader
from pilothouse.config.mcp_resource import (
    STRUCT_TYPE_URL,
    Rejection,
    ResourceDecoder,
    encode_resource,
)
from pilothouse.kinds.gateway_api.kinds import HTTP_ROUTE
from pilothouse.kinds.table import SCHEMAS

ROUTE = """\
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: edge}
spec:
  parentRefs: [{name: web, port: 8080}]
  rules: [{backendRefs: [{name: app, port: 80, weight: 3}]}]
"""
SEEN = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def test_a_route_travels_as_a_struct_and_back() -> None:
    (config,) = Loader(SCHEMAS, source="test").load_strict(ROUTE, "r.yaml")
    resource = resource_pb2.Resource.FromString(encode_resource(config, "1", SEEN))
    assert resource.body.type_url == STRUCT_TYPE_URL
    body = struct_pb2.Struct.FromString(resource.body.value)
    assert body["parentRefs"][0]["name"] == "web"
    assert HTTP_ROUTE.schema is not None
    decoded = ResourceDecoder(HTTP_ROUTE.schema, "mcp").decode(resource)
    assert not isinstance(decoded, Rejection)
    assert decoded.same_content(config)


def test_a_struct_that_breaks_the_schema_is_rejected_with_its_reason() -> None:
    (config,) = Loader(SCHEMAS, source="test").load_strict(ROUTE, "r.yaml")
    resource = resource_pb2.Resource.FromString(encode_resource(config, "1", SEEN))
    body = struct_pb2.Struct.FromString(resource.body.value)
    body["rules"][0]["backendRefs"][0]["weight"] = -5
    body["extra"] = 1
    resource.body.value = body.SerializeToString()
    assert HTTP_ROUTE.schema is not None
    rejected = ResourceDecoder(HTTP_ROUTE.schema, "mcp").decode(resource)
    assert isinstance(rejected, Rejection) and rejected.name == "edge/r"
    assert "extra" in rejected.reason
    del body["extra"]
    resource.body.value = body.SerializeToString()
    rejected = ResourceDecoder(HTTP_ROUTE.schema, "mcp").decode(resource)
    assert isinstance(rejected, Rejection)
    assert "spec.rules[0].backendRefs[0].weight: weight -5" in rejected.reason
