"""The Gateway API's kinds as table rows.

Their specs are held in pilothouse's own protobuf messages (``k8s.gateway.v1``, written
from the CRDs; the Gateway API has no protos), so every source, the loader's strict
decoding with field paths, etcd, the webhook and ``apply/get/delete`` treat them as they
treat Istio's kinds. Over MCP their body is a ``google.protobuf.Struct`` holding the
spec's JSON (:attr:`~pilothouse.config.schema.Schema.struct_body`), which is how istiod
carries kinds that are Go structs rather than protos.

The Gateway API's ``Gateway`` is kept under the kind name ``KubernetesGateway`` (istiod's
own name for it) so its keys never meet Istio's ``Gateway``; manifests still say
``kind: Gateway``. They are indexed together as the push context's ``gateway_api``
translation, which records what each generated Istio Gateway and VirtualService was
made from (:mod:`.audience`): a change concerns the proxies whose generated config it
went (or goes) into, before or after the change (``TRANSLATED_FROM``): a Gateway or
GatewayClass its gateway proxies (those labelled with the Gateway's name); a route the
gateway proxies of the listeners it attaches to and, for a GAMMA route, the sidecars
that see its Service's host. A ReferenceGrant concerns the proxies whose generated
config refers into its namespace (``REFERENCED_NAMESPACE``).
"""

from __future__ import annotations

from typing import Final

from google.protobuf.message import Message

from pilothouse.api.k8s.gateway.v1 import gateway_pb2, reference_grant_pb2, routes_pb2
from pilothouse.config.schema import Schema, Validator
from pilothouse.kinds.gateway_api.gateway_rules import (
    validate_gateway,
    validate_gateway_class,
    validate_reference_grant,
)
from pilothouse.kinds.gateway_api.http_rules import validate_http_route
from pilothouse.kinds.gateway_api.route_rules import (
    validate_grpc_route,
    validate_tcp_route,
    validate_tls_route,
)
from pilothouse.kinds.kind import Audience, Kind

GROUP: Final = "gateway.networking.k8s.io"
INDEX: Final = "gateway_api"
STANDARD: Final = ("v1", "v1beta1", "v1alpha2")
CATEGORY: Final = "gateway-api"
"""The CRDs' category: ``kubectl get gateway-api`` lists every kind of the group."""
GATEWAY_KIND: Final = "KubernetesGateway"
"""The kind name of the Gateway API's Gateway in keys (manifests say ``Gateway``)."""


def _row(
    kind: str,
    message: type[Message],
    plural: str,
    check: Validator,
    versions: tuple[str, ...] = STANDARD,
    *,
    namespaced: bool = True,
    wire_kind: str = "",
) -> Schema:
    return Schema(
        kind=kind,
        group=GROUP,
        versions=versions,
        message=message,
        plural=plural,
        collection=f"k8s/gateway_api/{versions[0]}/{plural}",
        namespaced=namespaced,
        validator=check,
        wire_kind=wire_kind,
        struct_body=True,
    )


def _kind(schema: Schema, *short_names: str, audience: Audience = Audience.TRANSLATED_FROM) -> Kind:
    return Kind(
        name=schema.kind,
        schema=schema,
        short_names=short_names,
        audience=audience,
        index=INDEX,
    )


GATEWAY_CLASS = _kind(
    _row(
        "GatewayClass",
        gateway_pb2.GatewayClass,
        "gatewayclasses",
        validate_gateway_class,
        namespaced=False,
    ),
    "gc",
)
GATEWAY = _kind(
    _row(GATEWAY_KIND, gateway_pb2.Gateway, "gateways", validate_gateway, wire_kind="Gateway"),
    "gtw",
)
HTTP_ROUTE = _kind(_row("HTTPRoute", routes_pb2.HTTPRoute, "httproutes", validate_http_route))
GRPC_ROUTE = _kind(_row("GRPCRoute", routes_pb2.GRPCRoute, "grpcroutes", validate_grpc_route))
TCP_ROUTE = _kind(
    _row("TCPRoute", routes_pb2.TCPRoute, "tcproutes", validate_tcp_route, ("v1alpha2",))
)
TLS_ROUTE = _kind(
    _row("TLSRoute", routes_pb2.TLSRoute, "tlsroutes", validate_tls_route, ("v1alpha2", "v1alpha3"))
)
REFERENCE_GRANT = _kind(
    _row(
        "ReferenceGrant",
        reference_grant_pb2.ReferenceGrant,
        "referencegrants",
        validate_reference_grant,
        ("v1beta1", "v1", "v1alpha2"),
    ),
    "refgrant",
    audience=Audience.REFERENCED_NAMESPACE,
)

KINDS: Final[tuple[Kind, ...]] = (
    GATEWAY_CLASS,
    GATEWAY,
    HTTP_ROUTE,
    GRPC_ROUTE,
    TCP_ROUTE,
    TLS_ROUTE,
    REFERENCE_GRANT,
)
"""The Gateway API kinds, in the table's order."""
