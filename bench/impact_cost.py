"""Benchmark: the impact of a change (``/debug/impact``'s computation) against the push itself.

One process holds a discovery server (``--services`` ServiceEntries with a
DestinationRule and a WorkloadEntry each, and a VirtualService for service 0, every
proxy seeing all of them) and ``--proxies`` SotW connections made as the gRPC servicer
makes them, each subscribed to CDS, EDS, LDS and RDS and having ACKed all of it. No
gRPC: responses are read from each connection's queue and ACKed in process.

Each round, alternating the two on the same machine state: the impact of a change
(``--changes``: ``route``, a new route timeout for service 0's VirtualService, or
``rule``, a new connection-pool limit in service 0's DestinationRule) as
``xds.server.impact.predict`` computes it (plan, generate every chosen proxy's routes or
clusters under the candidate context, compare with what it ACKed),
then that very change applied and pushed for real (store event, debounce, plan, every
connection's push generated and queued); then every response is ACKed (untimed). The
baseline is the real push: ``ratio_to_baseline`` is push ÷ impact (above 1: predicting
costs less than pushing). Wall time of each, median of the rounds.

Run: ``.venv/bin/python bench/impact_cost.py [--proxies 1000 10000] [--changes route
rule]``; one JSON line per change and fleet size.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from envoy.service.discovery.v3 import discovery_pb2

from bench.harness.figures import emit
from bench.harness.in_process import NAMESPACE, InProcessServer, rule_yaml
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.xds.server.impact import predict

ROUTE = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: svc-0, namespace: {ns}}}
spec:
  hosts: [svc-0.{ns}.svc.cluster.local]
  http:
  - timeout: {seconds}s
    route: [{{destination: {{host: svc-0.{ns}.svc.cluster.local}}}}]
"""


def route(state: int) -> str:
    return ROUTE.format(ns=NAMESPACE, seconds=1 + state)


CHANGES = {
    "route": ("a VirtualService edit, RDS", route),
    "rule": ("a DestinationRule edit, CDS", lambda state: rule_yaml(0, state)),
}


def drain(server: InProcessServer, names: dict[str, list[str]]) -> int:
    """ACK every queued response of every connection (and what the ACKs bring)."""
    answered = 0
    moved = True
    while moved:
        moved = False
        for connection in server.connections:
            while not connection.outbound.empty():
                queued = connection.outbound.get_nowait()
                if queued is None:
                    continue
                body = queued if isinstance(queued, bytes) else queued.body
                response = discovery_pb2.DiscoveryResponse.FromString(body)
                ack = discovery_pb2.DiscoveryRequest(
                    type_url=response.type_url,
                    version_info=response.version_info,
                    response_nonce=response.nonce,
                    resource_names=names[response.type_url],
                )
                connection.on_request(ack, time.time())
                answered += 1
                moved = True
    return answered


async def pushed(server: InProcessServer, expected: int) -> None:
    """Until the push service is idle and ``expected`` connections hold a response."""
    deadline = time.monotonic() + 120
    while server.discovery.pending_pushes() or (
        sum(not c.outbound.empty() for c in server.connections) < expected
    ):
        if time.monotonic() > deadline:
            raise TimeoutError("the push never reached every connection")
        await asyncio.sleep(0.001)


async def measure(proxies: int, services: int, rounds: int, change: str) -> dict[str, Any]:
    what, edit = CHANGES[change]
    server = InProcessServer("pilothouse")
    await server.start(services, debounce=0.001)
    server.apply(route(0))
    identities = server.identities(proxies)
    names = server.subscriptions(identities[0])
    await asyncio.sleep(0.05)
    for identity in identities:
        connection = server.connection(identity)
        server.discovery.connect(connection)
        server.connections.append(connection)
        for type_url in (CDS, LDS, EDS, RDS):
            request = discovery_pb2.DiscoveryRequest(
                type_url=type_url, resource_names=names[type_url]
            )
            connection.on_request(request, time.time())
    drain(server, names)
    loader = Loader(SCHEMAS, source="bench")
    impact_s: list[float] = []
    push_s: list[float] = []
    chosen = 0
    try:
        for state in range(1, rounds + 1):
            (candidate,) = loader.load_strict(edit(state % 2), "bench.yaml")
            gc.collect()
            started = time.perf_counter()
            report = await predict(server.discovery, [candidate], timeout=60)
            impact_s.append(time.perf_counter() - started)
            chosen = len(report.proxies)
            changed = sum(1 for p in report.proxies if p.changes)
            assert changed == proxies, f"{changed} of {proxies} proxies predicted to change"
            gc.collect()
            started = time.perf_counter()
            server.store.apply(candidate)
            await pushed(server, proxies)
            push_s.append(time.perf_counter() - started)
            drain(server, names)
    finally:
        await server.stop()
    impact, push = statistics.median(impact_s), statistics.median(push_s)
    return {
        "benchmark": f"impact_cost: impact of {what} ({proxies} proxies, {services}"
        " services, in process, no gRPC)",
        "headline": "impact_seconds",
        "proxies": proxies,
        "services": services,
        "rounds": rounds,
        "proxies_predicted": chosen,
        "impact_seconds": round(impact, 3),
        "push_seconds": round(push, 3),
        "baseline": "the same change pushed for real, rounds alternated",
        "ratio_to_baseline": round(push / impact, 2) if impact else None,
        "target": "a mesh of 10,000 proxies answers within seconds",
        "target_met": proxies < 10_000 or impact < 5.0,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--proxies", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--services", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--changes", nargs="+", choices=sorted(CHANGES), default=sorted(CHANGES))
    args = parser.parse_args()
    for change in args.changes:
        for proxies in args.proxies:
            emit([await measure(proxies, args.services, args.rounds, change)])


if __name__ == "__main__":
    asyncio.run(main())
