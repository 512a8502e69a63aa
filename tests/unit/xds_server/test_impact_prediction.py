"""The impact's comparison: what each chosen proxy would receive, against what it ACKed.

A real DiscoveryServer over a memory store (the mesh of test_peer_authentication_push:
web and db in ``shop``, tool in ``other``), and SotW connections made as the servicer
makes them, fed requests and ACKs in process (no gRPC: the integration test
test_impact_serve runs the same over real streams). An AuthorizationPolicy for ``web``
must reach web's listeners only, and the prediction must equal what web is then sent
when the policy is really applied.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.protocol.type_urls import CDS, LDS
from pilothouse.push.debounce import DebounceSettings
from pilothouse.push.impact import NotPredicted
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.server.connection import Connection
from pilothouse.xds.server.discovery import DiscoveryServer, XdsSettings
from pilothouse.xds.server.impact import predict
from tests.unit.xds_server.test_authorization_push import WEB_ALLOW
from tests.unit.xds_server.test_peer_authentication_push import DB, MESH, TOOL, WEB

FAST = XdsSettings(debounce=DebounceSettings(debounce_after=0.001, debounce_max=0.1))


def held(connection: Connection, type_url: str) -> dict[str, bytes]:
    return {name: r.body for name, r in connection.engine.acked()[type_url].items()}


def ack_all(connections: list[Connection]) -> int:
    """ACK every queued response; how many there were."""
    count = 0
    for connection in connections:
        while not connection.outbound.empty():
            queued: Any = connection.outbound.get_nowait()
            response = discovery_pb2.DiscoveryResponse.FromString(queued.body)
            connection.on_request(
                discovery_pb2.DiscoveryRequest(
                    type_url=response.type_url,
                    version_info=response.version_info,
                    response_nonce=response.nonce,
                ),
                time.time(),
            )
            count += 1
    return count


@pytest.fixture
async def served() -> AsyncIterator[tuple[DiscoveryServer, MemoryStore, list[Connection]]]:
    store = MemoryStore("test")
    for config in Loader(SCHEMAS).load_strict(MESH, "mesh.yaml"):
        store.apply(config)
    store.mark_synced()
    discovery = DiscoveryServer(store, settings=FAST)
    task = asyncio.create_task(discovery.run())
    await asyncio.wait_for(discovery.wait_ready(), 10)
    connections = []
    for stand_in in (WEB, DB, TOOL):
        connection = Connection(stand_in.id, "test", stand_in.proxy, discovery, delta=False)
        discovery.connect(connection)
        connections.append(connection)
        for type_url in (CDS, LDS):
            connection.on_request(discovery_pb2.DiscoveryRequest(type_url=type_url), time.time())
    ack_all(connections)
    try:
        yield discovery, store, connections
    finally:
        discovery.close()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_policy_is_predicted_for_its_workload_s_listeners_as_then_sent(
    served: tuple[DiscoveryServer, MemoryStore, list[Connection]],
) -> None:
    discovery, store, connections = served
    web = connections[0]
    (policy,) = Loader(SCHEMAS).load_strict(WEB_ALLOW, "policy.yaml")
    before = held(web, LDS)

    report = await predict(discovery, [policy], timeout=5)

    assert report.connected == 3 and report.skipped == 0 and not report.failed
    (impact,) = report.proxies
    assert impact.connection_id == "web"
    assert list(impact.types) == [LDS]  # clusters and routes never read a policy
    diff = impact.types[LDS]
    assert diff.changed and not diff.added and not diff.removed
    assert diff.before == diff.after == len(before)
    assert ack_all(connections) == 0  # predicting sent nothing

    store.apply(policy)
    deadline = time.monotonic() + 5
    while held(web, LDS) == before:
        assert time.monotonic() < deadline, "the policy never reached web's listeners"
        await asyncio.sleep(0.005)
        ack_all(connections)
    after = held(web, LDS)
    assert sorted(n for n in after if after[n] != before.get(n)) == list(diff.changed)
    changed = listener_pb2.Listener()
    assert any_pb2.Any.FromString(after[diff.changed[0]]).Unpack(changed)
    assert changed.name == diff.changed[0]

    # the same objects once more: nothing changes, nobody is predicted
    again = await predict(discovery, [policy], timeout=5)
    assert again.proxies == [] and again.changed == ()
    assert [k.name for k in again.unchanged] == ["web-allow"]


async def test_a_new_service_entry_is_refused(
    served: tuple[DiscoveryServer, MemoryStore, list[Connection]],
) -> None:
    discovery, _, _ = served
    configs = Loader(SCHEMAS).load_strict(MESH, "mesh.yaml")
    moved = [c for c in configs if c.kind == "WorkloadEntry"][:1]
    entry = moved[0]
    spec = type(entry.spec)()
    spec.CopyFrom(entry.spec)
    spec.address = "10.9.9.9"
    edited = type(entry)(entry.kind, entry.name, entry.namespace, spec, entry.labels)
    with pytest.raises(NotPredicted, match="WorkloadEntry"):
        await predict(discovery, [edited], timeout=5)
