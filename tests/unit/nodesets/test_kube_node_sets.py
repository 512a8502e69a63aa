"""Node sets from Kubernetes: a node's Pods by ``status.hostIP``, the Services and policies
selecting them, which nodes a Pod or Service change touches, and which node's set a
caller of the TLS port may have (the node its identity runs on).

The cluster is :class:`tests.memory_kube.MemoryCluster` (in-memory feeds standing in for
the informers of an API server, which cannot run here); the streams run in-process with
a recording ``write``, as in ``test_node_sets.py``. The fake API server and real gRPC
streams are ``tests/kube/test_node_sets_kube.py``'s.
"""

from __future__ import annotations

import asyncio
import datetime

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.config.mcp_resource import Rejection
from pilothouse.config.model import Config, Origin
from pilothouse.nodesets.kubernetes import (
    decode_kube_resource,
    pod_address,
    pod_config,
    service_config,
)
from pilothouse.nodesets.membership import NodeSetIndex
from pilothouse.nodesets.node_access import NodeSetDenied, node_denial
from pilothouse.nodesets.server import NodeSetServer
from pilothouse.nodesets.session import UnknownType, node_set_kind, node_set_types
from pilothouse.security.identity import Caller, ProvedBy, SpiffeId
from pilothouse.sources.events import ConfigEvent, EventType
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.generators.api import encode_api_resource
from tests.memory_kube import MemoryCluster, pod, service
from tests.unit.nodesets.test_node_sets import Agent, entry, policy

POD = "core/v1/Pod"
SERVICE = "core/v1/Service"
PORTS = [{"name": "http", "port": 9080}]


def placed_pod(name: str, host: str, ns: str = "shop", **labels: str) -> Config:
    made = pod_config(pod(name, ns, f"10.244.{host[-1]}.9", labels, host_ip=host,
                          service_account=labels.get("app", "default")))  # fmt: skip
    assert made is not None
    return made


def added(config: Config) -> ConfigEvent:
    return ConfigEvent(EventType.ADD, config.key, None, config, 1)


def test_a_pod_is_on_the_node_of_its_host_ip_with_the_services_selecting_it() -> None:
    index = NodeSetIndex("istio-system")
    reviews = service_config(service("reviews", "shop", PORTS, selector={"app": "reviews"}))
    headless = service_config(service("manual", "shop", PORTS))  # no selector: no Pods
    root_service = service_config(service("any", "istio-system", PORTS, selector={}))
    root_named = service_config(
        service("also-reviews", "istio-system", PORTS, selector={"app": "reviews"})
    )
    index.load([
        placed_pod("reviews-1", "10.0.0.1", app="reviews"),
        placed_pod("ratings-1", "10.0.0.2", app="ratings"),
        entry("vm-1", "10.0.0.1", app="reviews"),
        reviews, headless, root_service, root_named,
        policy("only-reviews", app="reviews"),
    ])  # fmt: skip
    node_a = index.members({"10.0.0.1"})
    assert sorted(node_a["Pod"]) == ["shop/reviews-1"]
    assert sorted(node_a["WorkloadEntry"]) == ["shop/vm-1"]
    # a Service selects in its own namespace only, and only with a selector
    assert sorted(node_a["Service"]) == ["shop/reviews"]
    assert sorted(node_a["AuthorizationPolicy"]) == ["shop/only-reviews"]
    node_b = index.members({"10.0.0.2"})
    assert sorted(node_b["Pod"]) == ["shop/ratings-1"]
    assert node_b["Service"] == {} and node_b["AuthorizationPolicy"] == {}
    assert index.runs_at("10.0.0.1", "shop", "reviews")
    assert not index.runs_at("10.0.0.2", "shop", "reviews")


def test_a_pod_or_service_change_touches_only_the_nodes_it_concerns() -> None:
    index = NodeSetIndex("istio-system")
    a, b = placed_pod("reviews-1", "10.0.0.1", app="reviews"), placed_pod("r-1", "10.0.0.2")
    index.load([a, b])
    moved = placed_pod("reviews-1", "10.0.0.3", app="reviews")
    assert index.apply(ConfigEvent(EventType.UPDATE, a.key, a, moved, 2)) == {
        "10.0.0.1",
        "10.0.0.3",
    }
    reviews = service_config(service("reviews", "shop", PORTS, selector={"app": "reviews"}))
    assert index.apply(added(reviews)) == {"10.0.0.3"}
    without = service_config(service("reviews", "shop", PORTS))
    assert index.apply(ConfigEvent(EventType.UPDATE, reviews.key, reviews, without, 3)) == {
        "10.0.0.3"
    }
    assert index.members({"10.0.0.3"})["Service"] == {}
    unscheduled = pod_config(pod("pending", "shop", "", {"app": "reviews"}))
    assert unscheduled is not None and pod_address(unscheduled) == ""
    assert index.apply(added(unscheduled)) == frozenset()


def test_a_pod_travels_in_its_minimal_shape_and_decodes_as_it_was() -> None:
    obj = pod("reviews-1", "shop", "10.244.1.9", {"app": "reviews"}, service_account="reviews",
              node="node-a", host_ip="10.0.0.1")  # fmt: skip
    config = pod_config(obj)
    assert config is not None
    encoded = encode_api_resource(config, datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
    any_body = discovery_pb2.Resource()
    any_body.resource.ParseFromString(encoded.body)
    decoded = decode_kube_resource("Pod", any_body.resource.value, Origin("node-set://x"))
    assert isinstance(decoded, Config)
    assert decoded.same_content(config) and decoded.labels == {"app": "reviews"}
    shape = decoded.spec
    assert set(shape.fields) == {"spec", "status"}  # no containers, no conditions
    assert shape["status"]["hostIP"] == "10.0.0.1"
    assert shape["spec"]["serviceAccountName"] == "reviews"
    refused = decode_kube_resource("Pod", b"\xff\xff", Origin("x"))
    assert isinstance(refused, Rejection) and refused.undecodable
    failed = dict(obj, status={**obj["status"], "phase": "Failed"})
    assert pod_config(failed) is None


def test_type_names_of_the_kubernetes_kinds() -> None:
    types = node_set_types()
    assert list(types)[-2:] == [POD, SERVICE]
    assert node_set_kind(POD) == "Pod" and node_set_kind(SERVICE) == "Service"
    try:
        node_set_kind("core/v1/ConfigMap")
    except UnknownType as problem:
        assert POD in str(problem)
    else:
        raise AssertionError("ConfigMap is not a kind of the node set")


def subscribe_kube(agent: Agent) -> None:
    for type_url in (POD, SERVICE):
        agent.requests.put_nowait(discovery_pb2.DeltaDiscoveryRequest(type_url=type_url))


async def test_a_pod_change_on_node_a_reaches_only_a_s_agent() -> None:
    cluster = MemoryCluster(synced=False)
    cluster.pods.apply(pod("reviews-1", "shop", "10.244.1.9", {"app": "reviews"},
                           host_ip="10.0.0.1"))  # fmt: skip
    cluster.pods.apply(pod("ratings-1", "shop", "10.244.2.9", {"app": "ratings"},
                           host_ip="10.0.0.2"))  # fmt: skip
    cluster.services.apply(service("reviews", "shop", PORTS, selector={"app": "reviews"}))
    store = MemoryStore()
    store.mark_synced()
    server = NodeSetServer(store, kube=cluster.feeds())
    server.follow()
    assert not server.has_synced()  # the informers have not listed yet
    cluster.mark_synced()
    assert server.has_synced()
    a, b = Agent(server, "10.0.0.1"), Agent(server, "10.0.0.2")
    subscribe_kube(a)
    subscribe_kube(b)
    await a.wait_for(4)
    await b.wait_for(4)
    first_a = {r.type_url: [x.name for x in r.resources] for r in a.responses}
    assert first_a[POD] == ["shop/reviews-1"] and first_a[SERVICE] == ["shop/reviews"]
    first_b = {r.type_url: [x.name for x in r.resources] for r in b.responses}
    assert first_b[POD] == ["shop/ratings-1"] and first_b[SERVICE] == []

    # a status heartbeat (new resourceVersion, same shape) wakes nobody
    wakes = server.figures.wakes
    cluster.pods.apply(pod("reviews-1", "shop", "10.244.1.9", {"app": "reviews"},
                           host_ip="10.0.0.1"))  # fmt: skip
    assert server.figures.wakes == wakes
    # a relabelled Pod on node A: A gets it again, B hears nothing
    cluster.pods.apply(pod("reviews-1", "shop", "10.244.1.9", {"app": "reviews", "v": "2"},
                           host_ip="10.0.0.1"))  # fmt: skip
    await a.wait_for(5)
    assert [r.name for r in a.responses[4].resources] == ["shop/reviews-1"]
    cluster.pods.delete("shop", "reviews-1")  # and with it, the Service selecting it
    await a.wait_for(7)
    removed = {r.type_url: list(r.removed_resources) for r in a.responses[5:]}
    await asyncio.sleep(0)
    assert removed == {POD: ["shop/reviews-1"], SERVICE: ["shop/reviews"]}
    assert len(b.responses) == 4  # node B heard nothing
    await a.close()
    await b.close()
    server.close()


def test_a_caller_may_have_only_the_set_of_a_node_its_identity_runs_on() -> None:
    index = NodeSetIndex("istio-system")
    agent_a = placed_pod("node-agent-a", "10.0.0.1", ns="istio-system", app="node-agent")
    index.load([agent_a, entry("vm-agent", "10.0.0.3", ns="istio-system")])
    node_agent = Caller((SpiffeId("cluster.local", "istio-system", "node-agent"),), ProvedBy.JWT)
    assert node_denial(index, {"10.0.0.1"}, node_agent) is None
    denied = node_denial(index, {"10.0.0.1", "10.0.0.2"}, node_agent)  # every address counts
    assert denied is not None and "runs as no workload at 10.0.0.2" in denied
    assert "spiffe://cluster.local/ns/istio-system/sa/node-agent" in denied
    root_admin = Caller((SpiffeId("cluster.local", "istio-system", "admin"),), ProvedBy.JWT)
    assert node_denial(index, {"10.0.0.1"}, root_admin) is not None  # no root exception
    server = NodeSetServer(MemoryStore())
    server.index.load([agent_a])
    server.authorise(frozenset({"10.0.0.9"}), None)  # the plaintext port asks nobody
    try:
        server.authorise(frozenset({"10.0.0.9"}), node_agent)
    except NodeSetDenied as problem:
        assert "10.0.0.9" in str(problem)
    else:
        raise AssertionError("not denied")
