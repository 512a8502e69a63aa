"""The node-set stream fails over across pilothouse's replicas, as the xDS upstream does.

Real grpc.aio servers on loopback, each serving a :class:`NodeSetServer` over one shared
store (replicas reading the same config), and a :class:`NodeSetClient` given a port
nothing listens on, then replica A, then replica B. The client passes the dead address
and syncs from A at once; when A stops it moves straight to B (no second try of A, no
detour through the dead address) and hears the change made meanwhile; when B stops too
it goes round the list, past the dead address, to A started again on its port. Each
move is made at once: the client's backoff (30 s) is longer than any wait here, and is
due only once every replica has failed in a row.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import grpc
import pytest

from pilothouse.agent.node_set import NodeSetClient
from pilothouse.api.istio.networking.v1alpha3 import workload_entry_pb2
from pilothouse.backoff import Backoff
from pilothouse.config.model import Config
from pilothouse.nodesets.server import NodeSetServer
from pilothouse.sources.memory import MemoryStore
from tests.e2e.harness.ports import free_ports

SLOW = Backoff(30.0, 30.0)
"""Longer than any wait here: the client must never back off while a replica is untried."""


def entry(name: str) -> Config:
    spec = workload_entry_pb2.WorkloadEntry(address="10.0.0.1", service_account="reviews")
    return Config("WorkloadEntry", name, "shop", spec)


class Replica:
    """One pilothouse replica's node-set service on a fixed loopback port."""

    def __init__(self, store: MemoryStore, port: int) -> None:
        self.address = f"127.0.0.1:{port}"
        self._store = store
        self._server: grpc.aio.Server | None = None
        self._sets: NodeSetServer | None = None

    async def start(self) -> None:
        self._sets = NodeSetServer(self._store)
        self._sets.follow()
        self._server = grpc.aio.server()
        self._sets.add_to(self._server)
        assert self._server.add_insecure_port(self.address) > 0
        await self._server.start()

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(grace=None)
            self._server = None
        if self._sets is not None:
            self._sets.close()
            self._sets = None


async def until(check: Callable[[], bool], what: str, seconds: float = 10) -> None:
    try:
        async with asyncio.timeout(seconds):
            while not check():
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"not within {seconds} s: {what}") from None


@pytest.fixture
async def replicas() -> AsyncIterator[tuple[MemoryStore, Replica, Replica, int]]:
    store = MemoryStore()
    store.apply(entry("a1"))
    store.mark_synced()
    dead, a_port, b_port = free_ports(3)
    a, b = Replica(store, a_port), Replica(store, b_port)
    await a.start()
    await b.start()
    try:
        yield store, a, b, dead
    finally:
        await a.stop()
        await b.stop()


async def test_the_node_set_stream_fails_over_across_replicas(
    replicas: tuple[MemoryStore, Replica, Replica, int],
) -> None:
    store, a, b, dead = replicas
    dead_address = f"127.0.0.1:{dead}"
    client = NodeSetClient([dead_address, a.address, b.address], ["10.0.0.1"], backoff=SLOW)
    running = asyncio.create_task(client.run())

    def names() -> set[str]:
        return {c.name for c in client.workloads()}

    try:
        await until(client.synced.is_set, "synced from A")
        assert client.address == a.address and client.connects == 2  # dead, then A
        assert names() == {"a1"}
        view = client.view()
        assert view["server"] == a.address
        assert view["servers"] == [dead_address, a.address, b.address]

        await a.stop()
        store.apply(entry("a2"))
        await until(lambda: names() == {"a1", "a2"}, "a2 heard from B")
        assert client.address == b.address and client.connects == 3  # straight to B

        await b.stop()
        await a.start()  # A again, on its port: past the dead address, round the list
        store.apply(entry("a3"))
        await until(lambda: names() == {"a1", "a2", "a3"}, "a3 heard from A again")
        assert client.address == a.address and client.connects == 5  # dead, then A
        assert client.problem == "" and client.nacks == 0
    finally:
        client.close()
        await asyncio.wait_for(running, 5)


def test_a_node_set_needs_an_address() -> None:
    with pytest.raises(ValueError, match="where pilothouse serves it"):
        NodeSetClient([], ["10.0.0.1"])
    assert NodeSetClient("h:1", ["10.0.0.1"]).addresses == ("h:1",)
