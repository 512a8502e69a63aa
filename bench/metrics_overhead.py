"""Benchmark: what recording the push metrics costs the push path.

Two discovery servers run side by side in this one process, on the same generated mesh
(``--services`` ServiceEntries with a DestinationRule and a WorkloadEntry each, all in
one namespace, so every proxy sees every service): one records its push metrics
(``PushMetrics()``: histograms observed, generation and writes timed), the other does
not (``PushMetrics(recording=False)``: every histogram drops what it is given and the
clock is a constant, so nothing is timed either). Each has ``--proxies`` connections
made as the gRPC servicer makes them, each with the real writer loop
(``xds/server/writer.py``) writing to an in-memory proxy that decodes every response
and ACKs it at once (the server handles the ACK before the write returns). No gRPC: the
figure is the Python push path alone, where a metric's cost shows most.

Then, ``--rounds`` times each, alternating servers so that both see the same machine:

- EDS change: service 0's WorkloadEntry moves (the EDS fast path: one EDS response to
  every proxy);
- CDS change: service 0's DestinationRule changes (a full push: a new PushContext, CDS
  to every proxy, and the EDS that the CDS ACK asks for).

Each round's CPU time (``time.process_time``) runs from the store change until every
expected response is written and ACKed. ``ratio_to_baseline`` is the median round's
CPU not recording ÷ recording (1 = recording costs nothing); two servers that both
record differ by about ±2% on a shared 2-core machine, so that ratio cannot show a
cost below that. Hence a second, exact figure: the recording work a response and its
push add (the clock reads, ``observe_send``, ``record_written``, the queue and
convergence observations), timed alone over many repetitions with and without
recording; ``recording_share`` is that difference over the CPU a response costs in
the rounds.

``--baseline PACKAGE`` adds a third server from another copy of the package (the tree
before metrics existed, say, copied as ``pilothouse_old`` with its imports rewritten
except ``pilothouse.api``), to show that the not-recording path costs what a server
without metrics did.

Run: ``.venv/bin/python bench/metrics_overhead.py``; one JSON line per change.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import importlib
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

from bench.generation_watches import eds_name, route_names
from bench.harness.figures import emit
from bench.harness.mesh import DESTINATION_RULE, PORT, SERVICE_ENTRY, WORKLOAD_ENTRY
from pilothouse.loadtest.fleet import fleet_identities
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS

NAMESPACE = "bench"
TYPES = (CDS, EDS, LDS, RDS)
ROUND_TIMEOUT = 60.0
TARGET_SHARE = 0.01


def mesh_yaml(services: int, state: int = 0) -> str:
    docs = []
    for index in range(services):
        name = f"svc-{index}"
        host = f"{name}.{NAMESPACE}.svc.cluster.local"
        docs.append(SERVICE_ENTRY.format(name=name, ns=NAMESPACE, host=host, port=PORT))
        docs.append(rule_yaml(index, state if index == 0 else 0))
        docs.append(endpoint_yaml(index, state if index == 0 else 0))
    return "---\n".join(docs)


def rule_yaml(index: int, state: int) -> str:
    host = f"svc-{index}.{NAMESPACE}.svc.cluster.local"
    return DESTINATION_RULE.format(
        name=f"svc-{index}", ns=NAMESPACE, host=host, max_connections=100 + state
    )


def endpoint_yaml(index: int, state: int) -> str:
    address = f"10.{index // 250}.{index % 250}.{10 + state}"
    return WORKLOAD_ENTRY.format(name=f"svc-{index}", index=0, ns=NAMESPACE, address=address)


class Tally:
    """Counts written responses; ``wait`` returns once ``target`` more have been written."""

    def __init__(self) -> None:
        self.written = 0
        self._target = 0
        self._reached = asyncio.Event()

    def arm(self, expected: int) -> None:
        self._target = self.written + expected
        self._reached.clear()

    def note(self) -> None:
        self.written += 1
        if self.written >= self._target:
            self._reached.set()

    async def wait(self) -> None:
        await asyncio.wait_for(self._reached.wait(), ROUND_TIMEOUT)


class Peer:
    """The proxy end of one in-memory stream: decodes each response and ACKs it with the
    names it watches, before the write returns."""

    def __init__(self, connection: Any, names: dict[str, list[str]], tally: Tally) -> None:
        self._connection = connection
        self._names = names
        self._tally = tally

    async def write(self, body: bytes) -> None:
        response = discovery_pb2.DiscoveryResponse.FromString(body)
        ack = discovery_pb2.DiscoveryRequest(
            type_url=response.type_url,
            version_info=response.version_info,
            response_nonce=response.nonce,
            resource_names=self._names[response.type_url],
        )
        self._connection.on_request(ack, time.time())
        self._tally.note()


class Side:
    """One discovery server of ``package`` with its connections and in-memory proxies."""

    def __init__(self, label: str, package: ModuleType, recording: bool | None) -> None:
        self.label = label
        self._package = package
        self._recording = recording
        self._module: Callable[[str], ModuleType] = lambda name: importlib.import_module(
            f"{package.__name__}.{name}"
        )
        self.tally = Tally()
        self.store: Any = None
        self.discovery: Any = None
        self.connections: list[Any] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self.cpu: dict[str, list[float]] = {"eds": [], "cds": []}
        self.expected: dict[str, int] = {}

    def apply(self, text: str) -> None:
        loader = self._module("config.load").Loader(
            self._module("kinds.table").SCHEMAS, source="bench"
        )
        for config in loader.load_strict(text, "bench.yaml"):
            self.store.apply(config)

    async def start(self, services: int, proxies: int) -> None:
        settings_module = self._module("settings")
        settings = settings_module.XdsSettings(
            debounce=settings_module.DebounceSettings(debounce_after=0.0)
        )
        self.store = self._module("sources.memory").MemoryStore("bench")
        self.apply(mesh_yaml(services))
        self.store.mark_synced()
        server_class = self._module("xds.server.discovery").DiscoveryServer
        if self._recording is None:
            self.discovery = server_class(self.store, settings=settings)
        else:
            metrics = self._module("metrics.push").PushMetrics(recording=self._recording)
            self.discovery = server_class(self.store, settings=settings, metrics=metrics)
        self._tasks.append(asyncio.create_task(self.discovery.run()))
        await asyncio.wait_for(self.discovery.wait_ready(), 60)
        identities = fleet_identities(proxies, namespaces=(NAMESPACE,), app="client")
        names = self._subscriptions(identities[0])
        for identity in identities:
            connection = self._connection(identity)
            self.discovery.connect(connection)
            self.connections.append(connection)
            peer = Peer(connection, names, self.tally)
            self._tasks.append(asyncio.create_task(self._writer(connection, peer)))
            for type_url in TYPES:
                request = discovery_pb2.DiscoveryRequest(
                    type_url=type_url, resource_names=names[type_url]
                )
                if type_url == CDS:
                    request.node.id = identity.node_id
                connection.on_request(request, time.time())
        await self.quiet()

    def _connection(self, identity: Any) -> Any:
        proxy = self._module("push.proxy").parse_node(identity.node_id, dict(identity.metadata))
        connection_class = self._module("xds.server.connection").Connection
        connection_id = self.discovery.next_connection_id(proxy.node_id)
        if self._recording is None:
            return connection_class(connection_id, "bench", proxy, self.discovery, delta=False)
        return connection_class(
            connection_id,
            "bench",
            proxy,
            self.discovery,
            delta=False,
            clock=self.discovery.metrics.clock,
        )

    async def _writer(self, connection: Any, peer: Peer) -> None:
        try:
            writer = self._module("xds.server.writer")
        except ModuleNotFoundError:  # a tree before metrics: the servicer's own loop
            stream = self._module("xds.server.ads").StreamHandler
            await stream._write(connection, peer)
            return
        await writer.write_responses(connection, peer.write, self.discovery)

    def _subscriptions(self, identity: Any) -> dict[str, list[str]]:
        """What every proxy watches: CDS and LDS by wildcard, then the EDS and RDS names
        the clusters and listeners of a probe connection point at."""
        probe = self._connection(identity)
        seen: dict[str, list[Any]] = {}
        for type_url in (CDS, LDS):
            probe.on_request(discovery_pb2.DiscoveryRequest(type_url=type_url), time.time())
            queued = probe.outbound.get_nowait()
            body = queued if isinstance(queued, bytes) else queued.body
            seen[type_url] = list(discovery_pb2.DiscoveryResponse.FromString(body).resources)
        clusters = [_unpack(CDS, r) for r in seen[CDS]]
        listeners = [_unpack(LDS, r) for r in seen[LDS]]
        eds = sorted({n for n in map(eds_name, clusters) if n is not None})
        rds = sorted({n for listener in listeners for n in route_names(listener)})
        return {CDS: [], LDS: [], EDS: eds, RDS: rds}

    async def quiet(self) -> None:
        """Until nothing is queued, pushed, or waiting to be written or ACKed."""
        deadline = time.monotonic() + ROUND_TIMEOUT
        while self.discovery.pending_pushes() or any(
            not c.outbound.empty() or c.settling or not _answered(c) for c in self.connections
        ):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.label}: pushes never settled")
            await asyncio.sleep(0.01)

    async def learn(self, kind: str, state: int) -> None:
        """Run one change of ``kind`` untimed and remember how many responses it takes."""
        before = self.tally.written
        self._change(kind, state)
        await asyncio.sleep(0.05)
        await self.quiet()
        self.expected[kind] = self.tally.written - before
        if not self.expected[kind]:
            raise RuntimeError(f"{self.label}: a {kind} change wrote nothing")

    async def measure(self, kind: str, state: int) -> None:
        self.tally.arm(self.expected[kind])
        started = time.process_time()
        self._change(kind, state)
        await self.tally.wait()
        self.cpu[kind].append(time.process_time() - started)
        await self.quiet()

    def _change(self, kind: str, state: int) -> None:
        self.apply(endpoint_yaml(0, state) if kind == "eds" else rule_yaml(0, state))

    async def stop(self) -> None:
        self.discovery.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _unpack(type_url: str, packed: Any) -> Any:
    from bench.generation_watches import MESSAGES

    message = MESSAGES[type_url]()
    packed.Unpack(message)
    return message


def _answered(connection: Any) -> bool:
    return all(w.nonce_acked == w.nonce_sent for w in connection.sotw.watches.values())


class MetricWork:
    """The metric work one response and its push do on the push path, for one server:
    what ``ProxyResources.generate``, ``Connection._send``, the writer, the push workers
    and ``PushService._push_target`` add for metrics."""

    def __init__(self, recording: bool) -> None:
        from pilothouse.metrics.push import PushMetrics
        from pilothouse.sources.memory import MemoryStore
        from pilothouse.xds.server.discovery import DiscoveryServer

        self.metrics = PushMetrics(recording=recording)
        self.server = DiscoveryServer(MemoryStore("micro"), metrics=self.metrics)
        self.best = float("inf")

    def sample(self, repetitions: int) -> None:
        metrics, server = self.metrics, self.server
        clock = metrics.clock
        observe_send, record_written = server.observe_send, server.record_written
        queue_time, convergence = metrics.queue_time.observe, metrics.convergence.observe
        timed: dict[str, float] = {}
        started = time.perf_counter()
        for _ in range(repetitions):
            begun = clock()  # ProxyResources.generate
            timed[EDS] = timed.get(EDS, 0.0) + clock() - begun
            observe_send(None, EDS, 1234)  # type: ignore[arg-type]  # Connection._send
            generation, queued_at = timed.pop(EDS, 0.0), clock()
            write_started = clock()  # the writer
            done = clock()
            record_written(EDS, generation + done - queued_at, done - write_started)
            queue_time(0.001)  # the push workers
            convergence(0.2)  # PushService._push_target
        self.best = min(self.best, (time.perf_counter() - started) / repetitions * 1e6)


def metric_work_us(samples: int = 60, repetitions: int = 5_000) -> dict[bool, float]:
    """µs of that work per response, recording and not: the fastest of many short
    samples, the two alternating (short samples are seldom interrupted)."""
    work = {recording: MetricWork(recording) for recording in (True, False)}
    for _ in range(samples):
        sample_work(work, repetitions)
    for one in work.values():
        one.server.close()
    return {recording: one.best for recording, one in work.items()}


def sample_work(work: dict[bool, MetricWork], repetitions: int = 5_000) -> None:
    for one in work.values():
        one.sample(repetitions)


@dataclasses.dataclass(frozen=True)
class Options:
    services: int
    proxies: int
    rounds: int
    baseline: str
    work_samples: int = 160


async def run(options: Options) -> list[dict[str, Any]]:
    package = importlib.import_module("pilothouse")
    sides = [Side("recording", package, True), Side("not_recording", package, False)]
    if options.baseline:
        sides.append(Side("baseline_tree", importlib.import_module(options.baseline), None))
    for side in sides:
        await side.start(options.services, options.proxies)
    try:
        for kind in ("eds", "cds"):
            for side in sides:
                await side.learn(kind, 1)
        work = {recording: MetricWork(recording) for recording in (True, False)}
        gc.collect()
        gc.freeze()
        for round_number in range(options.rounds):
            state = round_number % 2  # toggles: every round is a real change
            for kind in ("eds", "cds"):
                order = sides if round_number % 2 == 0 else sides[::-1]
                for side in order:
                    await side.measure(kind, state)
            # the work alone, sampled between rounds: under the same machine load
            for _ in range(max(1, options.work_samples // options.rounds)):
                sample_work(work)
    finally:
        for side in sides:
            await side.stop()
    micro = {recording: one.best for recording, one in work.items()}
    return [report(kind, sides, options, micro) for kind in ("eds", "cds")]


DESCRIPTIONS = {
    "eds": "EDS change to every proxy (the EDS fast path)",
    "cds": "CDS change to every proxy (full push, new PushContext)",
}


def report(
    kind: str, sides: list[Side], options: Options, micro: dict[bool, float]
) -> dict[str, Any]:
    by_label = {side.label: side for side in sides}
    recording, off = by_label["recording"], by_label["not_recording"]
    responses = recording.expected[kind]
    median = {side.label: statistics.median(side.cpu[kind]) for side in sides}
    best = {side.label: min(side.cpu[kind]) for side in sides}
    ratio = median["not_recording"] / median["recording"]
    per_response = median["not_recording"] / responses * 1e6
    cost = micro[True] - micro[False]
    share = cost / per_response
    line: dict[str, Any] = {
        "benchmark": f"metrics_overhead: {DESCRIPTIONS[kind]} "
        f"({options.proxies} proxies, in process)",
        "headline": "recording_share",
        "baseline": "the same server and push with metrics not recorded "
        "(PushMetrics(recording=False): histograms drop observations, no clock read)",
        "services": options.services,
        "proxies": options.proxies,
        "rounds": options.rounds,
        "responses_per_round": responses,
        "us_per_response_with_metrics": round(median["recording"] / responses * 1e6, 2),
        "us_per_response_without": round(per_response, 2),
        "recording_work_us": round(micro[True], 3),
        "not_recording_work_us": round(micro[False], 3),
        "recording_cost_us_per_response": round(cost, 3),
        "recording_share": round(share, 5),
        "fastest_round_ratio": round(best["not_recording"] / best["recording"], 3),
        "ratio_to_baseline": round(ratio, 3),
        "ratio_definition": "median round's CPU without recording ÷ with recording "
        "(1 = recording costs nothing; on a shared 2-core machine two identical servers "
        "differ by a few percent, so this cannot show a cost below that)",
        "target": f"recording must not show in the push: recording share ≤ {TARGET_SHARE:.0%}",
        "target_met": "yes" if share <= TARGET_SHARE else "no",
    }
    if off.expected[kind] != responses:
        line["warning"] = "the two servers wrote different numbers of responses"
    if options.baseline:
        line["baseline_tree_us_per_response"] = round(
            median["baseline_tree"] / by_label["baseline_tree"].expected[kind] * 1e6, 2
        )
        line["ratio_baseline_tree_to_recording"] = round(
            median["baseline_tree"] / median["recording"], 3
        )
        line["ratio_baseline_tree_to_not_recording"] = round(
            median["baseline_tree"] / median["not_recording"], 3
        )
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--services", type=int, default=100)
    parser.add_argument("--proxies", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=80)
    parser.add_argument("--baseline", default="", help="another copy of the package")
    parser.add_argument(
        "--work-samples", type=int, default=160, help="samples of the metric work alone"
    )
    args = parser.parse_args()
    options = Options(
        args.services, args.proxies, args.rounds, args.baseline, args.work_samples
    )
    for line in asyncio.run(run(options)):
        emit([line])


if __name__ == "__main__":
    main()
