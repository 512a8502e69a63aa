"""Which EnvoyFilter patches apply to a proxy, and in what order (istiod's selection)."""

from __future__ import annotations

import datetime
from typing import Any

from google.protobuf.json_format import ParseDict

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config
from pilothouse.push.envoy_filters import EnvoyFilterIndex, ProxyPatches
from pilothouse.push.proxy import ProxyIdentity, parse_node

REMOVE_CLUSTER = {"applyTo": "CLUSTER", "patch": {"operation": "REMOVE"}}


def envoy_filter(
    name: str,
    namespace: str,
    *patches: dict[str, Any],
    created: int = 0,
    version: str = "1",
    **spec: Any,
) -> Config:
    message = ParseDict({"configPatches": list(patches or [REMOVE_CLUSTER]), **spec}, EnvoyFilter())
    return Config(
        "EnvoyFilter",
        name,
        namespace,
        message,
        resource_version=version,
        creation_time=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
        + datetime.timedelta(seconds=created),
    )


def proxy(
    namespace: str = "shop", labels: str = '{"app": "cart"}', **metadata: str
) -> ProxyIdentity:
    kind = "router" if "gateway" in labels else "sidecar"
    node = f"{kind}~10.0.0.1~pod.{namespace}~{namespace}.svc.cluster.local"
    return parse_node(node, {"LABELS": labels, **metadata})


def names(patches: ProxyPatches) -> list[str]:
    return [f"{r.key.namespace}/{r.key.name}" for r in patches.rules]


def index(*configs: Config) -> EnvoyFilterIndex:
    return EnvoyFilterIndex(configs, MeshSettings())


def test_root_and_own_namespace_filters_apply_and_others_do_not() -> None:
    found = index(
        envoy_filter("mesh", "istio-system"),
        envoy_filter("local", "shop"),
        envoy_filter("elsewhere", "bank"),
    ).for_proxy(proxy(), None)
    assert names(found) == ["istio-system/mesh", "shop/local"]


def test_workload_selector_labels_must_all_be_the_proxy_s() -> None:
    filters = index(
        envoy_filter("cart", "shop", workloadSelector={"labels": {"app": "cart"}}),
        envoy_filter("pay", "shop", workloadSelector={"labels": {"app": "pay"}}),
        envoy_filter("both", "shop", workloadSelector={"labels": {"app": "cart", "v": "2"}}),
    )
    assert names(filters.for_proxy(proxy(), None)) == ["shop/cart"]
    assert names(filters.for_proxy(proxy(labels='{"app": "cart", "v": "2"}'), None)) == [
        "shop/both",
        "shop/cart",
    ]


def test_target_refs_reach_only_the_named_kubernetes_gateway_of_the_namespace() -> None:
    refs = [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "web"}]
    filters = index(
        envoy_filter("refs", "shop", targetRefs=refs),
        envoy_filter("root-refs", "istio-system", targetRefs=refs),
    )
    web = '{"gateway.networking.k8s.io/gateway-name": "web", "gateway": "1"}'
    assert names(filters.for_proxy(proxy(labels=web), None)) == ["shop/refs"]
    assert names(filters.for_proxy(proxy(), None)) == []  # not a Gateway API proxy


def test_order_is_priority_then_root_first_then_creation_then_name() -> None:
    filters = index(
        envoy_filter("b-late", "shop", created=20),
        envoy_filter("a-late", "shop", created=20),
        envoy_filter("early", "shop", created=10),
        envoy_filter("root", "istio-system", created=30),
        envoy_filter("first", "shop", created=40, priority=-1),
        envoy_filter("last", "istio-system", created=0, priority=5),
    )
    assert names(filters.for_proxy(proxy(), None)) == [
        "shop/first",
        "istio-system/root",
        "shop/early",
        "shop/a-late",
        "shop/b-late",
        "istio-system/last",
    ]


def test_proxy_version_and_metadata_are_matched_per_patch() -> None:
    versioned = {
        "applyTo": "CLUSTER",
        "match": {"proxy": {"proxyVersion": r"^1\.2[0-9]"}},
        "patch": {"operation": "REMOVE"},
    }
    tagged = {
        "applyTo": "CLUSTER",
        "match": {"proxy": {"metadata": {"TIER": "gold"}}},
        "patch": {"operation": "REMOVE"},
    }
    filters = index(envoy_filter("f", "shop", versioned, tagged, REMOVE_CLUSTER))
    positions = [r.position for r in filters.for_proxy(proxy(), None).rules]
    assert positions == [2]  # no version: never matches a version pattern
    matched = filters.for_proxy(proxy(ISTIO_VERSION="1.24.0", TIER="gold"), None)
    assert [r.position for r in matched.rules] == [0, 1, 2]
    assert [r.position for r in filters.for_proxy(proxy(ISTIO_VERSION="1.9.0"), None).rules] == [2]


def test_inserts_outside_lists_become_adds_and_undecodable_values_are_dropped() -> None:
    insert_cluster = {"applyTo": "CLUSTER", "patch": {"operation": "INSERT_FIRST", "value": {}}}
    bad = {"applyTo": "CLUSTER", "patch": {"operation": "ADD", "value": {"nope": 1}}}
    (rule,) = index(envoy_filter("f", "shop", insert_cluster, bad)).for_proxy(proxy(), None).rules
    assert rule.operation == EnvoyFilter.Patch.ADD and rule.position == 0


def test_what_a_proxy_gets_is_a_cache_input_that_changes_with_each_edit() -> None:
    first = index(envoy_filter("f", "shop", version="1")).for_proxy(proxy(), None)
    again = index(envoy_filter("f", "shop", version="1")).for_proxy(proxy(), None)
    edited = index(envoy_filter("f", "shop", version="2")).for_proxy(proxy(), None)
    assert first == again and hash(first) == hash(again)
    assert first != edited


def test_a_waypoint_patch_reaches_no_proxy_and_is_reported_dropped() -> None:
    waypoint = {
        "applyTo": "HTTP_ROUTE",
        "match": {"context": "WAYPOINT", "waypoint": {"route": {"name": "default"}}},
        "patch": {"operation": "MERGE", "value": {"name": "renamed"}},
    }
    filters = index(envoy_filter("wp", "shop", waypoint, REMOVE_CLUSTER))
    assert [r.position for r in filters.for_proxy(proxy(), None).rules] == [1]
    gateway = proxy(labels='{"istio": "ingressgateway"}')
    assert [r.position for r in filters.for_proxy(gateway, None).rules] == [1]
    assert [(r.position, str(r.status)) for r in filters.statuses()] == [
        (0, "dropped"),
        (1, "no proxy"),
    ]
