"""Per-node sets: who is in a node's set, which nodes a change touches, and what each
agent's stream is sent.

The streams run in-process over a memory store with a recording ``write`` (the gRPC
layer is exercised by ``tests/integration/test_node_set_agents.py`` with a real serve
and real agent processes); responses are decoded with Envoy's own messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from envoy.config.core.v3 import base_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.networking.v1alpha3 import sidecar_pb2, workload_entry_pb2
from pilothouse.api.istio.security.v1beta1 import authorization_policy_pb2
from pilothouse.api.istio.type.v1beta1 import selector_pb2
from pilothouse.config.mcp_resource import MCP_RESOURCE_TYPE_URL
from pilothouse.config.model import Config
from pilothouse.nodesets.membership import NodeSetIndex, Selecting, placed, selecting
from pilothouse.nodesets.server import BadNodeSetRequest, NodeSetServer, NodeSetStream
from pilothouse.sources.events import ConfigEvent, EventType
from pilothouse.sources.memory import MemoryStore

WE = "networking.istio.io/v1/WorkloadEntry"
AP = "security.istio.io/v1/AuthorizationPolicy"
SIDECAR = "networking.istio.io/v1/Sidecar"


def entry(name: str, address: str, ns: str = "shop", **labels: str) -> Config:
    spec = workload_entry_pb2.WorkloadEntry(address=address, labels=labels)
    return Config("WorkloadEntry", name, ns, spec)


def policy(name: str, ns: str = "shop", **labels: str) -> Config:
    spec = authorization_policy_pb2.AuthorizationPolicy()
    if labels:
        spec.selector.CopyFrom(selector_pb2.WorkloadSelector(match_labels=labels))
    return Config("AuthorizationPolicy", name, ns, spec)


def sidecar(name: str, ns: str, **labels: str) -> Config:
    spec = sidecar_pb2.Sidecar()
    if labels:
        spec.workload_selector.labels.update(labels)
    return Config("Sidecar", name, ns, spec)


def added(config: Config) -> ConfigEvent:
    return ConfigEvent(EventType.ADD, config.key, None, config, 1)


def test_a_node_s_set_is_its_workloads_and_what_selects_them() -> None:
    index = NodeSetIndex("istio-system")
    index.load([
        entry("a1", "10.0.0.1", app="a"),
        entry("b1", "10.0.0.2", app="b"),
        policy("only-a", app="a"),
        policy("whole-shop"),
        policy("other-ns", ns="bank"),
        sidecar("mesh-wide", "istio-system"),
        sidecar("for-b", "shop", app="b"),
    ])  # fmt: skip
    node_a = index.members({"10.0.0.1"})
    assert sorted(node_a["WorkloadEntry"]) == ["shop/a1"]
    assert sorted(node_a["AuthorizationPolicy"]) == ["shop/only-a", "shop/whole-shop"]
    assert sorted(node_a["Sidecar"]) == ["istio-system/mesh-wide"]
    node_b = index.members({"10.0.0.2"})
    assert sorted(node_b["AuthorizationPolicy"]) == ["shop/whole-shop"]
    assert sorted(node_b["Sidecar"]) == ["istio-system/mesh-wide", "shop/for-b"]
    empty = index.members({"10.9.9.9"})
    assert all(not objects for objects in empty.values())


def test_a_change_touches_only_the_nodes_whose_set_it_changes() -> None:
    index = NodeSetIndex("istio-system")
    a1, b1 = entry("a1", "10.0.0.1", app="a"), entry("b1", "10.0.0.2", app="b")
    index.load([a1, b1])
    moved = entry("a1", "10.0.0.3", app="a")
    assert index.apply(ConfigEvent(EventType.UPDATE, a1.key, a1, moved, 2)) == {
        "10.0.0.1",
        "10.0.0.3",
    }
    assert index.apply(added(policy("only-b", app="b"))) == {"10.0.0.2"}
    assert index.apply(added(policy("whole-shop"))) == {"10.0.0.2", "10.0.0.3"}
    assert index.apply(added(sidecar("mesh-wide", "istio-system"))) == {"10.0.0.2", "10.0.0.3"}
    assert index.apply(added(policy("no-match", app="zzz"))) == frozenset()
    service_entry_like = Config("VirtualService", "vs", "shop", sidecar_pb2.Sidecar())
    assert index.apply(added(service_entry_like)) == frozenset()
    gone = ConfigEvent(EventType.DELETE, b1.key, b1, None, 3)
    assert index.apply(gone) == {"10.0.0.2"}
    assert index.members({"10.0.0.2"})["WorkloadEntry"] == {}


class Agent:
    """One simulated agent stream: requests go in through a queue, responses are kept."""

    def __init__(self, server: NodeSetServer, address: str) -> None:
        self.requests: asyncio.Queue[discovery_pb2.DeltaDiscoveryRequest | None] = asyncio.Queue()
        self.responses: list[discovery_pb2.DeltaDiscoveryResponse] = []
        self.arrived = asyncio.Event()
        self.stream = NodeSetStream(f"agent-{address}", server)
        node = base_pb2.Node(id=f"node~{address}")
        node.metadata.update({"INSTANCE_IPS": address})
        for i, type_url in enumerate((WE, AP)):
            request = discovery_pb2.DeltaDiscoveryRequest(type_url=type_url)
            if i == 0:
                request.node.CopyFrom(node)
            self.requests.put_nowait(request)
        self.task = asyncio.create_task(self.stream.run(self._requests(), self._write))

    async def _requests(self) -> AsyncIterator[discovery_pb2.DeltaDiscoveryRequest]:
        while (request := await self.requests.get()) is not None:
            yield request

    async def _write(self, body: bytes) -> None:
        self.responses.append(discovery_pb2.DeltaDiscoveryResponse.FromString(body))
        self.arrived.set()

    async def wait_for(self, count: int) -> None:
        async with asyncio.timeout(5):
            while len(self.responses) < count:
                self.arrived.clear()
                await self.arrived.wait()

    async def close(self) -> None:
        self.requests.put_nowait(None)
        await self.task


async def test_a_workload_change_reaches_only_its_node_s_agent() -> None:
    store = MemoryStore()
    store.apply(entry("a1", "10.0.0.1", app="a"))
    store.apply(entry("b1", "10.0.0.2", app="b"))
    store.apply(policy("only-a", app="a"))
    store.mark_synced()
    server = NodeSetServer(store)
    server.follow()
    a, b = Agent(server, "10.0.0.1"), Agent(server, "10.0.0.2")
    await a.wait_for(2)
    await b.wait_for(2)
    first_a = {r.type_url: r for r in a.responses}
    assert [r.name for r in first_a[WE].resources] == ["shop/a1"]
    assert [r.name for r in first_a[AP].resources] == ["shop/only-a"]
    assert first_a[WE].resources[0].resource.type_url == MCP_RESOURCE_TYPE_URL
    first_b = {r.type_url: r for r in b.responses}
    assert [r.name for r in first_b[WE].resources] == ["shop/b1"]
    assert list(first_b[AP].resources) == []  # answered, empty: b knows its set
    wakes = server.figures.wakes

    store.apply(entry("a2", "10.0.0.1", app="a"))  # a new workload on node A
    await a.wait_for(3)
    assert [r.name for r in a.responses[2].resources] == ["shop/a2"]  # only the new one
    store.delete(entry("a1", "10.0.0.1").key)
    await a.wait_for(4)
    assert list(a.responses[3].removed_resources) == ["shop/a1"]
    assert not a.responses[3].resources
    await asyncio.sleep(0)  # let any wrongly woken writer run
    assert len(b.responses) == 2  # node B heard nothing
    assert server.figures.wakes == wakes + 2

    await a.close()
    await b.close()
    assert server.streams_at("10.0.0.1") == 0


async def test_a_reconnecting_agent_is_sent_only_what_it_lacks() -> None:
    store = MemoryStore()
    store.apply(entry("a1", "10.0.0.1"))
    store.apply(entry("a2", "10.0.0.1"))
    store.mark_synced()
    server = NodeSetServer(store)
    server.follow()
    held = server.resource(store.get(entry("a1", "x").key))  # type: ignore[arg-type]
    agent = Agent.__new__(Agent)
    agent.requests = asyncio.Queue()
    agent.responses = []
    agent.arrived = asyncio.Event()
    agent.stream = NodeSetStream("again", server)
    request = discovery_pb2.DeltaDiscoveryRequest(type_url=WE)
    request.node.metadata.update({"INSTANCE_IPS": "10.0.0.1"})
    request.initial_resource_versions.update({"shop/a1": held.version, "shop/gone": "v0"})
    agent.requests.put_nowait(request)
    agent.task = asyncio.create_task(agent.stream.run(agent._requests(), agent._write))
    await agent.wait_for(1)
    assert [r.name for r in agent.responses[0].resources] == ["shop/a2"]
    assert list(agent.responses[0].removed_resources) == ["shop/gone"]
    await agent.close()


async def test_a_stream_without_a_node_or_asking_for_another_kind_is_refused() -> None:
    store = MemoryStore()
    store.mark_synced()
    server = NodeSetServer(store)
    server.follow()

    async def one(request: discovery_pb2.DeltaDiscoveryRequest) -> str:
        async def requests() -> AsyncIterator[discovery_pb2.DeltaDiscoveryRequest]:
            yield request

        async def write(body: bytes) -> None:
            raise AssertionError("nothing may be sent")

        try:
            await NodeSetStream("bad", server).run(requests(), write)
        except BadNodeSetRequest as problem:
            return str(problem)
        raise AssertionError("not refused")

    anonymous = discovery_pb2.DeltaDiscoveryRequest(type_url=WE)
    assert "must carry the node" in await one(anonymous)
    no_address = discovery_pb2.DeltaDiscoveryRequest(type_url=WE)
    no_address.node.id = "node~x"
    assert "INSTANCE_IPS" in await one(no_address)
    routes = discovery_pb2.DeltaDiscoveryRequest(type_url="networking.istio.io/v1/VirtualService")
    routes.node.metadata.update({"INSTANCE_IPS": "10.0.0.1"})
    problem = await one(routes)
    assert "not a kind of a node's set" in problem and WE in problem
    assert server.streams_at("10.0.0.1") == 0


def test_nodes_naming_the_same_addresses_share_one_computed_set_until_a_change() -> None:
    store = MemoryStore()
    store.apply(entry("a1", "10.0.0.1"))
    store.apply(entry("b1", "10.0.0.2"))
    store.mark_synced()
    server = NodeSetServer(store)
    server.follow()
    node_a, node_b = frozenset({"10.0.0.1"}), frozenset({"10.0.0.2"})
    first = server.current(node_a)
    assert server.current(node_a) is first
    store.apply(policy("matches-nothing", app="zzz"))  # no node's set changes
    assert server.current(node_a) is first
    store.apply(entry("a2", "10.0.0.1"))
    again = server.current(node_a)
    assert again is not first and sorted(again["WorkloadEntry"]) == ["shop/a1", "shop/a2"]
    assert sorted(server.current(node_b)["WorkloadEntry"]) == ["shop/b1"]


@pytest.mark.parametrize(
    ("asked", "has", "selected"),
    [(None, {}, True), (None, {"app": "a"}, True), ({}, {"app": "a"}, True),
     ({"app": "a"}, {"app": "a", "version": "v1"}, True),
     ({"app": "a", "version": "v1"}, {"app": "a", "version": "v1"}, True),
     ({"app": "a"}, {"app": "b"}, False), ({"app": "a"}, {}, False),
     ({"app": "a", "version": "v2"}, {"app": "a", "version": "v1"}, False),
     ({"app": ""}, {}, False), ({"app": ""}, {"app": ""}, True)],
)  # fmt: skip
def test_an_object_selects_the_workloads_with_every_label_it_asks_for(
    asked: dict[str, str] | None, has: dict[str, str], selected: bool
) -> None:
    """Istio's workload selector, by ``Labels.matches``: no labels (or none asked for)
    select every workload of the namespace; else each label must be there, same value."""
    workload = placed(entry("w", "10.0.0.1", **has))
    assert Selecting(policy("p"), asked).selects(workload) is selected
    by_spec = selecting(policy("p", **(asked or {})), "istio-system")
    assert by_spec is not None and by_spec.selects(workload) is selected
