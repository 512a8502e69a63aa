"""Benchmark: server CPU per push and per no-op ACK, in process, against the floor's.

One process holds a discovery server (``--services`` ServiceEntries, each with a
DestinationRule and a WorkloadEntry, every proxy seeing all of them) with ``--proxies``
SotW connections made as the gRPC servicer makes them, each with the real writer loop
(``xds/server/writer.py``) and the servicer's request handling
(``StreamHandler._handle`` after the servicer's request parser). Beside it, the
transport floor's own logic (``harness.floor.Floor``: responses encoded once, one
queue and one writer loop per stream, requests parsed with ``FromString``) holds as
many streams watching the same names. No gRPC on either side: a write stores the bytes
and yields to the loop once, so the figures are the Python each server runs per
push, which is where they differ (the gRPC read and write cost both the same).

Each round, alternating the two so both see the same machine:

- the change (an EDS change: service 0's WorkloadEntry moves; a CDS change: its
  DestinationRule changes; an RDS change: its VirtualService's route timeout changes)
  and every response it makes written (pilothouse: the store event, debounce, the
  push queue and workers, the stream engine, the writer; the floor: ``Floor.push``
  of the very resource pilothouse sent, and its writers);
- then every proxy's ACK handled (parse and handle, and any response the ACK makes
  written and ACKed in turn: a CDS ACK asks for EDS).

Only the server's part is timed (``time.process_time``): decoding the responses and
building the ACKs is the proxies' work and runs between the timed phases. The median
round's CPU over the responses it wrote gives µs per push.

And the cost of an ACK that changes nothing: every connection's latest response
ACKed again (same nonce, same names), ``--ack-repeats`` times, parse and handle.

Run: ``.venv/bin/python bench/push_cost.py``; one JSON line per figure. The CDS and
RDS lines also give, from rounds alternated with their own, the same change with the
pipeline's per-scope comparisons turned off (``…_uncompared``: the types they spare
generated and compared as before them; ``uncompared_to_compared`` is before ÷ after).
With ``--every-type`` a full push generates and compares every watched
type, as it did before it left out the types its changed kinds cannot alter: run both,
alternating, for a before/after figure.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from envoy.service.discovery.v3 import discovery_pb2

from bench.harness.figures import emit
from bench.harness.floor import Floor, FloorStream
from bench.harness.in_process import (
    NAMESPACE,
    TYPES,
    InProcessServer,
    ack_of,
    endpoint_yaml,
    rule_yaml,
    unpack,
)
from bench.harness.rounds import spread
from pilothouse.protocol.type_urls import CDS, EDS
from pilothouse.push.affected_types import inert_for_scope as COMPARED

VIRTUAL_SERVICE = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: {name}, namespace: {ns}}}
spec:
  hosts: [{host}]
  http:
  - route: [{{destination: {{host: {host}}}}}]
    timeout: {timeout}s
"""


def route_yaml(index: int, state: int) -> str:
    """A VirtualService for service ``index``; ``state`` sets its route timeout."""
    host = f"svc-{index}.{NAMESPACE}.svc.cluster.local"
    return VIRTUAL_SERVICE.format(name=f"svc-{index}", ns=NAMESPACE, host=host, timeout=1 + state)


CHANGES: dict[str, Callable[[int], str]] = {
    "eds": lambda state: endpoint_yaml(0, state),
    "cds": lambda state: rule_yaml(0, state),
    "cds-uncompared": lambda state: rule_yaml(1, state),
    "rds": lambda state: route_yaml(0, state),
    "rds-uncompared": lambda state: route_yaml(1, state),
}
"""The change each kind of round makes: a WorkloadEntry moves, a DestinationRule's
connection pool changes, a VirtualService's route timeout changes. The ``-uncompared``
kinds make the same change to another service's object with the pipeline's per-scope
comparisons turned off (``affected_types.inert_for_scope``), so the types they spare are
generated and compared as before them: RDS and EDS for the DestinationRule, LDS for the
VirtualService."""
KINDS = tuple(CHANGES)
ALTERNATED = (("eds",), ("cds", "cds-uncompared"), ("rds", "rds-uncompared"))
"""The rounds of kinds in one group alternate; the floor runs the first kind's."""
ROUND_TIMEOUT = 60.0
QUIET = 0.05
"""Seconds without a new write (the server idle) that end a phase (``--quiet``)."""
TARGET_ACK_US = 30.0


class Peer:
    """The proxy end of one in-memory stream: keeps what was written, ACKs on request."""

    def __init__(self, names: dict[str, list[str]]) -> None:
        self.names = names
        self.bodies: list[bytes] = []
        self.last: dict[str, bytes] = {}
        """type URL → the encoded ACK of its latest response."""

    async def write(self, body: bytes) -> None:
        self.bodies.append(body)
        await asyncio.sleep(0)

    def acks(self) -> list[bytes]:
        """The ACKs of what was written since last asked (the proxy's work: untimed)."""
        out = []
        for body in self.bodies:
            request = ack_of(body, self.names)
            ack = request.SerializeToString()
            self.last[request.type_url] = ack
            out.append(ack)
        self.bodies.clear()
        return out


class Side:
    """One server and its in-memory proxies; ``change`` and ``handle`` differ per server."""

    label = ""

    def __init__(self, quiet: float = QUIET) -> None:
        self.quiet = quiet
        self.peers: list[Peer] = []
        self.push_cpu: dict[str, list[float]] = {kind: [] for kind in KINDS}
        self.ack_cpu: dict[str, list[float]] = {kind: [] for kind in KINDS}
        self.responses: dict[str, int] = {}
        self.noop_ack_us: list[float] = []

    def written(self) -> int:
        return sum(len(peer.bodies) for peer in self.peers)

    async def settle(self) -> None:
        """Until nothing more is written for a little while."""
        deadline = time.monotonic() + ROUND_TIMEOUT
        seen = -1
        while True:
            now = self.written()
            if now == seen and self.idle():
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.label}: writes never settled")
            seen = now
            await asyncio.sleep(self.quiet)

    def idle(self) -> bool:
        return True

    async def absorb(self) -> None:
        """Settle, every proxy ACKs what it was written, settle, and forget what the ACKs
        made (the state a round starts from)."""
        await self.settle()
        for index, peer in enumerate(self.peers):
            for body in peer.acks():
                self.handle(index, body)
        await self.settle()
        for peer in self.peers:
            peer.bodies.clear()

    async def round(self, kind: str, state: int) -> None:
        gc.collect()
        started = time.process_time()
        self.change(kind, state)
        await self.settle()
        push = time.process_time() - started
        responses = self.written()
        ack = 0.0
        while True:
            acks = [(index, peer.acks()) for index, peer in enumerate(self.peers)]
            if not any(batch for _, batch in acks):
                break
            started = time.process_time()
            for index, batch in acks:
                for body in batch:
                    self.handle(index, body)
            await self.settle()
            ack += time.process_time() - started
            responses += self.written()
        self.push_cpu[kind].append(push)
        self.ack_cpu[kind].append(ack)
        self.responses[kind] = responses

    def noop_acks(self, repeats: int) -> None:
        """µs per ACK of a response already ACKed (nothing changes)."""
        bodies = [(index, peer.last[EDS]) for index, peer in enumerate(self.peers)]
        gc.collect()
        started = time.process_time()
        for _ in range(repeats):
            for index, body in bodies:
                self.handle(index, body)
        spent = time.process_time() - started
        self.noop_ack_us.append(spent / (repeats * len(bodies)) * 1e6)

    def change(self, kind: str, state: int) -> None:
        raise NotImplementedError

    def handle(self, index: int, body: bytes) -> None:
        raise NotImplementedError


class Pilothouse(Side):
    label = "pilothouse"

    def __init__(self, quiet: float = QUIET) -> None:
        super().__init__(quiet)
        self.server = InProcessServer(self.label)
        self.handler: Any = None
        self.parse: Callable[[bytes], Any] = discovery_pb2.DiscoveryRequest.FromString

    async def start(self, services: int, proxies: int, debounce: float) -> dict[str, list[str]]:
        from pilothouse.protocol.request_bytes import discovery_request_parser
        from pilothouse.xds.server.ads import StreamHandler

        server = self.server
        await server.start(services, debounce)
        self.handler = StreamHandler(server.discovery, delta=False)
        self.parse = discovery_request_parser(discovery_pb2.DiscoveryRequest, fingerprint=True)
        identities = server.identities(proxies)
        names = server.subscriptions(identities[0])
        for identity in identities:
            connection = server.connection(
                identity, clock=server.discovery.metrics.clock, responses=server.discovery.responses
            )
            peer = Peer(names)
            self.peers.append(peer)
            server.serve(connection, peer.write)
            for type_url in TYPES:
                request = discovery_pb2.DiscoveryRequest(
                    type_url=type_url, resource_names=names[type_url]
                )
                if type_url == CDS:
                    request.node.id = identity.node_id
                self.handler._handle(self.parse(request.SerializeToString()), connection)
        await self.absorb()
        return names

    def idle(self) -> bool:
        return self.server.idle(acked=False)

    def change(self, kind: str, state: int) -> None:
        import pilothouse.push.pipeline as pipeline

        if kind.endswith("-uncompared"):
            pipeline.inert_for_scope = _uncompared  # type: ignore[assignment]
        else:
            pipeline.inert_for_scope = COMPARED
        self.server.apply(CHANGES[kind](state))

    def handle(self, index: int, body: bytes) -> None:
        self.handler._handle(self.parse(body), self.server.connections[index])

    async def stop(self) -> None:
        import pilothouse.push.pipeline as pipeline

        pipeline.inert_for_scope = COMPARED
        await self.server.stop()


def _uncompared(request: Any, *_: Any) -> Any:
    """The pipeline's per-scope request as before it compared DestinationRules."""
    return request


class FloorSide(Side):
    label = "floor"

    def __init__(self, quiet: float = QUIET) -> None:
        super().__init__(quiet)
        self.floor = Floor()
        self.streams: list[FloorStream] = []
        self.replay: dict[str, list[tuple[str, list[Any]]]] = {}
        """Per change, per state: the responses' resources pilothouse sent for it."""
        self._tasks: list[asyncio.Task[Any]] = []

    async def start(self, pilothouse: Pilothouse, names: dict[str, list[str]]) -> None:
        for type_url in TYPES:
            server = pilothouse.server
            probe = server.probe(server.connections[0].proxy, type_url, names[type_url])
            self.floor.load(type_url, _as_resources(probe))
        for _ in pilothouse.peers:
            stream = FloorStream(delta=False)
            self.floor.streams.add(stream)
            self.streams.append(stream)
            peer = Peer(names)
            self.peers.append(peer)
            self._tasks.append(asyncio.create_task(self._writer(stream, peer)))
            for type_url in TYPES:
                body = self.floor.answer(
                    stream,
                    discovery_pb2.DiscoveryRequest(
                        type_url=type_url, resource_names=names[type_url]
                    ),
                )
                if body is not None:
                    stream.outbound.put_nowait(body)
        await self.absorb()

    async def _writer(self, stream: FloorStream, peer: Peer) -> None:
        while True:
            body = await stream.outbound.get()
            if body is None:
                return
            await peer.write(body)

    def idle(self) -> bool:
        return all(stream.outbound.empty() for stream in self.streams)

    def change(self, kind: str, state: int) -> None:
        for type_url, resources in self.replay[f"{kind}-{state}"]:
            self.floor.push(type_url, resources)

    def handle(self, index: int, body: bytes) -> None:
        stream = self.streams[index]
        answer = self.floor.answer(stream, discovery_pb2.DiscoveryRequest.FromString(body))
        if answer is not None:
            stream.outbound.put_nowait(answer)

    async def stop(self) -> None:
        for stream in self.streams:
            stream.outbound.put_nowait(None)
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _as_resources(response: Any) -> list[Any]:
    out = []
    for packed in response.resources:
        message = unpack(response.type_url, packed)
        name = getattr(message, "name", "") or getattr(message, "cluster_name", "")
        out.append(discovery_pb2.Resource(name=name, resource=packed))
    return out


def _learn_replay(pilothouse: Pilothouse) -> list[tuple[str, list[Any]]]:
    """What one proxy was sent for the change (before its ACKs): per type, resources."""
    out = []
    for body in pilothouse.peers[0].bodies:
        response = discovery_pb2.DiscoveryResponse.FromString(body)
        out.append((response.type_url, _as_resources(response)))
    return out


@dataclass(frozen=True)
class Options:
    services: int
    proxies: int
    rounds: int
    debounce: float
    ack_repeats: int
    quiet: float = QUIET


async def run(options: Options) -> list[dict[str, Any]]:
    mine = Pilothouse(options.quiet)
    names = await mine.start(options.services, options.proxies, options.debounce)
    floor = FloorSide(options.quiet)
    await floor.start(mine, names)
    # learn what each change sends (two states each, so every round is a real change)
    for kind in KINDS:
        for state in (1, 0):
            mine.change(kind, state)
            await asyncio.sleep(options.debounce + options.quiet)
            await mine.settle()
            floor.replay[f"{kind}-{state}"] = _learn_replay(mine)
            for index, peer in enumerate(mine.peers):
                for body in peer.acks():
                    mine.handle(index, body)
            await mine.settle()
            for peer in mine.peers:
                peer.acks()
    lines = []
    for group in ALTERNATED:
        for index in range(options.rounds):
            state = 1 - index % 2
            for kind in group if index % 2 == 0 else reversed(group):
                sides = (mine, floor) if kind == group[0] else (mine,)
                for side in sides if index % 2 == 0 else reversed(sides):
                    await side.round(kind, state)
        lines.append(_line(group, options, mine, floor))
    for _ in range(5):
        for side in (mine, floor):
            side.noop_acks(options.ack_repeats)
    ack_us = statistics.median(mine.noop_ack_us)
    floor_ack_us = statistics.median(floor.noop_ack_us)
    lines.append(
        {
            "benchmark": f"push_cost: an ACK that changes nothing (SotW EDS, {options.proxies} "
            "proxies, in process)",
            "baseline": "the transport floor's logic (bench/harness/floor.py Floor) in the "
            "same process, parsing and ignoring the same ACK",
            "services_per_proxy": options.services,
            "samples": len(mine.noop_ack_us),
            "pilothouse_us_per_ack": round(ack_us, 2),
            "pilothouse_us_per_ack_spread": spread(mine.noop_ack_us),
            "floor_us_per_ack": round(floor_ack_us, 2),
            "ratio_to_baseline": round(floor_ack_us / ack_us, 3),
            "ratio_definition": "floor µs ÷ pilothouse µs per no-op ACK (1 = as cheap)",
            "target": f"≤ {TARGET_ACK_US:.0f} µs of server time per no-op ACK",
            "target_met": "yes"
            if ack_us <= TARGET_ACK_US
            else f"no: missed by {ack_us - TARGET_ACK_US:.1f} µs (the floor's own ACK: "
            f"{floor_ack_us:.1f} µs in this run)",
        }
    )
    await floor.stop()
    await mine.stop()
    return lines


def _line(
    group: tuple[str, ...], options: Options, mine: Pilothouse, floor: FloorSide
) -> dict[str, Any]:
    kind = group[0]

    def per_push(side: Side, kind: str = kind) -> list[float]:
        """µs per response, written and ACKed, of each round."""
        rounds = zip(side.push_cpu[kind], side.ack_cpu[kind], strict=True)
        return [(push + ack) / side.responses[kind] * 1e6 for push, ack in rounds]

    def phase_us(cpu: dict[str, list[float]], kind: str = kind) -> float:
        return round(statistics.median(cpu[kind]) / mine.responses[kind] * 1e6, 1)

    mine_us, floor_us = per_push(mine), per_push(floor)
    ratio = statistics.median(mine_us) / statistics.median(floor_us)
    before: dict[str, Any] = {}
    if len(group) > 1:
        # the same change with the per-scope comparisons off, alternated round by round;
        # also the push phase alone (what the comparisons spare; the ACKs are the same work)
        old = group[1]
        old_us = per_push(mine, old)
        ratios = [o / n for o, n in zip(old_us, mine_us, strict=True)]
        pushes = [o / n for o, n in zip(mine.push_cpu[old], mine.push_cpu[kind], strict=True)]
        before = {
            "pilothouse_us_per_response_uncompared": round(statistics.median(old_us), 1),
            "pilothouse_us_per_response_uncompared_spread": spread(old_us),
            "pilothouse_push_us_per_response_uncompared": phase_us(mine.push_cpu, old),
            "responses_per_round_uncompared": mine.responses[old],
            "uncompared_to_compared": round(statistics.median(ratios), 2),
            "uncompared_to_compared_definition": "median over rounds of (µs per response "
            "with the per-scope comparisons off ÷ on), the two alternated round by round",
            "uncompared_to_compared_per_round": [round(r, 2) for r in ratios],
            "uncompared_to_compared_push": round(statistics.median(pushes), 2),
            "uncompared_to_compared_push_per_round": [round(r, 2) for r in pushes],
        }
    return {
        "benchmark": f"push_cost: {kind.upper()} change to every proxy (SotW, {options.proxies} "
        "proxies, in process, no gRPC)",
        "baseline": "the transport floor's logic (bench/harness/floor.py Floor) in the same "
        "process, pushing the same resource bytes to as many in-memory streams",
        "services_per_proxy": options.services,
        "rounds": options.rounds,
        "responses_per_round_pilothouse": mine.responses[kind],
        "responses_per_round_floor": floor.responses[kind],
        "pilothouse_us_per_response": round(statistics.median(mine_us), 1),
        "pilothouse_us_per_response_spread": spread(mine_us),
        "pilothouse_push_us_per_response": phase_us(mine.push_cpu),
        "pilothouse_ack_us_per_response": phase_us(mine.ack_cpu),
        "floor_us_per_response": round(statistics.median(floor_us), 1),
        "floor_us_per_response_spread": spread(floor_us),
        # per proxy pushed: a change that costs a proxy more responses than the floor
        # sends it (or fewer) shows here, not in the per-response figures
        **{
            f"{side.label}_us_per_proxy": round(
                statistics.median(us) * side.responses[kind] / options.proxies, 1
            )
            for side, us in ((mine, mine_us), (floor, floor_us))
        },
        "pilothouse_to_floor_per_proxy": round(
            ratio * mine.responses[kind] / floor.responses[kind], 2
        ),
        "ratio_to_baseline": round(1 / ratio, 3),
        "pilothouse_to_floor": round(ratio, 2),
        "ratio_definition": "floor µs ÷ pilothouse µs per response, written and ACKed "
        "(Python only: the gRPC read and write are not in either)",
        "target": "none in process (issue #17's CPU per message ≤ 1.2× the floor's is end to end, "
        "with gRPC: push_fanout and fanout_curve)",
        **before,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--services", type=int, default=100)
    parser.add_argument("--proxies", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--debounce", type=float, default=0.05, help="push debounce, seconds")
    parser.add_argument("--ack-repeats", type=int, default=10)
    parser.add_argument(
        "--quiet",
        type=float,
        default=QUIET,
        help="seconds without a new write (the server idle) that end a phase; a smoke run "
        "on a tiny mesh shortens it",
    )
    parser.add_argument(
        "--every-type",
        action="store_true",
        help="generate and compare every watched type on each full push, as before the "
        "push left out the types its changed kinds cannot alter (for before/after runs)",
    )
    args = parser.parse_args()
    if args.every_type:
        import pilothouse.push.proxy_push as proxy_push

        proxy_push.unaffected_types = lambda request: frozenset()  # type: ignore[assignment]
    options = Options(
        args.services, args.proxies, args.rounds, args.debounce, args.ack_repeats, args.quiet
    )
    for line in asyncio.run(run(options)):
        emit([line])


if __name__ == "__main__":
    main()
