"""Micro-benchmark: what ``control_plane.identifier`` on every response costs the push path.

Every SotW and delta response carries the replica's identity
(:mod:`pilothouse.xds.server.control_plane`). It is encoded once per process and
appended as bytes; this measures a response assembled with it against the same
response without it (the baseline, in the same process, rounds alternating), for a
large response (``--clusters`` resources, a full CDS push) and a one-resource one (an
EDS fast-path push, where a fixed cost weighs most). For scale it also times what
encoding the field for every response would have cost instead.

Run: ``.venv/bin/python bench/control_plane_cost.py``; one JSON line per case on
stdout: microseconds per response with and without the field (fastest round of CPU
time, so that a shared machine's neighbours do not count), and their ratio.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.type_urls import CDS
from pilothouse.push.cache import Resource
from pilothouse.xds.builders.encode import content_hash, to_any_bytes
from pilothouse.xds.protocol.wire import (
    NO_CONTROL_PLANE,
    ControlPlaneField,
    control_plane_field,
    delta_response,
    sotw_response,
)
from pilothouse.xds.server.control_plane import ControlPlaneIdentity


def resources(count: int) -> list[Resource]:
    out = []
    for index in range(count):
        name = f"outbound|9080|v{index % 3}|svc-{index}.ns-{index % 10}.svc.cluster.local"
        cluster = cluster_pb2.Cluster(name=name, type=cluster_pb2.Cluster.EDS)
        cluster.eds_cluster_config.service_name = name
        cluster.connect_timeout.seconds = 10
        body = to_any_bytes(cluster)
        out.append(Resource(name, content_hash(body), body))
    return out


def cpu_per_call(call: Callable[[], object], repeat: int) -> float:
    start = time.process_time()
    for _ in range(repeat):
        call()
    return (time.process_time() - start) / repeat


def compare(
    name: str, build: Callable[[ControlPlaneField], object], repeat: int, rounds: int
) -> dict[str, object]:
    field = ControlPlaneIdentity("pilothouse-0.istio-system:15010").encoded
    identifier = ControlPlaneIdentity("pilothouse-0.istio-system:15010").identifier
    timings: dict[str, list[float]] = {"with": [], "without": [], "encoded_each_time": []}
    for _ in range(rounds):
        timings["without"].append(cpu_per_call(lambda: build(NO_CONTROL_PLANE), repeat))
        timings["with"].append(cpu_per_call(lambda: build(field), repeat))
        timings["encoded_each_time"].append(
            cpu_per_call(lambda: build(control_plane_field(identifier)), repeat)
        )
    best = {key: min(values) * 1e6 for key, values in timings.items()}
    return {
        "case": name,
        "us_without": round(best["without"], 3),
        "us_with": round(best["with"], 3),
        "ratio_with_over_without": round(best["with"] / best["without"], 3),
        "us_encoding_each_time": round(best["encoded_each_time"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    many = resources(args.clusters)
    bodies = [r.body for r in many]
    one = many[:1]
    cases: list[tuple[str, Callable[[ControlPlaneField], object], int]] = [
        (
            f"sotw {args.clusters} resources",
            lambda f: sotw_response("v1", CDS, "n1", bodies, f),
            200,
        ),
        ("sotw 1 resource", lambda f: sotw_response("v1", CDS, "n1", [one[0].body], f), 50_000),
        (
            f"delta {args.clusters} resources",
            lambda f: delta_response("v1", CDS, "n1", many, (), f),
            50,
        ),
        ("delta 1 resource", lambda f: delta_response("v1", CDS, "n1", one, (), f), 50_000),
    ]
    for name, build, repeat in cases:
        print(json.dumps(compare(name, build, repeat, args.rounds)))


if __name__ == "__main__":
    main()
