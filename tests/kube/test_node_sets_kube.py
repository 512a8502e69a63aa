"""Node sets from Kubernetes, end to end: the real ``serve`` wiring (in process, a
``k8s://`` source, its TLS port) against the suite's fake API server (a fake because
no real API server can run here), and two node agents' set clients over TLS.

The cluster has two nodes, 10.0.0.1 and 10.0.0.2, each running a node agent's Pod
(DaemonSet-like: ``istio-system``, account ``node-agent``) and one application Pod
with a Service selecting it. Each agent proves ``istio-system/node-agent`` with its
token; pilothouse places that identity on both nodes by its Pods' ``status.hostIP``, so
each agent gets its own node's set:

- node A's set holds the Pods whose ``status.hostIP`` is 10.0.0.1 (in their minimal
  shape: no containers) and the Service selecting its application Pod, nothing of B;
- a Pod relabelled on node A, and one added there, reach A's agent only: B's response
  count stays where it was.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pilothouse.agent.node_set import NodeSetClient
from pilothouse.agent.remote_authority import CaEndpoint
from pilothouse.settings import KubeSettings
from tests.integration.tls_served import running
from tests.kube.fake_apiserver import FakeApiServer
from tests.memory_kube import pod, service

POD = "core/v1/Pod"
SERVICE = "core/v1/Service"
MESH_CONFIG = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "istio", "namespace": "istio-system"},
    "data": {"mesh": "{}"},
}


def cluster(api: FakeApiServer) -> None:
    api.create(MESH_CONFIG)
    for node, host in (("a", "10.0.0.1"), ("b", "10.0.0.2")):
        agent = pod(f"node-agent-{node}", "istio-system", host, {"app": "node-agent"},
                    service_account="node-agent", node=f"node-{node}", host_ip=host)  # fmt: skip
        api.create(agent)
    api.create(pod("reviews-1", "shop", "10.244.1.5", {"app": "reviews"},
                   service_account="reviews", node="node-a", host_ip="10.0.0.1"))  # fmt: skip
    api.create(pod("ratings-1", "shop", "10.244.2.5", {"app": "ratings"},
                   service_account="ratings", node="node-b", host_ip="10.0.0.2"))  # fmt: skip
    ports = [{"name": "http", "port": 9080}]
    api.create(service("reviews", "shop", ports, selector={"app": "reviews"}))
    api.create(service("ratings", "shop", ports, selector={"app": "ratings"}))


def held(client: NodeSetClient, type_url: str) -> list[str]:
    return sorted(client.held[type_url])


async def until(
    client: NodeSetClient, holds: Callable[[NodeSetClient], bool], seconds: float = 15
) -> None:
    async with asyncio.timeout(seconds):
        while not holds(client):
            client.changed.clear()
            await client.changed.wait()


async def test_a_node_s_set_holds_its_pods_and_services_and_only_its_changes(
    tmp_path: Path,
) -> None:
    async with FakeApiServer(bookmark_interval=0.5) as api:
        cluster(api)
        kube = KubeSettings(kubeconfig=str(api.kubeconfig(tmp_path / "kubeconfig")))
        async for served in running(
            tmp_path, server_keys=False, config_dirs=(), config_sources=("k8s://",), kube=kube
        ):
            root = tmp_path / "root-cert.pem"
            root.write_bytes(served.root_pem())
            token = tmp_path / "node-token"
            token.write_text(served.issuer.token("istio-system", "node-agent"))
            endpoint = CaEndpoint(served.tls_target, root, token)
            a = NodeSetClient(served.tls_target, ["10.0.0.1"], endpoint=endpoint)
            b = NodeSetClient(served.tls_target, ["10.0.0.2"], endpoint=endpoint)
            tasks = [asyncio.create_task(client.run()) for client in (a, b)]
            try:
                async with asyncio.timeout(20):
                    await asyncio.gather(a.synced.wait(), b.synced.wait())
                assert held(a, POD) == ["istio-system/node-agent-a", "shop/reviews-1"]
                assert held(a, SERVICE) == ["shop/reviews"]
                assert held(b, POD) == ["istio-system/node-agent-b", "shop/ratings-1"]
                assert held(b, SERVICE) == ["shop/ratings"]
                reviews = a.held[POD]["shop/reviews-1"]
                shape: Any = reviews.spec
                assert shape["status"]["hostIP"] == "10.0.0.1" and "containers" not in shape["spec"]
                assert reviews.labels == {"app": "reviews"}
                assert a.nacks == b.nacks == 0 and not a.problem
                heard_by_b = b.responses

                relabelled = api.get("pods", "shop", "reviews-1")
                assert relabelled is not None
                relabelled["metadata"]["labels"] = {"app": "reviews", "version": "v2"}
                api.replace(relabelled)
                await until(a, lambda c: "version" in c.held[POD]["shop/reviews-1"].labels)
                api.create(pod("reviews-2", "shop", "10.244.1.6", {"app": "reviews"},
                               node="node-a", host_ip="10.0.0.1"))  # fmt: skip
                await until(a, lambda c: "shop/reviews-2" in c.held[POD])
                await asyncio.sleep(0.2)  # room for a wrongly sent response to arrive
                assert b.responses == heard_by_b  # node B was sent nothing
                assert held(b, POD) == ["istio-system/node-agent-b", "shop/ratings-1"]
                assert a.connects == b.connects == 1
            finally:
                for client in (a, b):
                    client.close()
                await asyncio.gather(*tasks)
