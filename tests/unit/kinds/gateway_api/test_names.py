"""The names a user may type for the Gateway API's kinds (``get``, ``apply``, ``delete``,
``/debug/configz?kind=``): kubectl's short names, singular and plural names, the group
suffix, and the CRDs' category ``gateway-api``."""

from __future__ import annotations

import pytest

from pilothouse.kinds.names import CATEGORIES, SHORT_NAMES, UnknownKind, resolve_kinds
from pilothouse.kinds.table import SCHEMAS

GROUP = "gateway.networking.k8s.io"


def kinds(text: str) -> list[str]:
    return [schema.kind for schema in resolve_kinds(text, SCHEMAS)]


def test_short_names_are_the_crds_own() -> None:
    declared = {s: k for s, k in SHORT_NAMES.items() if k in CATEGORIES["gateway-api"]}
    assert declared == {
        "gc": "GatewayClass",
        "gtw": "KubernetesGateway",
        "refgrant": "ReferenceGrant",
    }


@pytest.mark.parametrize(
    ("typed", "kind"),
    [
        ("gtw", "KubernetesGateway"),
        (f"gtw.{GROUP}", "KubernetesGateway"),
        (f"gateways.{GROUP}", "KubernetesGateway"),
        (f"gateway.{GROUP}", "KubernetesGateway"),
        ("gateway", "Gateway"),  # Istio's, as before the Gateway API came
        ("gc", "GatewayClass"),
        ("gatewayclasses", "GatewayClass"),
        ("httproute", "HTTPRoute"),
        ("HTTPRoutes", "HTTPRoute"),
        (f"httproutes.{GROUP}", "HTTPRoute"),
        ("grpcroute", "GRPCRoute"),
        ("tcproutes", "TCPRoute"),
        ("tlsroute", "TLSRoute"),
        ("refgrant", "ReferenceGrant"),
        ("referencegrants", "ReferenceGrant"),
    ],
)
def test_each_name_kubectl_takes_finds_its_kind(typed: str, kind: str) -> None:
    assert kinds(typed) == [kind]


def test_the_category_names_every_kind_of_the_group_once() -> None:
    every = [
        "GatewayClass", "KubernetesGateway", "HTTPRoute", "GRPCRoute", "TCPRoute", "TLSRoute",
        "ReferenceGrant",
    ]  # fmt: skip
    assert kinds("gateway-api") == every
    assert kinds("httproute,gateway-api,vs") == [
        "HTTPRoute",
        *every[:2],
        *every[3:],
        "VirtualService",
    ]
    with pytest.raises(UnknownKind, match="did you mean 'gateway-api'"):
        resolve_kinds("gateway-apis", SCHEMAS)
    with pytest.raises(UnknownKind, match="did you mean 'httproute'"):
        resolve_kinds("httproot", SCHEMAS)
