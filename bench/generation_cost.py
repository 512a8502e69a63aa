"""Benchmark: generation cost per resource and cache hit rate, on the example mesh scaled up.

The bookinfo example (examples/bookinfo) is copied into namespaces until there are
``--services`` services (default 1,000: 200 namespaces of 5), with ``--proxies``
proxies (default 2,000: ``--gateways`` ingress routers, the rest sidecars of the
bookinfo workloads); see bench/generation_mesh.py. Everything runs in this one
process, without gRPC:

- the mesh is written as files and loaded by the file source, as ``serve --config``
  does, and a :class:`DiscoveryServer` is run over its store until its first
  PushContext exists; every proxy is registered as a connection (parsed from its
  node as the server does) that subscribes to nothing, so the server's own push
  logic says which proxies a change concerns without generating anything itself;
- each proxy's CDS, EDS, LDS and RDS are generated the way a connection does it
  (a ``GenerationInput`` with the proxy's scope, the server's context, endpoint
  index and resource cache, handed to the server's generator for the type), CDS
  and LDS by wildcard, EDS and RDS for the names an Envoy would subscribe to
  (read from the clusters and listeners it was sent; that reading is not timed);
- 1. first push: every proxy, cold cache;
- 2. one service changes: the ``reviews`` DestinationRule of ``bookinfo-0`` gets a
  new connection-pool limit; its file is rewritten and reloaded by the file source,
  so the store event goes through the server's debouncer (quiet period 0) into a
  full push: cache entries of the changed key evicted, a new PushContext reusing the
  untouched indexes, and the connections the change concerns queued. Those proxies
  are regenerated;
- 3. the same change again (the limit moves once more), and every proxy is
  regenerated, to show what scoping saves.

µs per resource is generator time over resources returned. Cache hits are read from the
ResourceCache's own counters (``cache.stats``) before and after each pass;
``resources_built`` counts the resources actually encoded in a pass (see
bench/generation_figures.py), since the cache's counters alone do not say it: they also
count the values generators derive on the way (inbound ports, EDS watch answers). The baseline,
measured in the same run, serialises the very resources that were returned (each decoded
back into its message once, untimed, then ``SerializeToString(deterministic=True)``),
weighted by how often each was returned; ``ratio_to_baseline`` is baseline µs ÷
pilothouse µs per resource (1 = generating costs as much as serialising what is sent;
above 1 = cheaper, thanks to caching).

``--view namespace`` (the default) gives every namespace a default Sidecar (its own
services and istio-system's); ``--view mesh`` has none, so each sidecar sees all
services: far more work per proxy, so use it with ``--sample`` (e.g. 200) to stay
within minutes. Prints one JSON object per pass. ``--profile FILE`` writes a cProfile
of the generator calls; ``--sample N`` generates for every N-th proxy only (and for
every gateway).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import dataclasses
import gc
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.generation_figures import (
    BuildCounter,
    CacheDelta,
    ResourceKey,
    Tally,
    judge,
    ratio,
    weighted_us_per_resource,
)
from bench.generation_mesh import (
    CHANGED_NAMESPACE,
    CHANGED_RULE,
    VIEWS,
    ScaledBookinfo,
    read_example,
)
from bench.harness.figures import emit
from bench.harness.rounds import best_of
from bench.harness.subscriptions import Subscriptions, message_of
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.debounce import DebounceSettings
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.sources.fs import FileSource
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.server.connection import Connection
from pilothouse.xds.server.discovery import DiscoveryServer, XdsSettings

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "bookinfo"
PUSH_ORDER = (CDS, EDS, LDS, RDS)
BASELINE = (
    "serialising the same resources: SerializeToString(deterministic=True) of each "
    "returned resource's message (already built), weighted by how often it was returned"
)
RATIO_DEFINITION = (
    "baseline µs per resource ÷ pilothouse µs per resource (1 = as cheap as serialising "
    "what is sent; above 1 = cheaper)"
)
READY_TIMEOUT = 120.0
PUSH_TIMEOUT = 60.0


@dataclass(frozen=True)
class Options:
    services: int
    proxies: int
    gateways: int
    view: str
    sample: int
    profile: Path | None


@dataclass(frozen=True)
class Change:
    """What one config change did in the server."""

    description: str
    request: str
    concerned: tuple[ProxyIdentity, ...]
    context_seconds: float
    rebuilt: tuple[str, ...]
    reused: tuple[str, ...]
    evicted: int


class Generation:
    """Generates proxies' resources as a connection does, timing only the generator calls."""

    def __init__(
        self,
        server: DiscoveryServer,
        builds: BuildCounter,
        profiler: cProfile.Profile | None,
    ) -> None:
        self.server = server
        self.builds = builds
        self.subscriptions = Subscriptions()
        self.watches: dict[str, dict[str, frozenset[str]]] = {}
        self._profiler = profiler

    def one(
        self, proxy: ProxyIdentity, type_url: str, names: frozenset[str] | None
    ) -> tuple[Mapping[str, Any], float]:
        server = self.server
        profiler = self._profiler
        if profiler is not None:
            profiler.enable()
        start = time.perf_counter()
        generator = server.generator(type_url)
        assert generator is not None, type_url
        context = server.context
        given = GenerationInput(
            proxy=proxy,
            scope=context.scope(proxy),
            context=context,
            endpoints=server.endpoints,
            cache=server.cache,
            names=names,
        )
        generated = generator.generate(given)
        elapsed = time.perf_counter() - start
        if profiler is not None:
            profiler.disable()
        return generated, elapsed

    def push(self, proxies: Sequence[ProxyIdentity]) -> tuple[Tally, CacheDelta]:
        """CDS, EDS, LDS and RDS for each proxy; names learnt on a proxy's first push."""
        gc.collect()
        before = dataclasses.replace(self.server.cache.stats)
        self.builds.reset()
        tally = Tally(proxies=len(proxies))
        for proxy in proxies:
            watched = self.watches.get(proxy.node_id)
            learning = watched is None
            if watched is None:
                watched = self.watches.setdefault(proxy.node_id, {})
            for type_url in PUSH_ORDER:
                generated, seconds = self.one(proxy, type_url, watched.get(type_url))
                tally.add(type_url, generated, seconds)
                if learning and type_url == CDS:
                    watched[EDS] = self.subscriptions.eds_names(generated.values())
                elif learning and type_url == LDS:
                    watched[RDS] = self.subscriptions.rds_names(generated.values())
        tally.built = self.builds.reset()
        return tally, CacheDelta.between(before, dataclasses.replace(self.server.cache.stats))


def serialisation_prices(
    samples: Mapping[ResourceKey, tuple[str, Any]], number: int = 3, repeat: int = 3
) -> dict[ResourceKey, float]:
    """Seconds to serialise each distinct resource's message (best of ``repeat`` runs)."""
    prices: dict[ResourceKey, float] = {}
    for key, (type_url, resource) in samples.items():
        message = message_of(type_url, resource)

        def serialise(message: Any = message) -> None:
            for _ in range(number):
                message.SerializeToString(deterministic=True)

        prices[key] = best_of(repeat, serialise) / number
    return prices


@contextlib.asynccontextmanager
async def serving(server: DiscoveryServer) -> AsyncIterator[DiscoveryServer]:
    task = asyncio.create_task(server.run())
    try:
        await asyncio.wait_for(server.wait_ready(), READY_TIMEOUT)
        yield server
    finally:
        server.close()
        await asyncio.wait_for(task, 10)


async def until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {timeout:.0f} s")
        await asyncio.sleep(0.005)


async def change_one_service(
    server: DiscoveryServer,
    source: FileSource,
    mesh: ScaledBookinfo,
    root: Path,
    connections: Sequence[Connection],
    state: int,
) -> Change:
    """Rewrite the changed DestinationRule's file and let the server push it."""
    pushes = {c.id: c.stats.pushes for c in connections}
    full_pushes = server.stats.full_pushes
    triggers = dict(server.stats.push_triggers)
    evictions = server.cache.stats.invalidations
    old_version = _rule_version(source)
    path = mesh.set_state(root, state)
    source.reload([str(path)])
    await until(
        lambda: server.stats.full_pushes > full_pushes and server.pending_pushes() == 0,
        PUSH_TIMEOUT,
        "full push",
    )
    stats = server.context.stats
    return Change(
        description=(
            f"DestinationRule {CHANGED_NAMESPACE}/{CHANGED_RULE}: connectionPool.tcp."
            f"maxConnections {100 + state - 1} → {100 + state} (file rewritten, file source"
            " reload → store event → debouncer → full push)"
        ),
        request=(
            f"full push of DestinationRule {CHANGED_NAMESPACE}/{CHANGED_RULE} (resource_version"
            f" {old_version} → {_rule_version(source)}); triggers "
            + ", ".join(
                f"{reason} {count - triggers.get(reason, 0)}"
                for reason, count in server.stats.push_triggers.items()
                if count != triggers.get(reason, 0)
            )
        ),
        concerned=tuple(c.proxy for c in connections if c.stats.pushes > pushes[c.id]),
        context_seconds=stats.build_seconds,
        rebuilt=stats.rebuilt,
        reused=stats.reused,
        evicted=server.cache.stats.invalidations - evictions,
    )


def _rule_version(source: FileSource) -> str:
    for config in source.store.configs("DestinationRule", CHANGED_NAMESPACE):
        if config.name == CHANGED_RULE:
            return config.resource_version
    return "?"


def sampled(proxies: Sequence[ProxyIdentity], every: int) -> list[ProxyIdentity]:
    return list(proxies[::every]) if every > 1 else list(proxies)


def figures(
    title: str,
    tally: Tally,
    cache: CacheDelta,
    prices: Mapping[ResourceKey, float],
    *,
    hits_count: bool,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    measured = tally.us_per_resource
    baseline = weighted_us_per_resource(tally.occurrences, prices)
    verdict = judge(measured, cache.hit_rate, hits_count=hits_count)
    group: dict[str, Any] = {
        "benchmark": title,
        "baseline": BASELINE,
        "baseline_us_per_resource": _round(baseline),
        "ratio_to_baseline": ratio(baseline, measured),
        "ratio_definition": RATIO_DEFINITION,
        **extra,
        "proxies_generated": tally.proxies,
        "resources": tally.total_resources,
        "resources_by_type": tally.by_type(),
        "distinct_resources": len(tally.occurrences),
        "resources_built": tally.total_built,
        "resources_built_by_type": tally.built_by_type(),
        "resources_reused_share": _round(tally.reused_share),
        "seconds": round(tally.total_seconds, 3),
        "us_per_resource": _round(measured),
        "ms_per_proxy": round(tally.total_seconds * 1e3 / tally.proxies, 3)
        if tally.proxies
        else None,
        "cache_lookups": cache.lookups,
        "cache_hits": cache.hits,
        "cache_hit_rate": None if cache.hit_rate is None else round(cache.hit_rate, 4),
        "target": verdict.target,
        "target_met": "yes" if verdict.met else "no",
    }
    if verdict.missed_by:
        group["target_missed_by"] = verdict.missed_by
    return group


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


@dataclass(frozen=True)
class Passes:
    """The three passes over the proxies and what happened in the server between them."""

    first: tuple[Tally, CacheDelta]
    first_context_seconds: float
    scoped: tuple[Tally, CacheDelta]
    scoped_change: Change
    everyone: tuple[Tally, CacheDelta]
    everyone_change: Change


def load_mesh(root: Path) -> tuple[FileSource, float]:
    """The mesh's files loaded by the file source, as ``serve --config`` loads them."""
    source = FileSource(root)
    started = time.perf_counter()
    source.load_all()
    seconds = time.perf_counter() - started
    broken = [s for s in source.statuses().values() if not s.ok]
    if broken:
        raise RuntimeError(f"the scaled mesh does not load: {broken[0]}")
    return source, seconds


def connect(server: DiscoveryServer, proxies: Sequence[ProxyIdentity]) -> list[Connection]:
    """One watch-less connection per proxy: the server decides which ones a push concerns."""
    connections = []
    for proxy in proxies:
        connection = Connection(
            server.next_connection_id(proxy.id), "generation-bench", proxy, server, delta=False
        )
        server.connect(connection)
        connections.append(connection)
    return connections


async def run_passes(
    server: DiscoveryServer,
    source: FileSource,
    mesh: ScaledBookinfo,
    root: Path,
    proxies: Sequence[ProxyIdentity],
    options: Options,
    profiler: cProfile.Profile | None,
) -> Passes:
    connections = connect(server, proxies)
    chosen = sampled(proxies, options.sample)
    # Routers are few and heavy: generate for every one of them, whatever the sample.
    picked = {p.node_id for p in chosen}
    chosen += [p for p in proxies if p.is_router and p.node_id not in picked]
    builds = BuildCounter()
    generation = Generation(server, builds, profiler)
    with builds.active():
        first_context = server.context.stats.build_seconds
        first = generation.push(chosen)

        scoped_change = await change_one_service(server, source, mesh, root, connections, 1)
        concerned_ids = {p.node_id for p in scoped_change.concerned}
        scoped = generation.push([p for p in chosen if p.node_id in concerned_ids])

        everyone_change = await change_one_service(server, source, mesh, root, connections, 2)
        everyone = generation.push(chosen)
    return Passes(first, first_context, scoped, scoped_change, everyone, everyone_change)


async def measure(options: Options) -> list[dict[str, Any]]:
    gateways = min(options.gateways, options.proxies)
    mesh = ScaledBookinfo.build(
        read_example(EXAMPLE),
        services=options.services,
        sidecars=options.proxies - gateways,
        gateways=gateways,
        view=options.view,
    )
    proxies = mesh.proxies()
    profiler = cProfile.Profile() if options.profile is not None else None
    with tempfile.TemporaryDirectory(prefix="pilothouse-generation-") as directory:
        root = Path(directory)
        mesh.write(root)
        source, load_seconds = load_mesh(root)
        settings = XdsSettings(debounce=DebounceSettings(debounce_after=0.0))
        async with serving(DiscoveryServer(source.store, settings=settings)) as server:
            passes = await run_passes(server, source, mesh, root, proxies, options, profiler)
    if profiler is not None and options.profile is not None:
        profiler.dump_stats(str(options.profile))
    tallies = (passes.first[0], passes.scoped[0], passes.everyone[0])
    prices = serialisation_prices({k: v for t in tallies for k, v in t.samples.items()})

    shape = {
        "view": options.view,
        "services": mesh.service_count(),
        "namespaces": len({p.namespace for p in mesh.pods}) or 1,
        "proxies": len(proxies),
        "sidecars": len(mesh.pods),
        "gateways": len(mesh.routers),
        "sample": f"every {options.sample}th proxy (and every gateway)"
        if options.sample > 1
        else "all proxies",
        "config_load_seconds": round(load_seconds, 3),
    }
    size = f"{shape['services']} services × {shape['proxies']} proxies"
    view = f"{options.view} view"
    return [
        figures(
            f"generation_cost: {size}, first push ({view})",
            *passes.first,
            prices,
            hits_count=False,
            extra={**shape, "context_build_seconds": round(passes.first_context_seconds, 3)},
        ),
        figures(
            f"generation_cost: {size}, one service changes, concerned proxies ({view})",
            *passes.scoped,
            prices,
            hits_count=True,
            extra={**shape, **_change_figures(passes.scoped_change, len(proxies))},
        ),
        figures(
            f"generation_cost: {size}, one service changes, every proxy regenerated ({view})",
            *passes.everyone,
            prices,
            hits_count=True,
            extra={**shape, **_change_figures(passes.everyone_change, len(proxies))},
        ),
    ]


def _change_figures(change: Change, proxies: int) -> dict[str, Any]:
    return {
        "change": change.description,
        "push": change.request,
        "proxies_concerned": f"{len(change.concerned)} of {proxies}",
        "context_build_seconds": round(change.context_seconds, 4),
        "context_rebuilt": ", ".join(change.rebuilt),
        "context_reused": ", ".join(change.reused),
        "cache_entries_evicted": change.evicted,
    }


def parse_options(argv: Sequence[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--services", type=int, default=1000)
    parser.add_argument("--proxies", type=int, default=2000)
    parser.add_argument("--gateways", type=int, default=4, help="ingress routers among the proxies")
    parser.add_argument(
        "--view",
        choices=VIEWS,
        default="namespace",
        help="namespace: a default Sidecar per namespace (./*, istio-system/*); "
        "mesh: no Sidecar, every sidecar sees every service (slow: use --sample)",
    )
    parser.add_argument("--sample", type=int, default=1, help="generate for every N-th proxy")
    parser.add_argument("--profile", type=Path, default=None, help="cProfile output file")
    args = parser.parse_args(argv)
    if args.services < 1 or args.proxies < 1 or args.gateways < 0 or args.sample < 1:
        parser.error("--services, --proxies and --sample must be positive, --gateways ≥ 0")
    return Options(args.services, args.proxies, args.gateways, args.view, args.sample, args.profile)


def main(argv: Sequence[str] | None = None) -> None:
    options = parse_options(argv)
    emit(asyncio.run(measure(options)))


if __name__ == "__main__":
    main()
