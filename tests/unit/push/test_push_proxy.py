"""Parsing Istio node ids and metadata into proxy identities."""

from __future__ import annotations

import pytest

from pilothouse.push.proxy import BadNode, Generator, ProxyType, parse_node


def test_sidecar_node_with_metadata() -> None:
    proxy = parse_node(
        "sidecar~10.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local",
        {
            "NAMESPACE": "bookinfo",
            "CLUSTER_ID": "Kubernetes",
            "LABELS": {"app": "productpage", "version": "v1"},
            "ISTIO_VERSION": "1.28.0",
            "INSTANCE_IPS": "10.0.0.1,fd00::1",
        },
        node_cluster="productpage.bookinfo",
    )
    assert proxy.type is ProxyType.SIDECAR
    assert proxy.namespace == "bookinfo" and proxy.cluster_id == "Kubernetes"
    assert dict(proxy.labels) == {"app": "productpage", "version": "v1"}
    assert proxy.ip_addresses == ("10.0.0.1", "fd00::1")
    assert proxy.pod_name == "productpage-v1" and proxy.generator is Generator.ENVOY
    assert proxy.istio_version == "1.28.0"


def test_namespace_from_id_then_domain() -> None:
    assert parse_node("router~10.0.0.2~gw-1.ingress~x.svc.cluster.local").namespace == "ingress"
    assert parse_node("router~10.0.0.2~gw~edge.svc.cluster.local").namespace == "edge"


def test_generator_and_labels_as_json() -> None:
    proxy = parse_node(
        "sidecar~10.0.0.3~client.default~default.svc.cluster.local",
        {"GENERATOR": "grpc", "LABELS": '{"app": "client"}'},
    )
    assert proxy.generator is Generator.GRPC and dict(proxy.labels) == {"app": "client"}


@pytest.mark.parametrize(
    ("node_id", "metadata", "text"),
    [
        ("", None, "node id is empty"),
        ("sidecar~10.0.0.1~a.b", None, "has 3 part(s)"),
        ("gateway~10.0.0.1~a.b~b.svc", None, "unknown proxy type 'gateway'"),
        ("sidecar~999.0.0.1~a.b~b.svc", None, "'999.0.0.1' is not an IP address"),
        ("sidecar~10.0.0.1~a~", None, "no namespace"),
        ("sidecar~10.0.0.1~a.b~b.svc", {"GENERATOR": "magic"}, "unknown GENERATOR 'magic'"),
        ("sidecar~10.0.0.1~a.b~b.svc", {"LABELS": "{not json"}, "LABELS is not a JSON object"),
        ("sidecar~10.0.0.1~a.b~b.svc", {"LABELS": [1]}, "LABELS must be an object"),
        ("sidecar~" + "1" * 2000, None, "longer than 1024"),
    ],
)
def test_bad_nodes(node_id: str, metadata: dict[str, object] | None, text: str) -> None:
    with pytest.raises(BadNode) as caught:
        parse_node(node_id, metadata)
    assert text in str(caught.value)


@pytest.mark.parametrize(
    ("node_id", "text"),
    [
        ("~10.0.0.1~a.b~b.svc", "the type (1st part) is empty"),
        ("sidecar~~~", "the ip (2nd part) is empty"),
        ("sidecar~~pod.ns~ns.svc.cluster.local", "the ip (2nd part) is empty"),
        ("sidecar~10.0.0.1~~ns.svc.cluster.local", "the id (3rd part, pod.namespace) is empty"),
        ("router~10.0.0.1~~", "the id (3rd part, pod.namespace) is empty"),
    ],
)
def test_empty_parts_are_named(node_id: str, text: str) -> None:
    with pytest.raises(BadNode) as caught:
        parse_node(node_id)
    assert text in str(caught.value)


def test_empty_ip_part_with_instance_ips_and_empty_domain_stay_accepted() -> None:
    """As istiod: the address may come from INSTANCE_IPS alone, and the domain may be
    empty when the id names the namespace."""
    proxy = parse_node("sidecar~~pod.ns~", {"INSTANCE_IPS": "10.0.0.7"})
    assert proxy.ip_addresses == ("10.0.0.7",) and proxy.namespace == "ns"
    with pytest.raises(BadNode, match="the ip"):
        parse_node("sidecar~~pod.ns~", {"INSTANCE_IPS": " , "})
