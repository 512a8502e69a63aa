"""Micro-benchmark: what recording ACKed resources (for the inspector) costs the push path.

Every stream engine keeps, per type, references to the resources each response carried
and folds them into what the proxy ACKed when the ACK arrives
(``pilothouse.xds.protocol.acked``). This drives the server side of the push path in
memory, with no I/O: ``--proxies`` stream engines (SotW, then delta) converge on a mesh
of ``--clusters`` EDS clusters, 10 listeners and 10 route configurations; then
``--pushes`` pushes go to every engine, each an endpoint change of one cluster (the EDS
fast path) and, every tenth, a cluster change (a full push, CDS), and every response is
ACKed. Only the engines' own calls are timed (``push_*`` and ``receive`` of the ACKs),
in CPU time; building the requests and reading nonces are not.

``--baseline PACKAGE`` runs the same pushes through another copy of the package
importable under that name: the tree of ``main``, without the recording, copied as
``pilothouse_old`` with its imports rewritten::

    cp -r ../main/src/pilothouse /tmp/old/pilothouse_old
    grep -rl pilothouse /tmp/old/pilothouse_old | xargs sed -i \\
        -e 's/\\bpilothouse\\./pilothouse_old./g' \\
        -e 's/from pilothouse import/from pilothouse_old import/g'
    PYTHONPATH=/tmp/old .venv/bin/python bench/acked_recording.py --baseline pilothouse_old

Rounds alternate between the two and the fastest round of each is compared: the ratio
this ÷ baseline is the recording's cost (1.00: none). On a loaded shared machine that
ratio moves by ±10 % from run to run, more than the recording costs; so the recording
is also timed on its own: one run's calls to the record (``sent`` and ``answered``,
with their arguments, in order) are captured and replayed on fresh records, and their
CPU time is reported per proxy push and as a share of the engines' time in the same
rounds (``recording_share``). One JSON line per protocol.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envoy.service.discovery.v3 import discovery_pb2

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from tests.unit.loadtest.mesh_fixtures import eds_cluster, endpoints, http_listener, route

LISTENERS = [f"0.0.0.0_{port}" for port in range(9000, 9010)]
ROUTES = [str(port) for port in range(9000, 9010)]


class Mesh:
    """Encoded resources by type and name, one object per content as the cache keeps them."""

    def __init__(self, package: ModuleType, clusters: int) -> None:
        self.resource = importlib.import_module(package.__name__ + ".push.cache").Resource
        encode = importlib.import_module(package.__name__ + ".xds.builders.encode")
        self._encode = encode
        self.names = [f"outbound|9080||svc{i}.default.svc.cluster.local" for i in range(clusters)]
        self.held: dict[str, dict[str, Any]] = {
            CDS: {n: self._make(n, eds_cluster(n)) for n in self.names},
            EDS: {n: self._make(n, endpoints(n, "10.0.0.1")) for n in self.names},
            LDS: {n: self._make(n, http_listener(int(n[-4:]), n[-4:])) for n in LISTENERS},
            RDS: {n: self._make(n, route(n, self.names[0])) for n in ROUTES},
        }
        self.version = "v1"

    def _make(self, name: str, message: Any) -> Any:
        body = self._encode.to_any_bytes(message)
        return self.resource(name, self._encode.content_hash(body), body)

    def change_endpoints(self, index: int) -> str:
        name = self.names[index % len(self.names)]
        address = f"10.{index // 62500 % 250}.{index // 250 % 250}.{index % 250 + 2}"
        self.held[EDS] = {**self.held[EDS], name: self._make(name, endpoints(name, address))}
        self.version = f"v{index + 2}"
        return name

    def change_clusters(self, index: int) -> None:
        name = self.names[index % len(self.names)]
        cluster = eds_cluster(name)
        cluster.connect_timeout.seconds = index % 30 + 1
        self.held[CDS] = {**self.held[CDS], name: self._make(name, cluster)}
        self.version = f"v{index + 2}"

    # -- the stream engine's ResourceSource -----------------------------------------

    def generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Any]:
        held = self.held.get(type_url, {})
        if names is None:
            return held
        return {n: held[n] for n in names if n in held}

    def warming(self, added: frozenset[str]) -> frozenset[str]:
        return frozenset()


class Proxy:
    """One stream engine and the requests its client would send."""

    def __init__(self, package: ModuleType, mesh: Mesh, delta: bool) -> None:
        engine_module = importlib.import_module(package.__name__ + ".xds.protocol.stream_engine")
        self.engine = engine_module.StreamEngine(mesh, delta=delta, warming_timeout=5.0)
        self.delta = delta
        self.watched = {CDS: (), EDS: tuple(mesh.names), LDS: (), RDS: tuple(ROUTES)}

    def first(self, type_url: str) -> Any:
        names = self.watched[type_url]
        if self.delta:
            return discovery_pb2.DeltaDiscoveryRequest(
                type_url=type_url, resource_names_subscribe=list(names) or ["*"]
            )
        return discovery_pb2.DiscoveryRequest(type_url=type_url, resource_names=list(names))

    def ack(self, response: Any) -> Any:
        """The ACK of one response (built outside the timed part)."""
        if self.delta:
            message = discovery_pb2.DeltaDiscoveryResponse.FromString(response.body)
            return discovery_pb2.DeltaDiscoveryRequest(
                type_url=response.type_url, response_nonce=message.nonce
            )
        message = discovery_pb2.DiscoveryResponse.FromString(response.body)
        return discovery_pb2.DiscoveryRequest(
            type_url=response.type_url,
            version_info=message.version_info,
            response_nonce=message.nonce,
            resource_names=list(self.watched[response.type_url]),
        )


def run_once(package: ModuleType, delta: bool, proxies: int, clusters: int, pushes: int) -> float:
    """CPU seconds the engines spent pushing and taking ACKs, after convergence."""
    mesh = Mesh(package, clusters)
    fleet = [Proxy(package, mesh, delta) for _ in range(proxies)]
    for proxy in fleet:
        for type_url in (CDS, EDS, LDS, RDS):
            waiting = list(proxy.engine.receive(proxy.first(type_url), 0.0))
            while waiting:
                waiting += proxy.engine.receive(proxy.ack(waiting.pop(0)), 0.0)
    spent = 0.0
    for push in range(pushes):
        full = push % 10 == 9
        if full:
            mesh.change_clusters(push)
        else:
            changed = frozenset({mesh.change_endpoints(push)})
        for proxy in fleet:
            began = time.process_time()
            if full:
                out = proxy.engine.push_full(1.0, endpoints=False)
            else:
                out = proxy.engine.push_endpoints(changed, 1.0)
            spent += time.process_time() - began
            waiting = list(out)
            while waiting:  # ACK each response, and what an ACK is answered with
                ack = proxy.ack(waiting.pop(0))
                began = time.process_time()
                waiting += proxy.engine.receive(ack, 1.0)
                spent += time.process_time() - began
    return spent


def capture(
    delta: bool, proxies: int, clusters: int, pushes: int
) -> list[tuple[int, str, tuple[Any, ...], dict[str, Any]]]:
    """One run of this tree's engines, with every call to their records noted."""
    acked = importlib.import_module("pilothouse.xds.protocol.acked")
    original = acked.AckedResources
    calls: list[tuple[int, str, tuple[Any, ...], dict[str, Any]]] = []
    ids: dict[int, int] = {}

    class Noting(original):  # type: ignore[misc, valid-type]
        __slots__ = ()

        def sent(self, *args: Any, **kwargs: Any) -> None:
            calls.append((ids.setdefault(id(self), len(ids)), "sent", args, kwargs))
            super().sent(*args, **kwargs)

        def answered(self, *args: Any, **kwargs: Any) -> None:
            calls.append((ids.setdefault(id(self), len(ids)), "answered", args, kwargs))
            super().answered(*args, **kwargs)

    flavour = importlib.import_module("pilothouse.xds.protocol.stream_flavour")
    flavour.AckedResources = Noting  # type: ignore[attr-defined]
    try:
        run_once(importlib.import_module("pilothouse"), delta, proxies, clusters, pushes)
    finally:
        flavour.AckedResources = original  # type: ignore[attr-defined]
    return calls


def replay(calls: list[tuple[int, str, tuple[Any, ...], dict[str, Any]]]) -> float:
    """CPU seconds the captured calls take on fresh records (the convergence included)."""
    acked = importlib.import_module("pilothouse.xds.protocol.acked")
    records: dict[int, Any] = {}
    bound = []
    for owner, method, args, kwargs in calls:
        record = records.get(owner)
        if record is None:
            record = records[owner] = acked.AckedResources()
        bound.append((getattr(record, method), args, kwargs))
    began = time.process_time()
    for call, args, kwargs in bound:
        call(*args, **kwargs)
    return time.process_time() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="another copy of the package, by import name")
    parser.add_argument("--proxies", type=int, default=100)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--pushes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()
    packages = [importlib.import_module("pilothouse")]
    if options.baseline:
        packages.append(importlib.import_module(options.baseline))
    for delta in (False, True):
        times: dict[str, list[float]] = {p.__name__: [] for p in packages}
        for round_number in range(options.rounds):
            for package in packages if round_number % 2 == 0 else packages[::-1]:
                seconds = run_once(
                    package, delta, options.proxies, options.clusters, options.pushes
                )
                times[package.__name__].append(seconds)
        calls = capture(delta, options.proxies, options.clusters, options.pushes)
        recording = min(replay(calls) for _ in range(options.rounds))
        per_push = options.proxies * options.pushes
        line: dict[str, Any] = {
            "protocol": "delta" if delta else "sotw",
            "proxy_pushes": per_push,
            "us_per_proxy_push": {n: round(min(t) / per_push * 1e6, 2) for n, t in times.items()},
            "us_per_proxy_push_median": {
                n: round(statistics.median(t) / per_push * 1e6, 2) for n, t in times.items()
            },
        }
        line["recording_calls"] = len(calls)
        line["recording_us_per_proxy_push"] = round(recording / per_push * 1e6, 2)
        line["recording_share"] = round(recording / min(times["pilothouse"]), 3)
        if options.baseline:
            line["ratio_this_to_baseline"] = round(
                min(times["pilothouse"]) / min(times[options.baseline]), 3
            )
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
