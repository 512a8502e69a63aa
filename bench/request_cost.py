"""Benchmark: server CPU per request on the ACK side of a push, this tree against another.

What a proxy's requests cost the server, from a ``DiscoveryRequest``'s bytes to the
decision what (if anything) they trigger: the servicer's request parser (the message
and the fingerprint of its names) and ``StreamHandler._handle`` down through the
connection, the stream engine and the SotW session. One process holds two in-process
discovery servers (:mod:`bench.harness.in_process`), ``--proxies`` SotW connections
each: this tree's package and ``--baseline`` (another tree's ``src/pilothouse``
copied under another name, its imports rewritten, as ``bench/acked_recording.py``
describes), so both run on the same machine at the same moments. Rounds alternate the
two sides and flip their order every round.

Each round, per side, after a CDS change (service 0's DestinationRule) has been pushed
and written (untimed), every proxy's requests are handled in three timed phases:

- ``cds_ack``: the ACK of the CDS response;
- ``eds_stale``: Envoy's warming re-request sent before it read the EDS assignments:
  every cluster named in its own (here: reversed) order, with the nonce of the EDS
  response before (stale: ignored);
- ``eds_ack``: the ACK of the EDS assignments pushed behind it, naming every cluster as
  the proxy's previous requests did;
- ``eds_rerequest``: Envoy's warming re-request, the same EDS nonce and version naming
  every cluster in its own (here: reversed) order, which is nothing new;

and ``noop_ack``: every proxy's latest EDS ACK handled again, ``--ack-repeats`` times.
Requests are built between the timed phases (the proxies' work). The figure is the
median over rounds of CPU µs per request (``time.process_time``); ``old_to_new`` is the
median of the rounds' baseline ÷ this tree (above 1: this tree is cheaper).

Run: ``PYTHONPATH=/tmp/old .venv/bin/python bench/request_cost.py --baseline
pilothouse_old``; one JSON line per phase. Without ``--baseline`` only this tree runs.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from envoy.service.discovery.v3 import discovery_pb2

from bench.harness.figures import emit
from bench.harness.in_process import TYPES, InProcessServer, ack_of, rule_yaml
from bench.harness.rounds import spread
from pilothouse.protocol.type_urls import CDS, EDS

PHASES = ("cds_ack", "eds_stale", "eds_ack", "eds_rerequest", "noop_ack")
QUIET = 0.05
ROUND_TIMEOUT = 60.0


class Side:
    """One discovery server of ``package`` and its in-memory proxies."""

    def __init__(self, label: str, package: str) -> None:
        self.label = label
        self.server = InProcessServer(label, package)
        self.handler: Any = None
        self.parse: Callable[[bytes], Any] = discovery_pb2.DiscoveryRequest.FromString
        self.names: dict[str, list[str]] = {}
        self.written: list[list[bytes]] = []
        self.last_eds: list[bytes] = []
        self.us: dict[str, list[float]] = {phase: [] for phase in PHASES}

    async def start(self, services: int, proxies: int, debounce: float) -> None:
        server = self.server
        await server.start(services, debounce)
        self.handler = server.module("xds.server.ads").StreamHandler(server.discovery, delta=False)
        parser = server.module("protocol.request_bytes").discovery_request_parser
        self.parse = parser(discovery_pb2.DiscoveryRequest, fingerprint=True)
        identities = server.identities(proxies)
        self.names = server.subscriptions(identities[0])
        for index, identity in enumerate(identities):
            connection = server.connection(
                identity, clock=server.discovery.metrics.clock, responses=server.discovery.responses
            )
            self.written.append([])
            server.serve(connection, self._writer(index))
            for type_url in TYPES:
                request = discovery_pb2.DiscoveryRequest(
                    type_url=type_url, resource_names=self.names[type_url]
                )
                if type_url == CDS:
                    request.node.id = identity.node_id
                self.handle(index, request.SerializeToString())
        await self.absorb()

    def _writer(self, index: int) -> Callable[[bytes], Any]:
        async def write(body: bytes) -> None:
            self.written[index].append(body)
            await asyncio.sleep(0)

        return write

    def handle(self, index: int, body: bytes) -> None:
        self.handler._handle(self.parse(body), self.server.connections[index])

    async def settle(self) -> None:
        deadline = time.monotonic() + ROUND_TIMEOUT
        seen = -1
        while True:
            now = sum(map(len, self.written))
            if now == seen and self.server.idle(acked=False):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.label}: writes never settled")
            seen = now
            await asyncio.sleep(QUIET)

    def acks(self) -> list[dict[str, bytes]]:
        """Per proxy, type URL → the ACK of its latest response written (then forgotten)."""
        out = []
        for bodies in self.written:
            latest: dict[str, bytes] = {}
            for body in bodies:
                request = ack_of(body, self.names)
                latest[request.type_url] = request.SerializeToString()
            bodies.clear()
            out.append(latest)
        return out

    async def absorb(self) -> None:
        """Every proxy ACKs what it was written until nothing more is written."""
        while True:
            await self.settle()
            batches = self.acks()
            if not any(batches):
                return
            for index, batch in enumerate(batches):
                for body in batch.values():
                    self.handle(index, body)
                if EDS in batch:
                    self.last_eds[index : index + 1] = [batch[EDS]]

    async def round(self, state: int, repeats: int) -> None:
        self.server.apply(rule_yaml(0, state))
        await self.settle()
        batches = self.acks()
        if not all(CDS in batch and EDS in batch for batch in batches):
            raise RuntimeError(f"{self.label}: a CDS change did not send CDS and EDS to all")
        rerequests, stale = [], []
        for batch, before in zip(batches, self.last_eds, strict=True):
            request = discovery_pb2.DiscoveryRequest.FromString(batch[EDS])
            request.resource_names[:] = list(reversed(request.resource_names))
            rerequests.append(request.SerializeToString())
            previous = discovery_pb2.DiscoveryRequest.FromString(before)
            request.response_nonce = previous.response_nonce
            stale.append(request.SerializeToString())
        self._timed("cds_ack", [batch[CDS] for batch in batches])
        self._timed("eds_stale", stale)
        self._timed("eds_ack", [batch[EDS] for batch in batches])
        self._timed("eds_rerequest", rerequests)
        await self.settle()
        if any(self.written):
            raise RuntimeError(f"{self.label}: an ACK of the CDS round was answered")
        self.last_eds = [batch[EDS] for batch in batches]
        self._timed("noop_ack", self.last_eds * repeats, repeats)

    def _timed(self, phase: str, bodies: list[bytes], repeats: int = 1) -> None:
        proxies = len(self.server.connections)
        gc.collect()
        started = time.process_time()
        for at, body in enumerate(bodies):
            self.handle(at % proxies, body)
        spent = time.process_time() - started
        self.us[phase].append(spent / len(bodies) * 1e6)


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    sides = [Side("pilothouse", "pilothouse")]
    if args.baseline:
        sides.append(Side("baseline", args.baseline))
    for side in sides:
        side.last_eds = [b""] * args.proxies
        await side.start(args.services, args.proxies, args.debounce)
    for index in range(args.rounds):
        for side in sides if index % 2 == 0 else reversed(sides):
            await side.round(1 - index % 2, args.ack_repeats)
    for side in sides:
        await side.server.stop()
    lines = []
    mine = sides[0]
    for phase in PHASES:
        line: dict[str, Any] = {
            "benchmark": f"request_cost: {phase} (SotW, {args.proxies} proxies, "
            f"{args.services} services, in process)",
            "rounds": args.rounds,
            "pilothouse_us_per_request": round(statistics.median(mine.us[phase]), 2),
            "pilothouse_us_per_request_spread": spread(mine.us[phase]),
        }
        if args.baseline:
            old = sides[1]
            ratios = [o / n for o, n in zip(old.us[phase], mine.us[phase], strict=True)]
            line |= {
                "baseline": f"{args.baseline} in the same process, rounds alternated",
                "baseline_us_per_request": round(statistics.median(old.us[phase]), 2),
                "baseline_us_per_request_spread": spread(old.us[phase]),
                "old_to_new": round(statistics.median(ratios), 2),
                "old_to_new_per_round": [round(r, 2) for r in ratios],
                "ratio_definition": "baseline µs ÷ this tree's µs per request (above 1: "
                "this tree is cheaper)",
            }
        lines.append(line)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--services", type=int, default=100)
    parser.add_argument("--proxies", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--debounce", type=float, default=0.05, help="push debounce, seconds")
    parser.add_argument("--ack-repeats", type=int, default=4)
    parser.add_argument(
        "--baseline", default="", help="another copy of the package, importable by that name"
    )
    for line in asyncio.run(run(parser.parse_args())):
        emit([line])


if __name__ == "__main__":
    main()
