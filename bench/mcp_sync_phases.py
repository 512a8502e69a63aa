"""Where an MCP-over-xDS sync spends its time, measured in one process, phase by phase.

The same N ServiceEntries go through the code both ends of a sync run:

- **encode** (source): the ``api`` generator wraps every object of the kind as an
  ``istio.mcp.v1alpha1.Resource`` ``Any`` (fresh cache, as on a first request);
- **assemble** (source): the ``DiscoveryResponse`` bytes, by concatenation;
- **parse** (sink): ``DiscoveryResponse.FromString``, gRPC's deserializer for the stream;
- **decode** (sink): each entry into a validated Config (``KindDecoder``: MCP Resource,
  spec and the Loader's checks);
- **store** (sink): the rest of ``on_response``: the decoded Configs ``replace_kind``-ed
  into the source's store with ``serve``'s subscribers attached (aggregate store,
  discovery server, ServiceEntry registry, debouncer);
- **index** (sink): what ``serve`` does before ``/ready``: the registry's initial load
  and the first PushContext.

Run as ``python bench/mcp_sync_phases.py --count N [--profile]``: it prints one JSON
line per phase as soon as the phase ends (``{"phase": …, "seconds": …,
"gc_seconds": …}``, the last with cumulative time in the garbage collector), so a
caller that has to cut a slow run short still knows which phases finished. With
``--profile`` the phases run once under cProfile instead (decode is then counted
once, inside ``on_response``), and the report follows on stderr, plus a
``{"phase": "profile", "where": […]}`` line summarising it.

:class:`PhasesChild` runs this in a child process for ``bench/mcp_sync.py`` and reads
those lines until the last one arrives, the child dies or the time limit passes (a phase
that does not scale is thereby cut off and named in the report); :class:`PhaseRun` is
what it read.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import io
import json
import pstats
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.child import Child
from bench.harness.figures import ms
from bench.mcp_sync_floor import service_entries
from pilothouse.config.documents import RawObject
from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.cache import ResourceCache
from pilothouse.push.context import build_context
from pilothouse.push.proxy import parse_node
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.sources.aggregate import AggregateStore
from pilothouse.sources.memory import MemoryStore
from pilothouse.sources.upstream_resources import KindDecoder
from pilothouse.sources.xds_upstream import XdsUpstreamSource
from pilothouse.xds.generators.api import ApiGenerator
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.protocol.wire import sotw_response
from pilothouse.xds.server.discovery import DiscoveryServer

TYPE_NAME = "networking.istio.io/v1/ServiceEntry"
SINK_NODE = "sidecar~127.0.0.1~pilothouse.istio-system~istio-system.svc.cluster.local"
PHASES = ("encode", "assemble", "parse", "decode", "store", "index")
SOURCE_PHASES = ("encode", "assemble")
T = TypeVar("T")
Emit = Callable[..., None]


@dataclass
class GcClock:
    """Seconds spent in the cyclic garbage collector while installed."""

    seconds: float = 0.0
    collections: int = 0
    _started: float = field(default=0.0, repr=False)

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.collections += 1

    @contextmanager
    def installed(self) -> Iterator[GcClock]:
        gc.callbacks.append(self)
        try:
            yield self
        finally:
            gc.callbacks.remove(self)


def source_store(count: int) -> MemoryStore:
    """What the source pilothouse holds after loading the files (built without YAML)."""
    loader = Loader(SCHEMAS, source="fs:///bench/mesh")
    store = MemoryStore(loader.source)
    for entry in service_entries(count):
        config, problems, _key = loader.load_object(RawObject(entry, "bench.yaml", 0, {}))
        assert config is not None, problems
        store.apply(config)
    store.mark_synced()
    return store


def _encode_input(store: MemoryStore) -> GenerationInput:
    proxy = parse_node(SINK_NODE, {"GENERATOR": "api"})
    context = build_context(store, lambda: (), MeshSettings(), "v1")
    return GenerationInput(
        proxy=proxy,
        scope=context.scope(proxy),
        context=context,
        endpoints=EndpointIndex(),
        cache=ResourceCache(),
    )


class _Phases:
    """Runs the phases in order, reporting each through ``emit`` as it ends."""

    def __init__(self, emit: Emit, clock: GcClock) -> None:
        self._emit = emit
        self._clock = clock

    def timed(self, phase: str, work: Callable[[], T]) -> T:
        start = time.perf_counter()
        out = work()
        seconds = time.perf_counter() - start
        self._emit(phase=phase, seconds=round(seconds, 4), gc_seconds=round(self._clock.seconds, 3))
        return out

    async def run(self, store: MemoryStore, separate_decode: bool) -> None:
        count = len(store)
        generator = ApiGenerator(store).for_type(TYPE_NAME)
        assert generator is not None
        given = _encode_input(store)
        resources = self.timed("encode", lambda: generator.generate(given))
        body = self.timed(
            "assemble",
            lambda: sotw_response(
                "v1", TYPE_NAME, "v1-1", [resources[n].body for n in sorted(resources)]
            ),
        )
        self._emit(phase="response", bytes=len(body))
        response = self.timed("parse", lambda: discovery_pb2.DiscoveryResponse.FromString(body))
        if separate_decode:  # decode alone, on a decoder of its own
            schema = SCHEMAS.by_kind("ServiceEntry")
            assert schema is not None
            decoder = KindDecoder(schema, "xds://bench")
            decoded = self.timed("decode", lambda: decoder.decode(response.resources))
            assert len(decoded.configs) == count and not decoded.rejections
        # the store wired as serve wires it: the decoded objects go in (timed on their
        # own: subtracting a decode timed apart would mix two runs' noise), or under the
        # profiler the whole of on_response, decode included
        sink = XdsUpstreamSource("127.0.0.1", 15010)
        discovery = DiscoveryServer(AggregateStore([sink.store]), MeshSettings())
        if separate_decode:
            configs = decoded.configs
            self.timed("store", lambda: sink.store.replace_kind("ServiceEntry", configs))
        else:
            ack = self.timed("store", lambda: sink.on_response(response))
            assert not ack.HasField("error_detail"), ack.error_detail
        assert len(sink.store) == count
        self.timed(
            "index",
            lambda: (
                discovery.registry.initial_load(),
                build_context(discovery.store, discovery.registry.services, MeshSettings(), "v1"),
            ),
        )
        discovery.close()
        self._emit(phase="done", gc_collections=self._clock.collections)


def measure(store: MemoryStore, emit: Emit) -> None:
    """Every phase once over ``store``'s ServiceEntries."""
    with GcClock().installed() as clock:
        asyncio.run(_Phases(emit, clock).run(store, separate_decode=True))


PROFILE_POINTS = (
    ("api.py", "generate", "encode"),
    ("mcp_resource.py", "decode_bytes", "decode"),
    ("load.py", "load_message", "decode: the Loader (names, validation, Config)"),
    ("service_entry.py", "validate_service_entry", "decode: validation"),
    ("memory.py", "replace_kind", "store (with subscribers)"),
    ("aggregate.py", "_forward", "store: aggregate store forwarding"),
    ("controller.py", "initial_load", "index: registry initial load (every entry again)"),
    ("context.py", "build_context", "index: PushContext"),
)


def profile(store: MemoryStore, emit: Emit, top: int = 30) -> str:
    """The phases under cProfile; emits where the time went and returns the report.

    Where the time went: the cumulative share of the functions in
    :data:`PROFILE_POINTS`, then own time by module, largest first.
    """
    profiler = cProfile.Profile()
    with GcClock().installed() as clock:
        profiler.enable()
        asyncio.run(_Phases(lambda **_: None, clock).run(store, separate_decode=False))
        profiler.disable()
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    rows: dict[tuple[str, int, str], tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    total = sum(row[2] for row in rows.values())
    cumulative: dict[str, float] = {}
    own: dict[str, float] = {}
    for (path, _line, name), (_cc, _nc, tt, ct, _callers) in rows.items():
        for suffix, function, label in PROFILE_POINTS:
            if name == function and path.endswith("/" + suffix):
                cumulative[label] = max(cumulative.get(label, 0.0), ct)
        module = _module(path)
        own[module] = own.get(module, 0.0) + tt
    where = [f"{label} {cumulative.get(label, 0.0) / total:.0%}" for *_, label in PROFILE_POINTS]
    by_module = sorted(own.items(), key=lambda item: item[1], reverse=True)[:6]
    where += [f"own time in {module} {seconds / total:.0%}" for module, seconds in by_module]
    emit(phase="profile", where=where)
    return text.getvalue()


def _module(path: str) -> str:
    for marker in ("site-packages/", "src/", "lib/python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    if "/validation/" in path:
        return path.rsplit("/", 1)[0] + "/*"
    return path if "/" in path or path.endswith(".py") else "builtins"


@dataclass(frozen=True, slots=True)
class PhaseRun:
    """What a phases child reported before it finished or was cut off."""

    seconds: dict[str, float]
    response_bytes: int | None
    gc_seconds: float | None
    gc_collections: int | None
    cut_off: str
    where: list[str]
    text: str
    built: bool = True

    def summary(self) -> str:
        if not self.built:
            return f"the source store was not built: {self.cut_off}"
        shown = []
        for phase in PHASES:
            if phase in self.seconds:
                shown.append(f"{phase} {ms(self.seconds[phase])}")
            else:
                shown.append(f"{phase} {self.cut_off or 'not run'}")
                break
        return ", ".join(shown)

    def gc_summary(self) -> str | None:
        if self.gc_seconds is None:
            return None
        if self.gc_collections is None:
            return f"{ms(self.gc_seconds)} in the phases that finished"
        return f"{ms(self.gc_seconds)} in {self.gc_collections} collections"

    def per_object_us(self, phases: tuple[str, ...], count: int) -> float | None:
        if not all(p in self.seconds for p in phases):
            return None
        return round(sum(self.seconds[p] for p in phases) / count * 1e6, 1)


class PhasesChild:
    """One run of the phases (or of their profile) in a child process."""

    def __init__(self, workdir: Path, count: int, *, profile: bool = False) -> None:
        name = "phases-profile" if profile else "phases"
        argv = [sys.executable, str(Path(__file__)), "--count", str(count)]
        self.profile = profile
        self.child = Child(name, [*argv, "--profile"] if profile else argv, workdir / f"{name}.log")
        self.started = time.monotonic()
        self._last = "profile" if profile else "done"
        self._seen: list[dict[str, Any]] = []
        self._changed = self.started

    def _read(self) -> bool:
        """Take in new lines; True once the last one has arrived."""
        lines = [ln for ln in self.child.output().splitlines() if ln.startswith('{"phase"')]
        if len(lines) > len(self._seen):
            self._seen = [json.loads(ln) for ln in lines]
            self._changed = time.monotonic()
        return any(item["phase"] == self._last for item in self._seen)

    def due(self, timeout: float) -> bool:
        """True when :meth:`collect` would not wait: done, dead or out of time."""
        return self._read() or not self.child.alive() or time.monotonic() >= self.started + timeout

    def collect(self, timeout: float) -> PhaseRun:
        """Wait until the child is done, dead, or ``timeout`` s after it started; stop it."""
        deadline = self.started + timeout
        try:
            finished = self._read()
            while not finished and self.child.alive() and time.monotonic() < deadline:
                time.sleep(0.1)
                finished = self._read()
            if finished and self.profile:
                self.child.wait_for_line(r"^== cProfile", 5)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.child.wait_exit(30)
            text = self.child.output()
        finally:
            self.stop()
        values = {item["phase"]: item for item in self._seen}
        cut_off = ""
        if not finished:
            running = time.monotonic() - self._changed
            cut_off = f"> {running:.0f} s (cut off at the {timeout:.0f} s limit)"
            if time.monotonic() < deadline:
                cut_off = f"failed: {text[-1500:]}"
        return PhaseRun(
            seconds={p: values[p]["seconds"] for p in PHASES if p in values},
            response_bytes=values.get("response", {}).get("bytes"),
            gc_seconds=max(
                (item["gc_seconds"] for item in self._seen if "gc_seconds" in item), default=None
            ),
            gc_collections=values.get("done", {}).get("gc_collections"),
            cut_off=cut_off,
            where=values.get("profile", {}).get("where", []),
            text=text[text.find("== cProfile") :] if self.profile else "",
            built="build" in values,
        )

    def stop(self) -> None:
        self.child.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    def emit(**values: Any) -> None:
        print(json.dumps(values), flush=True)

    start = time.perf_counter()
    store = source_store(args.count)
    emit(phase="build", seconds=round(time.perf_counter() - start, 2))
    if args.profile:
        report = profile(store, emit)
        print(f"== cProfile, {args.count} ServiceEntries ==\n{report}", file=sys.stderr)
    else:
        measure(store, emit)


if __name__ == "__main__":
    main()
