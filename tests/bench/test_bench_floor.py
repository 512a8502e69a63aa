"""The transport floor (bench/harness/floor.py): its protocol rules and a real stream.

The floor stands in for the fastest possible ADS server in the push fan-out
benchmark, so it must still behave as a server a proxy converges against:
answer new subscriptions, ignore ACKs, push changed resources once encoded.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.config.core.v3 import config_source_pb2  # type: ignore[import-untyped]
from envoy.config.endpoint.v3 import endpoint_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from bench.harness.floor import (
    APPLY_METHOD,
    Floor,
    FloorService,
    FloorStream,
    add_floor_services,
)
from bench.harness.process import ServerProcess
from bench.harness.servers import floor_controls
from pilothouse.loadtest import SimulatedProxy, mesh_identity
from pilothouse.loadtest.fleet import ProxyFleet, fleet_identities
from pilothouse.loadtest.identity import ProxyFlavour
from pilothouse.protocol.type_urls import CDS, EDS, LDS
from pilothouse.xds.server.ads import new_grpc_server

BENCH = Path(__file__).resolve().parents[2] / "bench"


def cluster(name: str, timeout: int = 1) -> Any:
    message = cluster_pb2.Cluster(name=name, type=cluster_pb2.Cluster.EDS)
    message.connect_timeout.seconds = timeout
    message.eds_cluster_config.eds_config.CopyFrom(
        config_source_pb2.ConfigSource(ads=config_source_pb2.AggregatedConfigSource())
    )
    return message


def assignment(name: str, address: str) -> Any:
    message = endpoint_pb2.ClusterLoadAssignment(cluster_name=name)
    endpoint = message.endpoints.add().lb_endpoints.add().endpoint
    endpoint.address.socket_address.address = address
    endpoint.address.socket_address.port_value = 8080
    return message


def resource(type_url: str, message: Any, version: str = "1") -> Any:
    name = message.cluster_name if type_url == EDS else message.name
    return discovery_pb2.Resource(
        name=name,
        version=version,
        resource=any_pb2.Any(type_url=type_url, value=message.SerializeToString()),
    )


def loaded_floor() -> Floor:
    floor = Floor()
    floor.load(CDS, [resource(CDS, cluster("a")), resource(CDS, cluster("b"))])
    floor.load(
        EDS,
        [resource(EDS, assignment("a", "10.0.0.1")), resource(EDS, assignment("b", "10.0.0.2"))],
    )
    floor.load(LDS, [])
    return floor


def sotw(type_url: str, names: tuple[str, ...] = (), nonce: str = "") -> Any:
    return discovery_pb2.DiscoveryRequest(
        type_url=type_url, resource_names=list(names), response_nonce=nonce
    )


def names_in(body: bytes | None) -> list[str]:
    assert body is not None
    response = discovery_pb2.DiscoveryResponse.FromString(body)
    out = []
    for packed in response.resources:
        if packed.type_url == CDS:
            out.append(cluster_pb2.Cluster.FromString(packed.value).name)
        else:
            out.append(endpoint_pb2.ClusterLoadAssignment.FromString(packed.value).cluster_name)
    return out


def test_sotw_requests_are_answered_and_acks_ignored() -> None:
    floor = loaded_floor()
    stream = FloorStream(delta=False)
    floor.streams.add(stream)
    first = floor.answer(stream, sotw(CDS))
    assert names_in(first) == ["a", "b"]
    nonce = discovery_pb2.DiscoveryResponse.FromString(first).nonce
    assert floor.answer(stream, sotw(CDS, nonce=nonce)) is None  # the ACK
    assert names_in(floor.answer(stream, sotw(EDS, ("b",)))) == ["b"]
    assert floor.answer(stream, sotw(EDS, ("b",), nonce="x")) is None
    assert names_in(floor.answer(stream, sotw(EDS, ("a", "b"), nonce="x"))) == ["a", "b"]
    assert floor.answer(stream, sotw("type.googleapis.com/unknown")) is None


def test_a_push_is_encoded_once_and_reaches_only_the_watchers() -> None:
    floor = loaded_floor()
    watchers = [FloorStream(delta=False) for _ in range(3)]
    narrow = FloorStream(delta=False)
    idle = FloorStream(delta=False)
    for stream in [*watchers, narrow, idle]:
        floor.streams.add(stream)
    for stream in watchers:
        floor.answer(stream, sotw(CDS))
        floor.answer(stream, sotw(EDS, ("a", "b")))
    floor.answer(narrow, sotw(EDS, ("b",)))
    for stream in floor.streams:
        while not stream.outbound.empty():
            stream.outbound.get_nowait()

    assert floor.push(EDS, [resource(EDS, assignment("a", "10.9.9.9"), "2")]) == 3
    bodies = [stream.outbound.get_nowait() for stream in watchers]
    assert all(body is bodies[0] for body in bodies)
    assert names_in(bodies[0]) == ["a"]
    assert narrow.outbound.empty() and idle.outbound.empty()

    assert floor.push(CDS, [resource(CDS, cluster("b", timeout=2), "2")]) == 3
    body = watchers[0].outbound.get_nowait()
    assert names_in(body) == ["a", "b"], "a SotW CDS push carries the whole set"
    response = discovery_pb2.DiscoveryResponse.FromString(body)
    pushed = cluster_pb2.Cluster.FromString(response.resources[1].value)
    assert pushed.connect_timeout.seconds == 2


def test_delta_first_request_subscribes_and_later_ones_add() -> None:
    floor = loaded_floor()
    stream = FloorStream(delta=True)
    floor.streams.add(stream)

    def delta(type_url: str, subscribe: tuple[str, ...] = (), nonce: str = "") -> Any:
        return discovery_pb2.DeltaDiscoveryRequest(
            type_url=type_url, resource_names_subscribe=list(subscribe), response_nonce=nonce
        )

    def delta_names(body: bytes | None) -> list[str]:
        assert body is not None
        return [r.name for r in discovery_pb2.DeltaDiscoveryResponse.FromString(body).resources]

    assert delta_names(floor.answer(stream, delta(CDS))) == ["a", "b"]
    assert delta_names(floor.answer(stream, delta(LDS))) == []  # answered though empty
    assert delta_names(floor.answer(stream, delta(EDS, ("a",)))) == ["a"]
    assert floor.answer(stream, delta(EDS, nonce="n")) is None
    assert delta_names(floor.answer(stream, delta(EDS, ("b",)))) == ["b"]
    while not stream.outbound.empty():
        stream.outbound.get_nowait()
    floor.push(CDS, [resource(CDS, cluster("b", timeout=3), "3")])
    assert delta_names(stream.outbound.get_nowait()) == ["b"], "delta pushes only the change"


@pytest.fixture
async def floor_address() -> AsyncIterator[str]:
    server = new_grpc_server()
    add_floor_services(server, FloorService(Floor()))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(0)


async def test_a_simulated_envoy_converges_on_the_floor_and_gets_the_push(
    floor_address: str,
) -> None:
    async with grpc.aio.insecure_channel(floor_address) as channel:
        apply: grpc.aio.UnaryUnaryMultiCallable[Any, bytes] = channel.unary_unary(
            APPLY_METHOD,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=lambda b: b,
        )
        source = loaded_floor()
        for type_url, resources in source.resources.items():
            await apply(
                discovery_pb2.DeltaDiscoveryResponse(
                    system_version_info="load",
                    type_url=type_url,
                    resources=list(resources.values()),
                )
            )
        identity = mesh_identity(ProxyFlavour.SIDECAR, "10.1.0.1", "app-0", "default")
        async with SimulatedProxy(identity, target=floor_address) as proxy:
            await proxy.wait_for(SimulatedProxy.settled, timeout=10)
            assert set(proxy.holds(EDS)) == {"a", "b"}
            old = proxy.holds(EDS)["a"].body
            await apply(
                discovery_pb2.DeltaDiscoveryResponse(
                    system_version_info="push",
                    resources=[resource(EDS, assignment("a", "10.7.7.7"), "2")],
                )
            )
            await proxy.wait_for(lambda p: p.holds(EDS)["a"].body != old, timeout=10)
            held = endpoint_pb2.ClusterLoadAssignment.FromString(proxy.holds(EDS)["a"].body)
            address = held.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address
            assert address == "10.7.7.7"


async def test_a_floor_in_two_processes_shares_its_port_and_each_serves_what_it_is_handed(
    tmp_path: Path,
) -> None:
    """``--processes 2``: the floor for ``serve --workers 2``. Both processes accept on the
    one port, each is loaded through its own control port, and a fleet spread over them by
    the kernel converges and gets a push made through every control port."""
    floor = ServerProcess(
        "transport floor",
        [sys.executable, str(BENCH / "harness" / "floor.py"), "--processes", "2",
         "--address", "127.0.0.1:0", "--control-address", "127.0.0.1:0"],
        tmp_path / "floor.log",
    )  # fmt: skip
    try:
        target, controls = await floor_controls(floor, 2)
        assert len(set(controls)) == 2 and target not in controls
        channels = [grpc.aio.insecure_channel(control) for control in controls]
        try:
            applies = [
                channel.unary_unary(
                    APPLY_METHOD,
                    request_serializer=lambda m: m.SerializeToString(),
                    response_deserializer=lambda b: b,
                )
                for channel in channels
            ]
            for apply in applies:
                for type_url, resources in loaded_floor().resources.items():
                    await apply(
                        discovery_pb2.DeltaDiscoveryResponse(
                            system_version_info="load",
                            type_url=type_url,
                            resources=list(resources.values()),
                        )
                    )
            identities = fleet_identities(40, namespaces=["default"])
            fleet = ProxyFleet(target, identities, streams_per_channel=1)
            await fleet.start()
            try:
                assert (await fleet.wait_converged(timeout=30)).converged
                port = int(target.rsplit(":", 1)[1])
                held = floor.connections(port)
                # a connection a loaded client gave up on and replaced stays established on
                # the server's side until it reads the close (CI saw 42): wait for those to
                # go, with a deadline that only bounds a failure
                deadline = asyncio.get_running_loop().time() + 20
                while sum(held) != 40 and asyncio.get_running_loop().time() < deadline:
                    await asyncio.sleep(0.1)
                    held = floor.connections(port)
                assert sum(held) == 40, f"connections per process: {held}"
                assert len(held) == 2, f"the kernel put every connection on one process: {held}"
                old = fleet.proxies[0].holds(EDS)["a"].body
                push = discovery_pb2.DeltaDiscoveryResponse(
                    system_version_info="push",
                    resources=[resource(EDS, assignment("a", "10.7.7.7"), "2")],
                )
                await asyncio.gather(*(apply(push) for apply in applies))
                report = await fleet.wait_converged(
                    lambda p: p.holds(EDS)["a"].body != old, timeout=30
                )
                assert report.converged
            finally:
                await fleet.close()
        finally:
            for channel in channels:
                await channel.close()
        assert len(floor.tree()) == 2
    finally:
        floor.stop()
    assert "Traceback" not in floor.output()
