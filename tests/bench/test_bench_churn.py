"""The endpoint churn benchmark's parts (harness/churn.py, churn_runs.py, churn_floor.py,
endpoint_churn.py): event addresses, the ledger, the floor's batching, the watch log and
the report."""

from __future__ import annotations

import asyncio
import math
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from envoy.config.endpoint.v3 import endpoint_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from bench.churn_floor import (
    FloorBatcher,
    FloorPusher,
    Template,
    completions_from_release,
    push_request,
)
from bench.churn_runs import (
    ChurnOptions,
    ChurnPlan,
    ChurnRun,
    by_quarter,
    make_events,
)
from bench.endpoint_churn import NOT_JUDGED, ChurnSize, figure_groups
from bench.harness.churn import (
    NO_EVENT,
    ChurnEvent,
    ChurnLedger,
    ChurnSchedule,
    LedgerTap,
    churn_address,
    churn_number,
    config_updates,
    generation,
    watch_latencies,
    with_address,
    workload_entry_path,
    write_event,
)
from bench.harness.mesh import FanoutMesh, endpoint_address
from bench.harness.rounds import percentiles
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.loadtest.holdings import HeldResource, XdsEvent
from pilothouse.loadtest.stats import percentile
from pilothouse.protocol.type_urls import CDS, EDS


def assignment(name: str, *addresses: str) -> bytes:
    message = endpoint_pb2.ClusterLoadAssignment(cluster_name=name)
    group = message.endpoints.add()
    for address in addresses:
        socket = group.lb_endpoints.add().endpoint.address.socket_address
        socket.address = address
        socket.port_value = 8080
    return bytes(message.SerializeToString())


def event(number: int, service: int, at: float, wall: float = 0.0) -> ChurnEvent:
    return ChurnEvent(number, service, churn_address(number), at, wall)


# -- events -------------------------------------------------------------------------------


@pytest.mark.parametrize("number", [1, 255, 256, 65535, 65536, 123_456, 55 * 65536 + 1])
def test_an_event_number_survives_its_address(number: int) -> None:
    assert churn_number(churn_address(number)) == number


def test_other_addresses_carry_no_event() -> None:
    for address in ("10.100.0.1", "10.199.255.255", "192.168.0.1", "10.200.x.1", "::1", ""):
        assert churn_number(address) == NO_EVENT
    assert churn_number(endpoint_address(99, 1, 1)) == NO_EVENT
    with pytest.raises(ValueError):
        churn_address(0)


def test_the_generation_is_the_newest_event_in_the_assignment() -> None:
    body = assignment("c", endpoint_address(0, 0, 0), churn_address(7), churn_address(3))
    assert generation(body) == 7
    assert generation(assignment("c", endpoint_address(0, 0, 0))) == NO_EVENT


def test_with_address_moves_only_the_named_endpoint() -> None:
    body = assignment("c", "10.100.0.1", "10.100.0.2")
    moved = endpoint_pb2.ClusterLoadAssignment.FromString(
        with_address(body, "10.100.0.1", churn_address(5))
    )
    addresses = [e.endpoint.address.socket_address.address for e in moved.endpoints[0].lb_endpoints]
    assert addresses == [churn_address(5), "10.100.0.2"]
    with pytest.raises(ValueError):
        with_address(body, "10.1.1.1", churn_address(5))


def test_the_schedule_numbers_events_and_takes_services_in_turn() -> None:
    schedule = ChurnSchedule(3)
    made = [schedule.next(at=float(i)) for i in range(7)]
    assert [e.number for e in made] == [1, 2, 3, 4, 5, 6, 7]
    assert [e.service for e in made] == [0, 1, 2, 0, 1, 2, 0]
    assert made[4].address == churn_address(5)
    assert made[4].at == 4.0


def test_writing_an_event_moves_the_workload_entry(tmp_path: Path) -> None:
    mesh = FanoutMesh(tmp_path, services=12, namespaces=4, endpoints=2)
    mesh.write()
    path = workload_entry_path(mesh, 5)
    assert endpoint_address(5, 0, 0) in path.read_text(encoding="utf-8")
    write_event(mesh, event(17, 5, 0.0))
    result = Loader(SCHEMAS).load_text(path.read_text(encoding="utf-8"), str(path))
    assert result.ok, result.errors
    (config,) = result.configs
    assert config.key.name == "svc-5-0"
    assert churn_address(17) in str(config.spec)
    assert sorted(p.name for p in path.parent.iterdir() if p.name.startswith(".")) == []


# -- the ledger ---------------------------------------------------------------------------


def test_a_proxy_reaches_every_event_its_generation_covers() -> None:
    ledger = ChurnLedger(proxies=2, services=2)
    for e in (event(1, 0, 1.0), event(2, 1, 1.1), event(3, 0, 1.2)):
        ledger.add(e)
    assert ledger.pending == 3
    # proxy 0 gets service 0 at generation 3: events 1 and 3, each from its own write
    assert ledger.reach(0, 0, 3, 2.0) == 2
    assert list(ledger.latencies) == pytest.approx([1.0, 0.8])
    # an older generation, or the same again, reaches nothing more
    assert ledger.reach(0, 0, 1, 2.5) == 0
    assert ledger.reach(0, 0, 3, 2.5) == 0
    assert ledger.completions() == (None, None, None)
    assert ledger.reach(1, 0, 1, 2.2) == 1
    assert ledger.completions() == (pytest.approx(1.2), None, None)
    assert ledger.delivered(1) and not ledger.delivered(2)
    ledger.reach(1, 0, 3, 3.0)
    ledger.reach(0, 1, 2, 3.1)
    ledger.reach(1, 1, 2, 3.2)
    assert ledger.pending == 0
    assert ledger.delivered(3)
    assert ledger.completions() == pytest.approx((1.2, 2.1, 1.8))


def test_the_ledger_refuses_events_out_of_order() -> None:
    ledger = ChurnLedger(proxies=1, services=1)
    ledger.add(event(2, 0, 0.0))
    with pytest.raises(ValueError):
        ledger.add(event(1, 0, 0.0))
    with pytest.raises(ValueError):
        ledger.add(event(3, 4, 0.0))


@dataclass(eq=False)
class FakeProxy:
    """What the tap reads of a simulated proxy."""

    held: dict[str, HeldResource] = field(default_factory=dict)
    log: deque[XdsEvent] = field(default_factory=deque)
    listeners: list[Any] = field(default_factory=list)

    @property
    def events(self) -> tuple[XdsEvent, ...]:
        return tuple(self.log)

    def holds(self, type_url: str) -> dict[str, HeldResource]:
        return self.held if type_url == EDS else {}

    def add_listener(self, listener: Any) -> None:
        self.listeners.append(listener)

    def remove_listener(self, listener: Any) -> None:
        self.listeners.remove(listener)

    def accept(self, type_url: str, name: str, body: bytes, accepted: bool = True) -> None:
        if accepted and type_url == EDS:
            self.held[name] = HeldResource(name, "v", body)
        self.log.append(XdsEvent(0.0, type_url, "v", (name,), accepted=accepted))
        for listener in list(self.listeners):
            listener(self)


def test_the_tap_reports_accepted_eds_responses_once() -> None:
    ledger = ChurnLedger(proxies=2, services=2)
    proxies = [FakeProxy(), FakeProxy()]
    times = iter([0.0, 5.0, 6.0, 7.0, 8.0])
    tap = LedgerTap(proxies, ledger, {"c0": 0, "c1": 1}, generation, clock=lambda: next(times))  # type: ignore[arg-type]
    tap.attach()
    ledger.add(event(1, 0, 4.0))
    proxies[0].accept(EDS, "c0", assignment("c0", churn_address(1)))
    proxies[0].accept(CDS, "c0", b"")  # not EDS: ignored
    proxies[1].accept(EDS, "c0", assignment("c0", churn_address(1)), accepted=False)
    assert ledger.pending == 1
    assert list(ledger.latencies) == [1.0]
    listener = proxies[1].listeners[0]
    proxies[1].accept(EDS, "c9", assignment("c9", churn_address(1)))  # not a churned cluster
    proxies[1].accept(EDS, "c0", assignment("c0", churn_address(1)))
    listener(proxies[1])  # a connection change repeats the last event: not counted twice
    assert ledger.pending == 0
    assert list(ledger.latencies) == [1.0, 3.0]
    tap.detach()
    assert all(not proxy.listeners for proxy in proxies)


# -- the floor's batching -----------------------------------------------------------------


def test_a_batch_is_due_after_quiet_or_at_its_longest() -> None:
    batcher = FloorBatcher(after=0.1, maximum=0.25)
    assert batcher.due_at() is None
    batcher.add(event(1, 0, 1.0))
    assert batcher.due_at() == pytest.approx(1.1)
    batcher.add(event(2, 1, 1.08))
    batcher.add(event(3, 0, 1.2))
    assert batcher.due_at() == pytest.approx(1.25)
    assert [e.number for e in batcher.take()] == [1, 2, 3]
    assert batcher.due_at() is None


def test_a_push_carries_the_latest_assignment_of_each_changed_service() -> None:
    templates = {
        s: Template(
            f"c{s}", assignment(f"c{s}", endpoint_address(s, 0, 0)), endpoint_address(s, 0, 0)
        )
        for s in range(2)
    }
    request = push_request([event(1, 0, 0.0), event(2, 1, 0.0), event(3, 0, 0.0)], templates)
    assert request.system_version_info == "push"
    assert [(r.name, r.version) for r in request.resources] == [("c0", "3"), ("c1", "2")]
    assert all(r.resource.type_url == EDS for r in request.resources)
    assert generation(request.resources[0].resource.value) == 3


async def test_the_floor_pusher_holds_a_batch_until_the_last_one_arrived() -> None:
    ledger = ChurnLedger(proxies=1, services=1)
    templates = {0: Template("c0", assignment("c0", "10.100.0.1"), "10.100.0.1")}
    batcher = FloorBatcher(after=0.0, maximum=0.0)
    sent: list[Any] = []

    async def apply(request: Any) -> None:
        sent.append(request)

    pusher = FloorPusher(batcher, ledger, templates, apply, gate=10.0)
    running = asyncio.get_running_loop().create_task(pusher.run())
    for number in (1, 2):
        made = event(number, 0, 0.0)
        ledger.add(made)
        batcher.add(made)
        await asyncio.sleep(0.05)
    assert [[r.version for r in request.resources] for request in sent] == [["1"]]
    ledger.reach(0, 0, 1, 1.0)
    await asyncio.sleep(0.05)
    assert [[r.version for r in request.resources] for request in sent] == [["1"], ["2"]]
    pusher.finish()
    await asyncio.wait_for(running, 1.0)
    assert pusher.pushes == 2 and pusher.gate_timeouts == 0
    assert sorted(pusher.released) == [1, 2]
    ledger.reach(0, 0, 2, pusher.released[2] + 0.25)
    assert completions_from_release(ledger, pusher.released) == pytest.approx(
        [1.0 - pusher.released[1], 0.25]
    )


# -- figures ------------------------------------------------------------------------------


def test_quarters_take_the_median_of_each_quarter_of_the_events() -> None:
    completions = [1.0, 2.0, None, 4.0, 5.0, 6.0, 7.0, 8.0]
    assert by_quarter(completions) == (1.5, 4.0, 5.5, 7.5)
    assert math.isnan(by_quarter([None, None, None, None])[0])


def test_percentiles_match_the_loadtest_percentile() -> None:
    values = [0.3, 0.1, 0.9, 0.5, 0.7, 0.2]
    assert percentiles(values, (0, 50, 90, 99, 100)) == pytest.approx(
        tuple(percentile(values, q) for q in (0, 50, 90, 99, 100))
    )
    assert all(math.isnan(v) for v in percentiles([], (50,)))


def test_config_updates_are_matched_to_the_events_that_caused_them() -> None:
    log = "\n".join(
        [
            '2026-01-01T00:00:01.050Z info serve config update key="WorkloadEntry ns-0/svc-0-0" '
            "origin=x",
            '2026-01-01T00:00:01.070Z info serve config update key="WorkloadEntry ns-1/svc-1-1" '
            "origin=x",
            '2026-01-01T00:00:01.090Z info serve config update key="WorkloadEntry ns-1/svc-1-0" '
            "origin=x",
            '2026-01-01T00:00:03.100Z info serve config update key="WorkloadEntry ns-0/svc-0-0" '
            "origin=x",
        ]
    )
    updates = config_updates(log)
    assert sorted(updates) == [0, 1]
    base = updates[0][0] - 1.05
    events = [
        event(1, 0, 0.0, base + 1.0),
        event(2, 1, 0.0, base + 1.02),
        event(3, 0, 0.0, base + 2.0),
        event(4, 0, 0.0, base + 4.0),  # never seen
    ]
    found = watch_latencies(events, updates)
    assert found[3] is None
    assert found[:3] == pytest.approx([0.05, 0.07, 1.1], abs=1e-3)


def churn_run(p99: float, proxies: int = 10, missed: int = 0) -> ChurnRun:
    return ChurnRun(
        proxies=proxies,
        events=100,
        events_seconds=1.98,
        window=2.5,
        completion=(p99 / 2, p99 * 0.9, p99),
        completion_max=p99 * 1.1,
        completion_by_quarter=(p99 / 4, p99 / 3, p99 / 2, p99),
        missed=missed,
        per_proxy=(p99 / 3, p99 / 2, p99 * 0.8),
        eds_responses=5000,
        eds_bytes=2_500_000,
        cpu_seconds=2.0,
        idle_cpu_rate=0.01,
        load_generator_cpu_seconds=1.0,
        stream_failures=0,
        nacks=0,
        reconnects=0,
        watch=(0.06, 0.08),
        beyond_measured=(p99 / 4, p99 / 3, p99 / 2),
        from_release=(p99 / 5, p99 / 4, p99 / 2),
        floor_pushes=10,
    )


def options(debounce_after: float = 0.1, debounce_max: float = 0.1) -> ChurnOptions:
    return ChurnOptions(
        sizes=(10, 20), runs=1, rate=50.0, duration=20.0, services=100, namespaces=10,
        endpoints=2, streams_per_channel=100, file_debounce=0.05, debounce_after=debounce_after,
        debounce_max=debounce_max, connect_timeout=90.0, timeout=45.0, gate=5.0,
    )  # fmt: skip


def test_the_push_window_is_debounce_max_when_events_never_leave_quiet() -> None:
    def shape(after: float, maximum: float) -> ChurnOptions:
        return options(debounce_after=after, debounce_max=maximum)

    assert shape(0.1, 0.1).push_window == 0.1
    assert shape(0.1, 0.5).push_window == 0.5
    assert shape(0.01, 0.5).push_window == 0.01
    assert shape(0.1, 0.5).pilothouse_debounce == pytest.approx(0.55)


def test_the_churn_report_states_target_ratio_and_curve() -> None:
    shape = options()
    sizes = [
        ChurnSize((churn_run(0.85),), (churn_run(0.5),)),
        ChurnSize((churn_run(1.65, 1000),), (churn_run(0.6, 1000),)),
    ]
    small, large = figure_groups(shape, sizes)
    for group in (small, large):
        for key in ("benchmark", "baseline", "ratio_to_baseline", "target", "target_met"):
            assert key in group
    assert (small["target"], small["target_met"]) == (NOT_JUDGED, "—")  # 10 proxies
    assert small["ratio_to_baseline"] == round((0.5 / 2) / (0.85 - 0.15), 2)
    assert small["floor_push_to_ack_p99_ms"] == 250.0
    assert small["pilothouse_event_p99_beyond_measured_debounce_ms"] == 425.0
    assert "floor_event_p99_beyond_debounce_ms" not in small
    assert small["pilothouse_event_p99_beyond_debounce_ms"] == 700.0
    assert small["pilothouse_eds_responses_per_s"] == 2000
    assert small["pilothouse_file_to_config_event_p50_ms"] == 70.0
    assert large["target"] == "[17] endpoint churn 50/s to 1,000 proxies: event p99 ≤ 1 s"
    assert large["target_met"] == "missed by 650 ms (1.65× the target)"
    assert [p["proxies"] for p in large["curve"]] == [10, 1000]
    assert large["curve"][1]["pilothouse_s"] == 1.65
    assert "curve" not in small


def test_at_1000_proxies_a_missed_event_misses_the_target_whatever_the_p99() -> None:
    met = ChurnSize((churn_run(0.9, 1000),), (churn_run(0.6, 1000),))
    [group] = figure_groups(options(), [met])
    assert (group["pilothouse_events_missed"], group["target_met"]) == (0, "met")
    lossy = ChurnSize((churn_run(0.5, 1000, missed=3),), (churn_run(0.6, 1000),))
    [group] = figure_groups(options(), [lossy])
    assert group["target_met"] == "missed: 3 events never reached every proxy"


def test_the_churn_report_has_a_row_for_serve_with_workers_when_run() -> None:
    shape = options()
    one = ChurnSize((churn_run(1.2),), (churn_run(0.5),))
    two = ChurnSize((churn_run(1.2),), (churn_run(0.5),), (churn_run(0.6),), 2)
    (without,) = figure_groups(shape, [one])
    (group,) = figure_groups(shape, [two])
    assert not any(key.startswith("pilothouse_workers") for key in without)
    assert group["pilothouse_workers_2_event_p99_ms"] == 600.0
    assert group["pilothouse_workers_2_p99_to_one_worker"] == 0.5
    assert group["curve"][0]["pilothouse_workers_2_s"] == 0.6
    assert group["pilothouse_event_p99_ms"] == 1200.0  # the single process's own figures


def test_a_floor_control_request_is_a_delta_response() -> None:
    templates = {0: Template("c0", assignment("c0", "10.100.0.1"), "10.100.0.1")}
    request = push_request([event(1, 0, 0.0)], templates)
    assert isinstance(request, discovery_pb2.DeltaDiscoveryResponse)


async def test_events_are_made_on_their_own_thread_and_reach_the_ledger_in_order() -> None:
    schedule = ChurnSchedule(3)
    ledger = ChurnLedger(proxies=1, services=3)
    written: list[tuple[int, int]] = []
    delivered: list[int] = []

    def write(made: ChurnEvent) -> None:
        written.append((made.number, threading.get_ident()))

    events = await make_events(
        ChurnPlan(rate=200.0, duration=0.05, timeout=1.0),
        schedule,
        ledger,
        write,
        lambda made: delivered.append(made.number),
    )
    assert [e.number for e in events] == list(range(1, 11))
    assert [e.number for e in ledger.events] == delivered == list(range(1, 11))
    assert [number for number, _ in written] == delivered
    assert {thread for _, thread in written} != {threading.get_ident()}
    assert events[-1].at - events[0].at == pytest.approx(0.045, abs=0.03)
