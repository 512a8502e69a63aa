"""Micro-benchmark: what one xDS response costs a simulated proxy's client engine.

The load generator is the measuring instrument of the fan-out, storm and churn
benchmarks, so its per-message cost must stay small next to the server's.  This
feeds the same responses, in memory, through the simulated proxy's client
(``pilothouse.loadtest.SotwClient`` / ``DeltaClient``) and encodes every request
it answers with, as the proxy does before writing it: a sidecar on a mesh of
``--clusters`` EDS clusters converges (CDS, EDS, LDS, RDS), then takes
``--pushes`` pushes, each an EDS response changing one endpoint set followed
(every tenth push) by a CDS response repeating every cluster at a new version.

``--baseline PACKAGE`` runs the same feed through another copy of the package
importable under that name (for example the tree of ``main`` copied to a temp
directory as ``pilothouse_old``, imports rewritten) in the same process,
alternating rounds, and reports the ratio baseline ÷ this tree (above 1: this
tree is faster), from the fastest round of each (CPU time, not wall time: on a
shared machine the slower rounds measure the neighbours).

Run: ``.venv/bin/python bench/client_engine.py [--baseline pilothouse_old]``;
one JSON line per protocol on stdout.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envoy.service.discovery.v3 import discovery_pb2
from google.protobuf import any_pb2

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from tests.unit.loadtest.mesh_fixtures import eds_cluster, endpoints, http_listener, route

Feed = list[tuple[Any, int]]


def _sotw(type_url: str, version: str, nonce: str, bodies: dict[str, bytes]) -> Any:
    return discovery_pb2.DiscoveryResponse(
        type_url=type_url,
        version_info=version,
        nonce=nonce,
        resources=[any_pb2.Any(type_url=type_url, value=body) for body in bodies.values()],
    )


def _delta(type_url: str, version: str, nonce: str, bodies: dict[str, bytes]) -> Any:
    return discovery_pb2.DeltaDiscoveryResponse(
        type_url=type_url,
        system_version_info=version,
        nonce=nonce,
        resources=[
            discovery_pb2.Resource(
                name=name,
                version=f"{name}@{hash(body) & 0xFFFF}",
                resource=any_pb2.Any(type_url=type_url, value=body),
            )
            for name, body in bodies.items()
        ],
    )


def feed(delta: bool, clusters: int, pushes: int) -> Feed:
    """The responses, serialised and parsed back as the proxy's deserializer would."""
    make = _delta if delta else _sotw
    names = [f"outbound|9080||svc{i}.default.svc.cluster.local" for i in range(clusters)]
    cds = {name: eds_cluster(name).SerializeToString() for name in names}
    eds = {name: endpoints(name, "10.0.0.1").SerializeToString() for name in names}
    lds = {f"0.0.0.0_{p}": http_listener(p, str(p)).SerializeToString() for p in range(9000, 9010)}
    rds = {str(p): route(str(p), names[0]).SerializeToString() for p in range(9000, 9010)}
    responses = [
        make(CDS, "1", "c1", cds),
        make(EDS, "1", "e1", eds),
        make(LDS, "1", "l1", lds),
        make(RDS, "1", "r1", rds),
    ]
    for push in range(pushes):
        name = names[push % clusters]
        body = endpoints(name, f"10.0.{push % 250}.{push % 7 + 2}").SerializeToString()
        responses.append(make(EDS, str(push + 2), f"e{push + 2}", {name: body}))
        if push % 10 == 9:
            responses.append(make(CDS, str(push + 2), f"c{push + 2}", cds))
    parse = (
        discovery_pb2.DeltaDiscoveryResponse if delta else discovery_pb2.DiscoveryResponse
    ).FromString
    out: Feed = []
    for response in responses:
        data = response.SerializeToString()
        out.append((parse(data), len(data)))
    return out


def encoder(package: ModuleType) -> Callable[[Any], bytes]:
    """How the package's simulated proxy turns a request into bytes."""
    try:
        wire = importlib.import_module(package.__name__ + ".protocol.client_wire")
    except ImportError:
        return lambda request: bytes(request.SerializeToString())
    encode: Callable[[Any], bytes] = wire.RequestEncoder().encode
    return encode


def run_once(package: ModuleType, delta: bool, responses: Feed) -> tuple[float, int]:
    """CPU seconds to feed every response and encode every request; requests sent.

    CPU time of this process, not wall time: on a shared machine the wall clock
    mostly measures how often the process was waiting for a core.
    """
    loadtest = importlib.import_module(package.__name__ + ".loadtest")
    identity = loadtest.mesh_identity(loadtest.ProxyFlavour.SIDECAR, "10.0.0.1", "a", "default")
    plan = loadtest.EnvoyPlan()
    reader = loadtest.ResourceReader(plan.decoded_types)
    client_type = loadtest.DeltaClient if delta else loadtest.SotwClient
    client = client_type(identity, plan, reader)
    encode = encoder(package)
    sent = 0
    began = time.process_time()
    for request in client.open_stream():
        encode(request)
        sent += 1
    now = 0.0
    for response, size in responses:
        now += 0.001
        for request in client.on_response(response, size, now):
            encode(request)
            sent += 1
    return time.process_time() - began, sent


def measure(
    packages: list[ModuleType], delta: bool, responses: Feed, rounds: int
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {p.__name__: [] for p in packages}
    for round_number in range(rounds):
        for package in packages if round_number % 2 == 0 else packages[::-1]:
            seconds, _ = run_once(package, delta, responses)
            times[package.__name__].append(seconds)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="another copy of the package, by import name")
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--pushes", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=11)
    options = parser.parse_args()
    packages = [importlib.import_module("pilothouse")]
    if options.baseline:
        packages.append(importlib.import_module(options.baseline))
    for delta in (False, True):
        responses = feed(delta, options.clusters, options.pushes)
        times = measure(packages, delta, responses, options.rounds)
        per = {name: min(t) / len(responses) * 1e6 for name, t in times.items()}
        line: dict[str, Any] = {
            "protocol": "delta" if delta else "sotw",
            "responses": len(responses),
            "us_per_response": {name: round(us, 2) for name, us in per.items()},
            "us_per_response_median": {
                name: round(statistics.median(t) / len(responses) * 1e6, 2)
                for name, t in times.items()
            },
        }
        if options.baseline:
            line["ratio_baseline_to_this"] = round(per[options.baseline] / per["pilothouse"], 3)
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
