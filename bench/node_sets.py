"""Benchmark: 1,000 node agents syncing from one pilothouse, per-node sets against everything.

One ``pilothouse serve --role config-server`` (a child process) reads a mesh directory
of ``--nodes`` nodes with ``--per-node`` WorkloadEntries each (addresses
``10.<n>``), spread over 20 namespaces and 100 apps, with one AuthorizationPolicy per
app, one namespace-wide PeerAuthentication per namespace and one mesh-wide Sidecar.
This process then runs ``--nodes`` simulated node agents, each a grpc.aio stream of the
node-set service (``pilothouse.nodeset.v1.NodeSetDiscoveryService/DeltaNodeSets``, 50
streams per channel) subscribing to every kind of a node's set, in two modes, in the
same run against the same server:

- **per-node** (pilothouse's node sets): each agent names its own node's address, so it
  is sent its node's workloads and the policies selecting them;
- **everything** (the baseline: every agent receives everything, as an unfiltered MCP
  sink does): each agent names every node's address, so its set is the whole mesh.

For each mode it records the bytes received by all agents (response messages as they
arrived on the wire, counted by the clients) and the wall time of the initial sync
(from the first stream opened to the last agent's answer to every kind), then of one
Pod change: a WorkloadEntry of node 0 gets a new label (its file rewritten; the file
source's detection is in the time, the same in both modes), timed until every agent
the change concerns has its response, and the number of agents it reached. The
streams pass the xDS port's admission with its rate limit off
(``PILOTHOUSE_XDS_ADMISSION_RATE=0``), so the sync is not paced.

Prints one JSON object per mode (each mode's best round by initial sync time) and one
summary comparing them; the baseline is the everything mode of the same run, and
``ratio_to_baseline`` is the initial sync's bytes over the baseline's. The run keeps
to ``--budget`` seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import grpc
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from bench.harness.child import ServeChild
from pilothouse.agent.node_set import node_set_types
from pilothouse.nodesets.server import DELTA_NODE_SETS, NODE_ADDRESSES_KEY, NODE_SET_SERVICE

NAMESPACES = 20
APPS = 100
STREAMS_PER_CHANNEL = 50
METHOD = f"/{NODE_SET_SERVICE}/{DELTA_NODE_SETS}"


def node_ip(n: int) -> str:
    return f"10.{n // 250}.{n % 250}.1"


def workload(n: int, j: int, per_node: int, extra: str = "") -> str:
    index = n * per_node + j
    ns, app = f"ns-{index % NAMESPACES}", f"app-{index % APPS}"
    labels = f"{{app: {app}{extra}}}"
    return (
        "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\n"
        f"metadata: {{name: w-{n}-{j}, namespace: {ns}}}\n"
        f"spec: {{address: {node_ip(n)}, labels: {labels}, serviceAccount: {app}}}\n"
    )


def write_mesh(root: Path, nodes: int, per_node: int) -> None:
    """The mesh directory: one file per node, one for the policies."""
    root.mkdir(parents=True, exist_ok=True)
    for n in range(nodes):
        text = "---\n".join(workload(n, j, per_node) for j in range(per_node))
        (root / f"node-{n}.yaml").write_text(text)
    policies = []
    for k in range(APPS):
        policies.append(
            "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
            f"metadata: {{name: app-{k}, namespace: ns-{k % NAMESPACES}}}\n"
            f"spec: {{selector: {{matchLabels: {{app: app-{k}}}}}, action: ALLOW, "
            f"rules: [{{from: [{{source: {{principals: [cluster.local/ns/ns-{k % NAMESPACES}"
            "/sa/frontend]}}]}]}\n"
        )
    for i in range(NAMESPACES):
        policies.append(
            "apiVersion: security.istio.io/v1\nkind: PeerAuthentication\n"
            f"metadata: {{name: default, namespace: ns-{i}}}\nspec: {{mtls: {{mode: STRICT}}}}\n"
        )
    policies.append(
        "apiVersion: networking.istio.io/v1\nkind: Sidecar\n"
        "metadata: {name: default, namespace: istio-system}\n"
        "spec: {egress: [{hosts: ['./*', istio-system/*]}]}\n"
    )
    (root / "policies.yaml").write_text("---\n".join(policies))


@dataclass
class Agent:
    """One simulated node agent: what it asked for and what it was sent."""

    addresses: str
    messages: int = 0
    bytes: int = 0
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def requests(self, types: tuple[str, ...]) -> list[bytes]:
        made = []
        for i, type_url in enumerate(types):
            request = discovery_pb2.DeltaDiscoveryRequest(type_url=type_url)
            if i == 0:
                request.node.id = f"node-agent~{self.addresses.split(',')[0]}"
                request.node.metadata.update({NODE_ADDRESSES_KEY: self.addresses})
            made.append(request.SerializeToString())
        return made


def _raw(body: bytes) -> bytes:
    return body


async def follow(channel: grpc.aio.Channel, agent: Agent, types: tuple[str, ...]) -> None:
    """Hold the agent's stream open, counting what arrives (no ACKs: delta does not wait
    for them, and the node-set service does not)."""
    stop = asyncio.Event()

    async def requests() -> AsyncIterator[bytes]:
        for body in agent.requests(types):
            yield body
        await stop.wait()

    call: Any = channel.stream_stream(METHOD, request_serializer=_raw, response_deserializer=_raw)(
        requests()
    )
    try:
        async for body in call:
            agent.messages += 1
            agent.bytes += len(body)
            agent.arrived.set()
    except grpc.aio.AioRpcError as problem:
        if problem.code() is not grpc.StatusCode.CANCELLED:
            raise
    finally:
        stop.set()


async def until(agents: list[Agent], counts: list[int], deadline: float) -> float:
    """Wait until each agent has at least its count of messages; the time it happened."""
    for agent, count in zip(agents, counts, strict=True):
        while agent.messages < count:
            agent.arrived.clear()
            async with asyncio.timeout(max(deadline - time.monotonic(), 0.001)):
                await agent.arrived.wait()
    return time.perf_counter()


async def one_mode(
    mode: str,
    target: str,
    mesh: Path,
    nodes: int,
    per_node: int,
    round_no: int,
    deadline: float,
    *,
    agents: int | None = None,
) -> dict[str, Any]:
    """One mode's sync and change with ``agents`` agents (default: one per node; only
    the warm-up runs fewer, as the nodes 0, 1, …)."""
    types = node_set_types()
    everyone = ",".join(node_ip(n) for n in range(nodes))
    count = nodes if agents is None else agents
    agents_run = [Agent(everyone if mode == "everything" else node_ip(n)) for n in range(count)]
    return await _run(mode, target, mesh, agents_run, types, per_node, round_no, deadline)


async def _run(
    mode: str,
    target: str,
    mesh: Path,
    agents: list[Agent],
    types: tuple[str, ...],
    per_node: int,
    round_no: int,
    deadline: float,
) -> dict[str, Any]:
    nodes = len(agents)
    channels = [
        grpc.aio.insecure_channel(target, options=[("grpc.max_receive_message_length", -1)])
        for _ in range((nodes + STREAMS_PER_CHANNEL - 1) // STREAMS_PER_CHANNEL)
    ]
    start = time.perf_counter()
    tasks = [
        asyncio.create_task(follow(channels[i // STREAMS_PER_CHANNEL], agent, types))
        for i, agent in enumerate(agents)
    ]
    try:
        synced = await until(agents, [len(types)] * nodes, deadline)
        initial_bytes = sum(a.bytes for a in agents)
        before = [a.messages for a in agents]
        # one Pod change: a workload of node 0 gets a new label
        changed = time.perf_counter()
        extra = f", rollout: r{round_no + 1}-{mode}"
        texts = [workload(0, j, per_node, extra if j == 0 else "") for j in range(per_node)]
        (mesh / "node-0.yaml").write_text("---\n".join(texts))
        concerned = agents if mode == "everything" else agents[:1]
        reached_at = await until(
            concerned, [before[agents.index(a)] + 1 for a in concerned], deadline
        )
        await asyncio.sleep(0.5)  # anything sent to agents it does not concern arrives by now
        reached = sum(1 for a, b in zip(agents, before, strict=True) if a.messages > b)
        change_bytes = sum(a.bytes for a in agents) - initial_bytes
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for channel in channels:
            await channel.close()
    return {
        "benchmark": f"node_sets: {mode}",
        "agents": nodes,
        "workloads_per_node": per_node,
        "initial_sync_seconds": round(synced - start, 3),
        "initial_sync_bytes": initial_bytes,
        "initial_bytes_per_agent": round(initial_bytes / nodes),
        "change_seconds": round(reached_at - changed, 3),
        "change_bytes": change_bytes,
        "change_agents_reached": reached,
        "headline": "initial_sync_bytes",
    }


async def measure(args: argparse.Namespace, mesh: Path, target: str) -> list[dict[str, Any]]:
    end = time.monotonic() + args.budget
    # warm-up, not counted: one agent of a small mesh view makes the server encode every
    # object once, so neither mode pays for first encodings the other reuses
    await one_mode("everything", target, mesh, args.nodes, args.per_node, -1, end, agents=1)
    results: dict[str, dict[str, Any]] = {}
    for round_no in range(args.rounds):
        modes = ("per-node", "everything") if round_no % 2 == 0 else ("everything", "per-node")
        for mode in modes:
            left = end - time.monotonic()
            if left <= 0:
                break
            result = await one_mode(mode, target, mesh, args.nodes, args.per_node, round_no, end)
            best = results.get(mode)
            if best is None or result["initial_sync_seconds"] < best["initial_sync_seconds"]:
                results[mode] = result
    return list(results.values())


def summary(per_node: dict[str, Any], everything: dict[str, Any]) -> dict[str, Any]:
    def ratio(key: str) -> float:
        return round(everything[key] / max(per_node[key], 1e-9), 1)

    return {
        "benchmark": "node_sets",
        "baseline": "every agent receives everything (same server, same run)",
        "agents": per_node["agents"],
        "workloads_per_node": per_node["workloads_per_node"],
        "pilothouse_initial_sync_kib": round(per_node["initial_sync_bytes"] / 1024, 1),
        "baseline_initial_sync_kib": round(everything["initial_sync_bytes"] / 1024, 1),
        "pilothouse_initial_sync_seconds": per_node["initial_sync_seconds"],
        "baseline_initial_sync_seconds": everything["initial_sync_seconds"],
        "pilothouse_change_bytes": per_node["change_bytes"],
        "baseline_change_bytes": everything["change_bytes"],
        "pilothouse_change_seconds": per_node["change_seconds"],
        "baseline_change_seconds": everything["change_seconds"],
        "pilothouse_change_agents_reached": per_node["change_agents_reached"],
        "baseline_change_agents_reached": everything["change_agents_reached"],
        "initial_bytes_ratio": ratio("initial_sync_bytes"),
        "change_bytes_ratio": ratio("change_bytes"),
        "ratio_to_baseline": round(
            per_node["initial_sync_bytes"] / max(everything["initial_sync_bytes"], 1), 4
        ),
        "headline": "pilothouse_initial_sync_kib",
        "target": "a change reaches only the agents it concerns (1 of N)",
        "target_met": per_node["change_agents_reached"] == 1,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--per-node", type=int, default=2, help="WorkloadEntries per node")
    parser.add_argument("--rounds", type=int, default=1, help="each mode's best is kept")
    parser.add_argument("--budget", type=float, default=150.0, help="seconds for the run")
    args = parser.parse_args()
    os.environ["PILOTHOUSE_XDS_ADMISSION_RATE"] = "0"
    with tempfile.TemporaryDirectory(prefix="node-sets-") as scratch, ExitStack() as stack:
        workdir = Path(scratch)
        mesh = workdir / "mesh"
        write_mesh(mesh, args.nodes, args.per_node)
        server = ServeChild("pilothouse", workdir, "--role", "config-server", "--config", str(mesh))
        stack.callback(server.stop)
        server.serve_ready(60.0)
        results = asyncio.run(measure(args, mesh, f"127.0.0.1:{server.xds_port}"))
        by_mode = {r["benchmark"].split(": ")[1]: r for r in results}
        if len(by_mode) == 2:
            base = by_mode["everything"]
            for result in results:
                result["baseline"] = "every agent receives everything (same run)"
                result["ratio_to_baseline"] = round(
                    result["initial_sync_bytes"] / max(base["initial_sync_bytes"], 1), 4
                )
        for result in results:
            print(json.dumps(result), flush=True)
        if len(by_mode) == 2:
            print(json.dumps(summary(by_mode["per-node"], by_mode["everything"])), flush=True)


if __name__ == "__main__":
    main()
