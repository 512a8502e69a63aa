"""Per-node sets end to end: the real ``serve`` wiring (in process, config from a
directory) and two real ``pilothouse agent`` processes in node mode (``--no-envoy``) on
different node addresses. Each agent's ``/debug/nodez`` shows only its node's
workloads and the policy selecting them, and which of them are the workload it
manages; a WorkloadEntry added on node A reaches A's agent and not B's (B's response
count stays where it was), and removing it removes it from A's set.

Node A's agent gets its set over the TLS port, proving its own identity
(``istio-system/node-agent``, whose WorkloadEntry runs at 10.0.0.1) with its token;
node B's over the plaintext port. On the TLS port, the same identity asking for node
B's set is refused ``PERMISSION_DENIED`` (it runs at no address of B) and a stream with
no credential ``UNAUTHENTICATED``; both are counted as refusals.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.agent.node_set import node_set_types
from pilothouse.nodesets.service import DELTA_NODE_SETS, NODE_ADDRESSES_KEY, NODE_SET_SERVICE
from tests.e2e.harness.ports import free_port
from tests.integration.tls_served import Served, running

MESH = """\
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: reviews-a, namespace: shop}
spec: {address: 10.0.0.1, labels: {app: reviews}, serviceAccount: reviews}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: ratings-b, namespace: shop}
spec: {address: 10.0.0.2, labels: {app: ratings}, serviceAccount: ratings}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: reviews-only, namespace: shop}
spec: {selector: {matchLabels: {app: reviews}}}
"""

NODE_AGENT = """\
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: node-agent-a, namespace: istio-system}
spec: {address: 10.0.0.1, labels: {app: node-agent}, serviceAccount: node-agent}
"""

ADDED = """\
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: reviews-a2, namespace: shop}
spec: {address: 10.0.0.1, labels: {app: reviews}, serviceAccount: reviews}
"""


def workloads_file(tmp_path: Path, served: Served, name: str, tls: bool) -> Path:
    home = tmp_path / name
    home.mkdir()
    root = home / "root-cert.pem"
    root.write_bytes(served.root_pem())
    (home / "istio-token").write_text(served.issuer.token("shop", name))
    path = home / "node.yaml"
    if tls:  # the agent's own identity proves its node on the TLS port
        (home / "node-token").write_text(served.issuer.token("istio-system", "node-agent"))
        node_set = (
            "nodeIdentity: {namespace: istio-system, serviceAccount: node-agent, "
            f"token: {home / 'node-token'}}}\n"
        )
    else:
        node_set = f"nodeSetAddress: 127.0.0.1:{served.bound.xds_port}\n"
    path.write_text(
        f"xdsAddresses: [{served.tls_target}]\nrootCert: {root}\n{node_set}"
        f"workloads:\n- {{name: {name}, namespace: shop, serviceAccount: {name}, "
        f"uids: [{os.getuid()}], token: {home / 'istio-token'}, "
        f"sdsSocket: {home / 'sds'}, xdsSocket: {home / 'XDS'}}}\n"
    )
    return path


async def node_agent(
    tmp_path: Path, served: Served, name: str, node_ip: str, status_port: int, tls: bool
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pilothouse.cli.main", "agent",
        "--workloads", str(workloads_file(tmp_path, served, name, tls)),
        "--state-dir", str(tmp_path / name / "private"), "--node-ip", node_ip,
        "--status-port", str(status_port), "--no-envoy", "--key", "ecdsa",
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip


async def nodez(session: aiohttp.ClientSession, port: int) -> dict[str, Any] | None:
    try:
        async with session.get(f"http://127.0.0.1:{port}/debug/nodez") as answer:
            return dict(json.loads(await answer.text()))
    except aiohttp.ClientError:
        return None


async def until(
    session: aiohttp.ClientSession, port: int, holds: Any, seconds: float = 15
) -> dict[str, Any]:
    """The agent's view once ``holds(view)`` is true (polled; fails after ``seconds``)."""
    async with asyncio.timeout(seconds):
        while True:
            view = await nodez(session, port)
            if view is not None and holds(view):
                return view
            await asyncio.sleep(0.05)


def names(view: dict[str, Any], kind: str) -> list[str]:
    return [item["name"] for item in view["kinds"][kind]]


async def agents(
    tmp_path: Path, served: Served, ports: tuple[int, int]
) -> AsyncIterator[list[asyncio.subprocess.Process]]:
    started = [
        await node_agent(tmp_path, served, "reviews", "10.0.0.1", ports[0], tls=True),
        await node_agent(tmp_path, served, "ratings", "10.0.0.2", ports[1], tls=False),
    ]
    try:
        yield started
    finally:
        for process in started:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        for process in started:
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


async def test_each_node_agent_keeps_its_node_s_set_and_hears_only_its_changes(
    tmp_path: Path,
) -> None:
    mesh = tmp_path / "mesh"
    mesh.mkdir()
    (mesh / "mesh.yaml").write_text(MESH + NODE_AGENT)
    port_a, port_b = free_port(), free_port()
    async for served in running(tmp_path, server_keys=False, config_dirs=(mesh,)):
        async for processes in agents(tmp_path, served, (port_a, port_b)):
            async with aiohttp.ClientSession() as session:
                a = await until(session, port_a, lambda v: v["synced"], 30)
                b = await until(session, port_b, lambda v: v["synced"], 30)
                assert a["node"] == ["10.0.0.1"] and b["node"] == ["10.0.0.2"]
                assert a["tls"] and not b["tls"]
                assert names(a, "WorkloadEntry") == ["istio-system/node-agent-a", "shop/reviews-a"]
                assert names(a, "AuthorizationPolicy") == ["shop/reviews-only"]
                assert a["kinds"]["WorkloadEntry"][0]["spec"]["address"] == "10.0.0.1"
                assert names(b, "WorkloadEntry") == ["shop/ratings-b"]
                assert names(b, "AuthorizationPolicy") == []
                assert a["managed"] == {"reviews": ["shop/reviews-a"]}
                assert b["managed"] == {"ratings": ["shop/ratings-b"]}
                heard_by_b = b["responses"]

                (mesh / "added.yaml").write_text(ADDED)
                a = await until(
                    session, port_a, lambda v: "shop/reviews-a2" in names(v, "WorkloadEntry")
                )
                assert names(a, "WorkloadEntry") == [
                    "istio-system/node-agent-a", "shop/reviews-a", "shop/reviews-a2",
                ]  # fmt: skip
                assert a["managed"] == {"reviews": ["shop/reviews-a", "shop/reviews-a2"]}
                (mesh / "added.yaml").unlink()
                a = await until(
                    session, port_a, lambda v: "shop/reviews-a2" not in names(v, "WorkloadEntry")
                )
                b = await until(session, port_b, lambda v: v["synced"])
                assert b["responses"] == heard_by_b  # node B was sent nothing
                assert names(b, "WorkloadEntry") == ["shop/ratings-b"]
                assert a["connects"] == 1 and a["nacks"] == 0
            assert all(p.returncode is None for p in processes)
            await refused_on_the_tls_port(served)


async def refused_on_the_tls_port(served: Served) -> None:
    """Node A's identity may not have node B's set; nobody may without a credential."""
    refusals = served.discovery.admission.refusals
    before = {reason: held["count"] for reason, held in refusals.view()["reasons"].items()}
    for metadata, code, says in (
        (served.bearer("istio-system", "node-agent"), grpc.StatusCode.PERMISSION_DENIED,
         "runs as no workload at 10.0.0.2"),
        ((), grpc.StatusCode.UNAUTHENTICATED, "authentication failed"),
    ):  # fmt: skip
        request = discovery_pb2.DeltaDiscoveryRequest(type_url=node_set_types()[0])
        request.node.id = "node-agent~10.0.0.2"
        request.node.metadata.update({NODE_ADDRESSES_KEY: "10.0.0.2"})
        async with served.channel() as channel:
            call = channel.stream_stream(
                f"/{NODE_SET_SERVICE}/{DELTA_NODE_SETS}",
                request_serializer=discovery_pb2.DeltaDiscoveryRequest.SerializeToString,
                response_deserializer=discovery_pb2.DeltaDiscoveryResponse.FromString,
            )(iter([request]), metadata=metadata)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                async with asyncio.timeout(10):
                    await call.read()
        assert refused.value.code() is code, refused.value
        assert says in str(refused.value.details())
    after = refusals.view()["reasons"]
    for reason in ("permission_denied", "unauthenticated"):
        assert after[reason]["count"] == before.get(reason, 0) + 1, reason
    assert "10.0.0.2" in after["permission_denied"]["lastMessage"]
