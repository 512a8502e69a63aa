"""Benchmark: where pilothouse's own Python goes in a push to every proxy, by stage.

Issue #17 asks, where a speed target is missed, what the profile shows. This runs the
in-process server of ``push_cost.py`` (``--proxies`` SotW connections as the servicer
makes them, the real writer loop, the servicer's request handling; no gRPC) and times
``--rounds`` rounds of each change (an EDS change: a WorkloadEntry moves; a CDS change:
a DestinationRule changes) as ``push_cost.py`` does: the change and every response it
makes written, then every proxy's ACK handled (and what the ACKs make, as a CDS ACK asks
for EDS). The push part of each round (until every response is written) runs under
``cProfile`` with the process's CPU clock; the ACKs are handled unprofiled (their cost is
``push_cost``'s no-op ACK figure and ``pilothouse_ack_us_per_response`` here).

Reported per change: µs of server CPU per response without the profiler (the same
rounds run again unprofiled, the median), and the profiled time of each stage as a share
of the server's profiled time (the rest is the event loop, the debouncer and the
pipeline's planning, once per push). Stages (inclusive, none inside another):

- ``workers``: the push workers' and push service's own work per connection (the slot,
  the queue, the written-future and its callbacks; ``plan`` and ``connection_push``
  subtracted);
- ``plan``: the connection's push planned (``ProxyPushRules.plan``);
- ``generate``: resources generated for the connection (``ProxyResources.generate``,
  mostly cache lookups);
- ``respond``: the stream engine deciding and recording what it sends (versions, nonces,
  shared responses, ACK tracking; ``generate`` subtracted);
- ``queue_response``: the response counted and queued for the writer
  (``Connection._write``);
- ``writer``: the writer loop (dequeue, the in-memory write, its metrics).

A deterministic profiler adds a fixed cost per call, so stages of many small calls weigh
more than they do unprofiled: read the shares as where the calls are, not as exact
fractions. Nothing is judged here (``target``: none); ``push_fanout`` holds the targets.

Run: ``.venv/bin/python bench/push_profile.py`` (``--proxies 1000 --rounds 3``); one JSON
line per change.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench.harness.figures import emit
from bench.push_cost import Pilothouse

STAGES: dict[str, tuple[str, ...]] = {
    "workers": ("push/workers.py:_start",),
    "plan": ("push/proxy_push.py:plan",),
    "connection_push": ("xds/server/connection.py:push",),
    "generate": ("xds/server/proxy_resources.py:generate",),
    "queue_response": ("xds/server/connection.py:_write",),
    "writer": ("xds/server/writer.py:write_responses",),
    "server": (
        "push/workers.py:_start",
        "xds/server/writer.py:write_responses",
        "push/debounce.py:run",
    ),
}
"""Stage → the functions (``path:name``) whose inclusive time it adds up."""


def inclusive(stats: pstats.Stats, wanted: tuple[str, ...]) -> float:
    """The summed cumulative seconds of the functions ``wanted`` names."""
    total = 0.0
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (path, _, name), (_, _, _, cumulative, _) in table.items():
        if any(path.endswith(want.split(":")[0]) and name == want.split(":")[1] for want in wanted):
            total += cumulative
    return total


async def profile(side: Pilothouse, kind: str, rounds: int) -> dict[str, Any]:
    state = 0
    for _ in range(rounds):  # unprofiled rounds: the µs per response
        state = 1 - state
        await side.round(kind, state)
    plain = [cpu / side.responses[kind] * 1e6 for cpu in side.push_cpu[kind]]
    acks = [cpu / side.responses[kind] * 1e6 for cpu in side.ack_cpu[kind]]
    profiler = cProfile.Profile(time.process_time)
    for _ in range(rounds):
        state = 1 - state
        profiler.enable()
        side.change(kind, state)
        await side.settle()
        profiler.disable()
        for _ in range(3):  # the ACKs, and what they make, and their ACKs: unprofiled
            for index, peer in enumerate(side.peers):
                for body in peer.acks():
                    side.handle(index, body)
            await side.settle()
    stats = pstats.Stats(profiler)
    seconds = {stage: inclusive(stats, functions) for stage, functions in STAGES.items()}
    seconds["workers"] -= seconds["plan"] + seconds["connection_push"]
    seconds["respond"] = seconds.pop("connection_push") - seconds["generate"]
    seconds["respond"] -= seconds["queue_response"]
    server = seconds.pop("server")
    return {
        "benchmark": f"push_profile: {kind.upper()} change to every proxy "
        f"(SotW, {len(side.peers)} proxies, in process, cProfile)",
        "baseline": "the server's own profiled CPU in the same rounds (shares of it)",
        "rounds": f"{rounds} unprofiled, then {rounds} profiled",
        "responses_per_round": side.responses[kind],
        "pilothouse_us_per_response": round(statistics.median(plain), 1),
        "pilothouse_ack_us_per_response": round(statistics.median(acks), 1),
        **{f"share_{stage}": round(value / server, 3) for stage, value in seconds.items()},
        "share_rest": round(1 - sum(seconds.values()) / server, 3),
        "headline": "pilothouse_us_per_response",
        "ratio_to_baseline": round(sum(seconds.values()) / server, 3),
        "ratio_definition": "the share of the server's profiled time the stages account for",
        "target": "none (where the time goes; push_fanout holds issue #17's targets)",
        "target_met": "—",
    }


async def run(args: argparse.Namespace) -> None:
    side = Pilothouse()
    await side.start(args.services, args.proxies, args.debounce)
    try:
        lines = [await profile(side, kind, args.rounds) for kind in ("eds", "cds")]
    finally:
        await side.stop()
    emit(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--services", type=int, default=100)
    parser.add_argument("--proxies", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--debounce", type=float, default=0.05, help="push debounce, seconds")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
