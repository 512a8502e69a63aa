"""Fault injection: the control plane dies, comes back, loses its config directory; traffic
never notices.

A real ``pilothouse serve`` process serves a directory to two real Envoy sidecars (one
SotW, one delta ADS, each bootstrapped by ``pilothouse bootstrap``), each carrying a
steady, paced stream of real HTTP requests to local upstreams.  Then, in phases:

1. *killed*: the control plane's process group gets SIGKILL.  Envoy keeps its last
   config; meanwhile the route is edited (v1 -> v2) on disk.
2. *restarted*: a new ``pilothouse serve`` on the same ports; the Envoys reconnect and
   catch up: traffic moves to v2, which only the new process can have told them.
3. *away*: the config directory is renamed away.  The source is unavailable, not empty:
   Envoy keeps every cluster and listener, traffic stays on v2, and ``/ready`` stays 200
   while naming the unavailable source and why.
4. *back*: the directory is renamed back and the route edited (v2 -> v3); traffic follows.

Across the whole run no request may fail, and traffic only ever moves forward
(v1 -> v2 -> v3), never back to an older config.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.load import Sample, SteadyLoad
from tests.e2e.harness.ports import LOOPBACK, free_port, free_ports, wait_for_port
from tests.e2e.harness.serve_process import ServeProcess
from tests.e2e.harness.upstreams import Upstream, UpstreamPool
from tests.e2e.traffic_mesh import (
    destination_rule,
    fqdn,
    render,
    service,
    sidecar,
    sidecar_node,
    to,
    virtual_service,
)

pytestmark = pytest.mark.timeout(120)

VERSIONS = ("v1", "v2", "v3")
"""The route's destinations in the order the test moves it; traffic never goes back."""
FLAVOURS = ("sotw", "delta")
"""One Envoy per ADS flavour, each in its own namespace with its own egress port."""
RATE = 100.0
"""Requests per second through each Envoy."""
HOLD = 1.0
"""How long traffic runs at least with the control plane dead, and with the directory away
(at ``RATE``, 100 requests through each Envoy, of which at least half must land in the
phase; a phase is held longer until they have)."""
LINGER = 0.25
"""How long traffic runs on between phases that wait for nothing else (25 requests through
each Envoy at ``RATE``), so that each phase's traffic is seen before the next begins."""
RECONNECT = 40.0
"""Longest wait from the restart until traffic follows the restarted control plane: its
start-up, then Envoy's ADS reconnect backoff, which is fully jittered exponential from
0.5 s and capped at 5 s by ``pilothouse bootstrap`` (typically a few seconds)."""
FOLLOW = 10.0
"""Longest wait for traffic to follow an edit while the control plane runs."""
HELD_AT_MOST = 20.0
"""Longest a held phase waits for its share of requests (bounds a failure only)."""
XDS_CONNECT_FAILURES = "cluster.xds-grpc.upstream_cx_connect_fail"
"""Envoy's count of failed connections to its xDS cluster (reconnect attempts while down)."""


@dataclass
class Sidecar:
    """One Envoy sidecar of namespace ``fault-<flavour>`` and the load through it."""

    flavour: str
    port: int
    envoy: EnvoyProcess | None = None
    load: SteadyLoad | None = None

    @property
    def namespace(self) -> str:
        return f"fault-{self.flavour}"

    @property
    def host(self) -> str:
        return fqdn("reviews", self.namespace)


@dataclass
class Timeline:
    """Named phases by start time, to count what the load saw in each."""

    phases: list[tuple[str, float]] = field(default_factory=list)

    def begin(self, name: str) -> float:
        now = time.monotonic()
        self.phases.append((name, now))
        return now

    def samples_of(self, phase: str, samples: Sequence[Sample]) -> list[Sample]:
        return [s for s in samples if self.phase_of(s) == phase]

    def phase_of(self, sample: Sample) -> str:
        name = "before"
        for phase, start in self.phases:
            if sample.at >= start:
                name = phase
        return name


def services_yaml(sidecars: Sequence[Sidecar], upstreams: dict[str, Upstream]) -> str:
    objects = []
    for car in sidecars:
        endpoints = [(upstreams[v], {"version": v}) for v in VERSIONS]
        objects += [
            service("reviews", car.namespace, car.port, endpoints),
            destination_rule("reviews", car.namespace, {v: {"version": v} for v in VERSIONS}),
            sidecar(car.namespace, car.port),
        ]
    return render(*objects)


def routing_yaml(sidecars: Sequence[Sidecar], version: str) -> str:
    return render(
        *(
            virtual_service(
                "reviews",
                car.namespace,
                [{"route": [to(car.host, version)]}],
                hosts=[car.host],
                gateways=(),
            )
            for car in sidecars
        )
    )


def write(path: Path, text: str) -> None:
    """Replace a file's content in one step, as ``kubectl``-style tools and editors do."""
    staging = path.with_name(f".{path.name}.tmp")
    staging.write_text(text)
    os.replace(staging, path)


async def cli_bootstrap(car: Sidecar, xds_port: int) -> dict[str, Any]:
    """``pilothouse bootstrap`` for this sidecar, as a user would generate it."""
    command = [
        sys.executable, "-m", "pilothouse.cli.main", "bootstrap",
        "--node", sidecar_node(car.namespace), "--xds-address", f"{LOOPBACK}:{xds_port}",
        "--admin-port", "0", "-o", "json",
        *(["--delta"] if car.flavour == "delta" else []),
    ]  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        *command, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err.decode(errors="replace")
    document: dict[str, Any] = json.loads(out)
    return document


async def envoy_state(envoy: EnvoyProcess) -> tuple[frozenset[str], frozenset[str]]:
    """The names of the clusters and of the active listeners Envoy holds now."""
    statuses = (await envoy.clusters_json()).get("cluster_statuses", [])
    return frozenset(s["name"] for s in statuses), frozenset(await envoy.listeners())


async def rejections(envoy: EnvoyProcess) -> dict[str, int]:
    """Envoy's non-zero ``*.update_rejected`` counters (CDS, LDS, RDS, EDS NACKs)."""
    counters = await envoy.stats(r"update_rejected$")
    assert "cluster_manager.cds.update_rejected" in counters, counters  # the filter works
    return {name: value for name, value in counters.items() if value}


async def wait_disconnected(envoy: EnvoyProcess, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while await envoy.stat("control_plane.connected_state", default=0) != 0:
        assert time.monotonic() < deadline, "Envoy still reports a connected control plane"
        await asyncio.sleep(0.05)


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as exits:
        yield exits


async def test_control_plane_killed_restarted_and_directory_moved_costs_no_request(
    tmp_path: Path,
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
    stack: AsyncExitStack,
) -> None:
    upstreams = {v: await upstream_factory(f"reviews-{v}") for v in VERSIONS}
    ports = free_ports(len(FLAVOURS))
    sidecars = [Sidecar(flavour, port) for flavour, port in zip(FLAVOURS, ports, strict=True)]
    mesh = tmp_path / "mesh"
    away = tmp_path / "mesh.away"
    mesh.mkdir()
    (mesh / "services.yaml").write_text(services_yaml(sidecars, upstreams))
    routing = mesh / "routing.yaml"
    routing.write_text(routing_yaml(sidecars, "v1"))
    xds, admin = free_port(), free_port()

    def serve_process() -> ServeProcess:
        return ServeProcess(
            [mesh], xds_port=xds, admin_port=admin, log_path=tmp_path / "pilothouse.log"
        )

    plane = serve_process().start()
    stack.push_async_callback(lambda: plane.stop())
    timeline = Timeline()
    seen = Observations()
    try:
        _, *bootstraps = await asyncio.gather(
            plane.wait_ready(), *(cli_bootstrap(car, xds) for car in sidecars)
        )
        envoys = await asyncio.gather(*(envoy_factory(bootstrap) for bootstrap in bootstraps))
        for car, envoy in zip(sidecars, envoys, strict=True):
            car.envoy = envoy
            await wait_for_port(car.port, timeout=30)
            car.load = SteadyLoad(car.port, authority=car.host, rate=RATE, workers=4)
            await stack.enter_async_context(car.load)
        loads = [car.load for car in sidecars if car.load is not None]

        started = timeline.begin("warm")
        await all_on("v1", loads, after=started, timeout=FOLLOW)
        await asyncio.sleep(LINGER)

        # 1. SIGKILL: Envoy keeps its last config; the route is edited meanwhile.
        killed = timeline.begin("killed")
        plane.kill()
        await asyncio.gather(*(wait_disconnected(envoy) for envoy in envoys))
        write(routing, routing_yaml(sidecars, "v2"))
        await hold_phase(loads, since=killed)

        # 2. Restart on the same ports: the Envoys reconnect and catch up.
        restarted = timeline.begin("restarted")
        plane = serve_process().start()
        seen.startup = await plane.wait_ready()
        seen.caught_up = await all_on("v2", loads, after=restarted, timeout=RECONNECT) - restarted
        seen.attempts = [await envoy.stat(XDS_CONNECT_FAILURES, default=0) for envoy in envoys]
        await asyncio.sleep(LINGER)

        # 3. The directory goes away: unavailable, not empty.
        seen.before = await asyncio.gather(*(envoy_state(envoy) for envoy in envoys))
        gone = timeline.begin("away")
        os.rename(mesh, away)
        while time.monotonic() < gone + HOLD or not phase_filled(loads, since=gone):
            seen.ready_away.append(await plane.ready("format=json"))
            assert time.monotonic() < gone + HELD_AT_MOST, "the load stopped in the away phase"
            await asyncio.sleep(0.25)
        seen.during = await asyncio.gather(*(envoy_state(envoy) for envoy in envoys))

        # 4. The directory comes back: once the source says it is available again, an
        # edit must reach traffic (the server watches the directory again).
        back = timeline.begin("back")
        os.rename(away, mesh)
        seen.ready_back = await wait_available(plane, mesh, timeout=FOLLOW)
        seen.available = time.monotonic() - back
        edited = timeline.begin("edited")
        write(routing, routing_yaml(sidecars, "v3"))
        seen.followed = await all_on("v3", loads, after=edited, timeout=FOLLOW) - edited
        timeline.begin("settled")
        await asyncio.sleep(LINGER)
        seen.rejected = [await rejections(envoy) for envoy in envoys]
    finally:
        for car in sidecars:
            if car.load is not None:
                await car.load.stop()
        if away.exists() and not mesh.exists():
            os.rename(away, mesh)
        report = summary(sidecars, timeline, seen)
        print(f"{report}\n--- pilothouse log tail\n{plane.log_tail()}")
    assert await plane.stop() == 0, plane.log_tail()

    for car in sidecars:
        assert car.load is not None
        samples = car.load.samples
        assert car.load.failures() == [], f"{car.flavour}: failed requests\n{report}"
        assert_only_forward(samples, car.flavour, report)
        # Envoy held its last config while the control plane was dead ...
        dead = timeline.samples_of("killed", samples)
        assert len(dead) >= RATE * HOLD * 0.5, report
        assert {s.upstream for s in dead} == {"reviews-v1"}, report
        # ... and while the directory was away
        gone_samples = timeline.samples_of("away", samples)
        assert len(gone_samples) >= RATE * HOLD * 0.5, report
        assert {s.upstream for s in gone_samples} == {"reviews-v2"}, report
        # moving the directory back changes nothing by itself
        assert {s.upstream for s in timeline.samples_of("back", samples)} <= {"reviews-v2"}
        # the last word is the last edit
        settled = timeline.samples_of("settled", samples)
        assert settled and {s.upstream for s in settled} == {"reviews-v3"}, report
    # neither server ever sent anything Envoy rejected
    assert seen.rejected == [{} for _ in sidecars], seen.rejected
    # Envoy kept every cluster and listener while the directory was away
    for car, held, kept in zip(sidecars, seen.before, seen.during, strict=True):
        assert f"outbound|{car.port}|v2|{car.host}" in held[0], held
        assert kept == held, f"{car.flavour} Envoy lost config while the directory was away"
    # /ready stayed 200 throughout and said why the source was unavailable
    assert seen.ready_away, report
    assert [status for status, _ in seen.ready_away] == [200] * len(seen.ready_away), (
        seen.ready_away
    )
    state = source_state(seen.ready_away[-1][1], mesh)
    assert state["state"] == "unavailable" and state["reason"], seen.ready_away[-1]
    # and once the directory was back, that it is available again
    assert seen.ready_back[0] == 200, seen.ready_back


@dataclass
class Observations:
    """What the run saw besides the load: timings, Envoy state, ``/ready`` answers."""

    startup: float | None = None
    """Seconds from the restart until the new process answered ``/ready`` 200."""
    caught_up: float | None = None
    attempts: list[int] = field(default_factory=list)
    """Per Envoy, how many times it failed to connect to the control plane before it did."""
    """Seconds from the restart until every Envoy's traffic went to v2."""
    available: float | None = None
    """Seconds from moving the directory back until ``/ready`` said the source is available."""
    followed: float | None = None
    """Seconds from the edit after the directory came back until traffic went to v3."""
    before: list[tuple[frozenset[str], frozenset[str]]] = field(default_factory=list)
    during: list[tuple[frozenset[str], frozenset[str]]] = field(default_factory=list)
    ready_away: list[tuple[int, str]] = field(default_factory=list)
    ready_back: tuple[int, str] = (0, "(never asked)")
    rejected: list[dict[str, int]] = field(default_factory=list)
    """Per Envoy, its xDS ``update_rejected`` counters that are not zero (NACKs)."""


def phase_filled(loads: Sequence[SteadyLoad], since: float) -> bool:
    """Whether every load has sent the requests a phase asks for since it began."""
    least = RATE * HOLD * 0.5
    return all(sum(1 for s in load.samples if s.at >= since) >= least for load in loads)


async def hold_phase(loads: Sequence[SteadyLoad], since: float) -> None:
    """Hold the phase begun at ``since`` for ``HOLD`` and until every load has sent its
    share in it (a loaded machine sends fewer requests a second than ``RATE``)."""
    while time.monotonic() < since + HOLD or not phase_filled(loads, since):
        assert time.monotonic() < since + HELD_AT_MOST, "the load stopped"
        await asyncio.sleep(0.05)


async def wait_available(plane: ServeProcess, directory: Path, timeout: float) -> tuple[int, str]:
    """Wait until ``/ready`` reports ``directory``'s source available; returns that answer."""
    deadline = time.monotonic() + timeout
    while True:
        status, body = await plane.ready("format=json")
        if source_state(body, directory)["state"] == "available":
            return status, body
        assert time.monotonic() < deadline, f"{directory} still unavailable: {body}"
        await asyncio.sleep(0.05)


async def all_on(
    version: str, loads: Sequence[SteadyLoad], *, after: float, timeout: float
) -> float:
    """Wait until every load goes to ``version``; returns when the last one got there."""
    moved = await asyncio.gather(
        *(
            load.wait_for_upstream(f"reviews-{version}", after=after, streak=10, timeout=timeout)
            for load in loads
        )
    )
    return max(moved)


def source_state(ready_json: str, directory: Path) -> dict[str, Any]:
    """The entry for ``fs://<directory>`` in a ``/ready?format=json`` body
    (``{"ready", "reasons", "sources": [{"source", "state", "reason", "since"}]}``)."""
    try:
        sources = json.loads(ready_json)["sources"]
    except (ValueError, KeyError, TypeError):
        raise AssertionError(f"/ready?format=json lists no sources: {ready_json!r}") from None
    name = f"fs://{directory.resolve()}"
    found = [entry for entry in sources if entry.get("source") == name]
    assert found, f"/ready does not name {name}: {ready_json}"
    entry: dict[str, Any] = found[0]
    return entry


def assert_only_forward(samples: Sequence[Sample], flavour: str, report: str) -> None:
    """Traffic moves v1 -> v2 -> v3 and never back to an older destination."""
    highest = 0
    for sample in samples:
        assert sample.upstream is not None, report
        rank = VERSIONS.index(sample.upstream.removeprefix("reviews-"))
        assert rank >= highest, f"{flavour}: traffic went back to {sample.upstream}\n{report}"
        highest = rank


def summary(sidecars: Sequence[Sidecar], timeline: Timeline, seen: Observations) -> str:
    def seconds(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}s"

    lines = [
        f"fault injection: restarted server ready after {seconds(seen.startup)}, "
        f"traffic caught up after {seconds(seen.caught_up)} "
        f"(failed xDS connection attempts per Envoy: {seen.attempts}); "
        f"the directory back, available after {seconds(seen.available)}, "
        f"traffic followed the next edit in {seconds(seen.followed)}"
    ]
    for car in sidecars:
        if car.load is None:
            continue
        per_phase: dict[str, Counter[str]] = {}
        for sample in car.load.samples:
            outcome = sample.error or (
                sample.upstream if sample.status == 200 else str(sample.status)
            )
            per_phase.setdefault(timeline.phase_of(sample), Counter())[outcome or "?"] += 1
        lines.append(
            f"  {car.flavour}: {len(car.load.samples)} requests, "
            f"{len(car.load.failures())} failed; "
            + "; ".join(f"{phase} {dict(counts)}" for phase, counts in per_phase.items())
        )
    if timeline.phases:
        origin = timeline.phases[0][1]
        lines.append(
            "  phases began at "
            + ", ".join(f"{name} +{start - origin:.2f}s" for name, start in timeline.phases)
        )
    if seen.ready_away:
        lines.append(f"  /ready while away: {seen.ready_away[-1]}")
    return "\n".join(lines)
