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
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envoy.service.discovery.v3 import discovery_pb2

from bench.harness.figures import emit
from bench.harness.in_process import (
    TYPES,
    InProcessServer,
    Write,
    ack_of,
    endpoint_yaml,
    rule_yaml,
)
from pilothouse.protocol.type_urls import CDS, EDS

ROUND_TIMEOUT = 60.0
TARGET_SHARE = 0.01


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


class Side(InProcessServer):
    """One discovery server with metrics recorded or not (``recording``; None: a tree
    before metrics), whose in-memory proxies decode each response and ACK it with the
    names they watch before the write returns."""

    def __init__(self, label: str, package: str, recording: bool | None) -> None:
        super().__init__(label, package)
        self._recording = recording
        self.tally = Tally()
        self.cpu: dict[str, list[float]] = {"eds": [], "cds": []}
        self.expected: dict[str, int] = {}

    async def start_fleet(self, services: int, proxies: int) -> None:
        if self._recording is None:
            await self.start(services, 0.0)
        else:
            metrics = self.module("metrics.push").PushMetrics(recording=self._recording)
            await self.start(services, 0.0, metrics=metrics)
        identities = self.identities(proxies)
        names = self.subscriptions(identities[0])
        for identity in identities:
            clock = {} if self._recording is None else {"clock": self.discovery.metrics.clock}
            connection = self.connection(identity, **clock)
            self.serve(connection, self._peer(connection, names))
            for type_url in TYPES:
                request = discovery_pb2.DiscoveryRequest(
                    type_url=type_url, resource_names=names[type_url]
                )
                if type_url == CDS:
                    request.node.id = identity.node_id
                connection.on_request(request, time.time())
        await self.quiet()

    def _peer(self, connection: Any, names: dict[str, list[str]]) -> Write:
        async def write(body: bytes) -> None:
            connection.on_request(ack_of(body, names), time.time())
            self.tally.note()

        return write

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
    sides = [Side("recording", "pilothouse", True), Side("not_recording", "pilothouse", False)]
    if options.baseline:
        sides.append(Side("baseline_tree", options.baseline, None))
    for side in sides:
        await side.start_fleet(options.services, options.proxies)
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
    options = Options(args.services, args.proxies, args.rounds, args.baseline, args.work_samples)
    for line in asyncio.run(run(options)):
        emit([line])


if __name__ == "__main__":
    main()
