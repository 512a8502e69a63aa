"""Istio objects and MCP-over-xDS building blocks shared by the MCP-over-xDS unit tests."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from google.protobuf import any_pb2

from pilothouse.api.istio.mcp.v1alpha1 import resource_pb2
from pilothouse.api.istio.networking.v1alpha3 import service_entry_pb2
from pilothouse.config.load import Loader
from pilothouse.config.mcp_resource import MCP_RESOURCE_TYPE_URL
from pilothouse.config.model import Config
from pilothouse.kinds.table import SCHEMAS

SERVICE_ENTRY = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: httpbin
  namespace: shop
  labels: {app: httpbin, tier: backend}
  annotations: {owner: team-a}
  creationTimestamp: "2025-03-04T05:06:07Z"
spec:
  hosts: [httpbin.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 8000, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.7, ports: {http: 18000}}]
"""

VIRTUAL_SERVICE = """\
apiVersion: networking.istio.io/v1beta1
kind: VirtualService
metadata: {name: reviews, namespace: bookinfo}
spec:
  hosts: [reviews]
  http:
  - timeout: 3s
    route:
    - destination: {host: reviews, subset: v2}
      weight: 100
"""

PEER_AUTHENTICATION = """\
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: istio-system}
spec:
  mtls: {mode: STRICT}
"""


AUTHORIZATION_POLICY = """\
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: reviews-viewer, namespace: shop}
spec:
  selector: {matchLabels: {app: reviews}}
  action: ALLOW
  rules:
  - from:
    - source: {principals: [cluster.local/ns/shop/sa/productpage]}
    to:
    - operation: {methods: [GET], paths: [/reviews/*]}
    when:
    - key: request.headers[x-tenant]
      values: [blue]
"""

REQUEST_AUTHENTICATION = """\
apiVersion: security.istio.io/v1beta1
kind: RequestAuthentication
metadata: {name: jwt, namespace: shop}
spec:
  jwtRules:
  - issuer: https://issuer.example
    jwksUri: https://issuer.example/jwks.json
    fromHeaders: [{name: x-token, prefix: "Bearer "}]
    outputPayloadToHeader: x-jwt-payload
"""


def load(text: str, resource_version: str = "7", source: str = "fs:///mesh") -> Config:
    """One object from YAML, with a resource version as a store would give it."""
    (config,) = Loader(SCHEMAS, source=source).load_strict(text, "test.yaml")
    return dataclasses.replace(config, resource_version=resource_version)


def packed_resource(
    name: str,
    spec: Any,
    *,
    body_type_url: str | None = None,
    version: str = "1",
    labels: dict[str, str] | None = None,
    created: datetime.datetime | None = None,
) -> any_pb2.Any:
    """An ``Any(istio.mcp.v1alpha1.Resource)`` entry as a server would send it."""
    resource = resource_pb2.Resource()
    resource.metadata.name = name
    resource.metadata.version = version
    resource.metadata.labels.update(labels or {})
    if created is not None:
        resource.metadata.create_time.FromDatetime(created)
    resource.body.type_url = body_type_url or f"type.googleapis.com/{spec.DESCRIPTOR.full_name}"
    resource.body.value = spec.SerializeToString()
    return any_pb2.Any(type_url=MCP_RESOURCE_TYPE_URL, value=resource.SerializeToString())


def dns_service_entry(host: str = "api.example.com") -> service_entry_pb2.ServiceEntry:
    """A valid ServiceEntry spec for ``host`` (DNS resolution, one TLS port)."""
    spec = service_entry_pb2.ServiceEntry(hosts=[host])
    spec.resolution = service_entry_pb2.ServiceEntry.DNS
    port = spec.ports.add()
    port.number, port.name, port.protocol = 443, "https", "TLS"
    return spec
