"""The push service on its own: store edits in, planned pushes handed to in-memory targets.

No stream, no gRPC, no process: the store, the registry, the pipeline and the push
service are real; each connection is a :class:`FakeTarget` (push/'s
:class:`~pilothouse.push.target.PushTarget`) that keeps what it is handed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator

import pytest

from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.kinds.table import SCHEMAS
from pilothouse.metrics.push import PushMetrics
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.affected_types import unaffected_types
from pilothouse.push.cache import ResourceCache
from pilothouse.push.counters import PushCounters
from pilothouse.push.debounce import DebounceSettings
from pilothouse.push.pipeline import PushPipeline
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.push.proxy_push import EndpointPush, FullPush, ProxyPush
from pilothouse.push.request import PushRequest
from pilothouse.push.service import PushService
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.settings import XdsSettings
from pilothouse.sources.memory import MemoryStore
from tests.unit.push.test_push_pipeline import A_ROUTES, MESH, one

POLICY = """\
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-delete, namespace: team-a}
spec:
  action: DENY
  rules: [{to: [{operation: {methods: [DELETE]}}]}]
"""
B_MOVED = MESH.split("---\n")[1].replace("10.0.0.2", "10.0.0.3")
"""ServiceEntry ``b`` with its one endpoint at another address: only endpoints move."""
SETTLE_TIMEOUT = 5.0


class FakeTarget:
    """A connection as the push service drives it: it keeps every planned push it is
    handed; ``broken`` makes its push raise; ``held`` is what it makes the workers wait
    for (None: its pushes are written at once), ``unanswered`` what its next push waits
    for (None: its proxy answered everything)."""

    def __init__(self, target_id: str, namespace: str, hosts: frozenset[str] = frozenset()):
        self.id = target_id
        self.proxy: ProxyIdentity = parse_node(
            f"sidecar~10.1.0.1~{target_id}.{namespace}~{namespace}.svc.cluster.local"
        )
        self._hosts = hosts
        self.failure: str | None = None
        self.pushed: list[ProxyPush] = []
        self.broken = False
        self.held: asyncio.Future[None] | None = None
        self.unanswered: asyncio.Future[None] | None = None

    def __repr__(self) -> str:
        return f"FakeTarget({self.id})"

    def watched_types(self) -> list[str]:
        return [CDS, EDS, LDS, RDS]

    def watches_any_host(self, hostnames: frozenset[str]) -> bool:
        return not self._hosts.isdisjoint(hostnames)

    def watches_secrets(self, names: frozenset[str]) -> bool:
        return False

    def watches_hosts(self, hostnames: frozenset[str]) -> frozenset[str]:
        return frozenset(f"outbound|80||{host}" for host in self._hosts & hostnames)

    def reidentify(self, proxy: ProxyIdentity) -> None:
        self.proxy = proxy

    def push(self, planned: ProxyPush, now: float) -> None:
        if self.broken:
            raise RuntimeError(f"{self.id} cannot generate")
        self.pushed.append(planned)

    def fail(self) -> None:
        self.failure = self.failure or "internal error"

    def when_written(self) -> asyncio.Future[None] | None:
        return self.held

    def when_answered(self) -> asyncio.Future[None] | None:
        return self.unanswered


class Service:
    """A store, a registry, a pipeline and the push service over them, running."""

    def __init__(self, throttle: int = 0, answer_wait: float = 1.0) -> None:
        self.store = MemoryStore()
        for config in Loader(SCHEMAS).load_strict(MESH, "mesh.yaml"):
            self.store.apply(config)
        self.store.mark_synced()
        self.counters = PushCounters()
        service: PushService[FakeTarget]
        self.registry = ServiceEntryRegistry(self.store, lambda u: service.registry_changed(u))
        cache = ResourceCache()
        versions = (f"v{n}" for n in itertools.count(1))
        pipeline: PushPipeline[FakeTarget] = PushPipeline(
            self.store,
            self.registry.services,
            MeshSettings(),
            cache,
            next_version=lambda: next(versions),
            api_kinds=lambda types: frozenset(),
        )
        debounce = DebounceSettings(debounce_after=0.01)
        settings = XdsSettings(
            debounce=debounce, push_throttle=throttle, answer_wait=answer_wait
        )
        metrics = PushMetrics()
        service = PushService(
            pipeline, self.store, self.registry, cache, settings, self.counters, metrics
        )
        self.pushes = service

    def apply(self, text: str) -> None:
        self.store.apply(one(text))

    async def settled(self) -> None:
        """Until every change so far is pushed (debouncer idle, nothing queued)."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while True:
            await asyncio.sleep(0.001)
            state = self.pushes.debouncer.state
            idle = state.pending is None and state.immediate is None and not state.in_flight
            if idle and self.pushes.pending() == 0:
                return
            assert time.monotonic() < deadline, "the changes were never pushed"


@contextlib.asynccontextmanager
async def running(throttle: int = 0, answer_wait: float = 1.0) -> AsyncIterator[Service]:
    """A started push service whose debouncer and workers run until the block ends."""
    service = Service(throttle, answer_wait)
    assert service.pushes.has_synced()
    service.pushes.start()
    async with asyncio.TaskGroup() as tasks:
        service.pushes.run(tasks)
        try:
            yield service
        finally:
            service.pushes.close()


def connected(service: Service, *targets: FakeTarget) -> None:
    for target in targets:
        service.pushes.connect(target)


async def test_a_change_reaches_exactly_the_targets_it_concerns_once_debounced() -> None:
    a, b = FakeTarget("a", "team-a"), FakeTarget("b", "team-b")
    c = FakeTarget("c", "team-c")  # its Sidecar sees team-c alone
    async with running() as service:
        connected(service, a, b, c)
        service.apply(A_ROUTES)
        service.apply(A_ROUTES.replace("a-routes", "a-more-routes"))
        await service.settled()
    for target in (a, b):
        (planned,) = target.pushed  # both edits, merged into one push
        assert isinstance(planned, FullPush)
        assert {k.name for k in planned.request.configs_updated} == {"a-routes", "a-more-routes"}
    assert c.pushed == []
    assert service.counters.full_pushes == 1 and service.counters.connections_queued == 2
    assert service.counters.inbound_updates == {"config": 2}


async def test_a_target_s_first_full_push_leaves_nothing_out_and_later_ones_skip() -> None:
    a = FakeTarget("a", "team-a")
    async with running() as service:
        connected(service, a)
        for method in ("DELETE", "PUT", "POST"):
            service.apply(POLICY.replace("DELETE", method))
            await service.settled()
    first, second, third = a.pushed
    assert isinstance(first, FullPush) and first.unchanged == frozenset(), "trusts no skip yet"
    # an AuthorizationPolicy alters listeners alone: the other types stay skipped
    for later in (second, third):
        assert isinstance(later, FullPush)
        assert later.unchanged == unaffected_types(later.request) == {CDS, RDS}
        assert not later.endpoints and not later.resend


async def test_after_the_endpoints_moved_the_next_full_push_skips_nothing() -> None:
    b_host = "b.team-b.svc.cluster.local"
    a = FakeTarget("a", "team-a", hosts=frozenset({b_host}))
    async with running() as service:
        connected(service, a)
        service.pushes.request_push(PushRequest.everything())
        await service.settled()
        service.apply(B_MOVED)  # an endpoint push: EDS of the watched cluster only
        await service.settled()
        service.apply(POLICY)
        await service.settled()
    _, moved, policy = a.pushed
    assert moved == EndpointPush(moved.request, frozenset({f"outbound|80||{b_host}"}), frozenset())
    assert isinstance(policy, FullPush) and policy.unchanged == frozenset()


async def test_a_failing_target_fails_only_itself() -> None:
    a, broken, b = FakeTarget("a", "team-a"), FakeTarget("x", "team-a"), FakeTarget("b", "team-b")
    broken.broken = True
    async with running() as service:
        connected(service, a, broken, b)
        service.apply(A_ROUTES)
        await service.settled()
        assert broken.failure is not None and broken.pushed == []
        assert service.counters.push_failures == 1
        assert (a.failure, b.failure) == (None, None) and len(a.pushed) == len(b.pushed) == 1
        service.apply(A_ROUTES.replace("a-routes", "a-more-routes"))  # the service goes on
        await service.settled()
    assert len(a.pushed) == len(b.pushed) == 2 and broken.pushed == []


async def test_a_disconnected_target_s_pending_push_is_dropped() -> None:
    slow, gone = FakeTarget("slow", "team-a"), FakeTarget("gone", "team-b")
    slow.held = asyncio.get_running_loop().create_future()  # holds the one worker slot
    async with running(throttle=1) as service:
        connected(service, slow, gone)
        service.apply(A_ROUTES)
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while not slow.pushed:
            assert time.monotonic() < deadline, "the change was never pushed"
            await asyncio.sleep(0.001)
        assert service.pushes.pending() == 2  # slow in flight, gone waiting behind it
        service.pushes.disconnect(gone)
        assert service.pushes.pending() == 1
        slow.held.set_result(None)
        await service.settled()
    assert len(slow.pushed) == 1 and gone.pushed == []
    assert gone.id not in service.pushes.connections


@pytest.mark.parametrize(("answer_wait", "pushes"), [(0.0, 2), (30.0, 1)])
async def test_the_next_push_waits_for_the_proxy_s_answer_unless_answer_wait_is_0(
    answer_wait: float, pushes: int
) -> None:
    """PILOTHOUSE_XDS_ANSWER_WAIT: with 30 s, a proxy that has not answered its last push
    is not pushed again meanwhile; with 0, it is pushed as soon as the change comes."""
    a = FakeTarget("a", "team-a")
    a.unanswered = asyncio.get_running_loop().create_future()  # the proxy never answers
    async with running(answer_wait=answer_wait) as service:
        connected(service, a)
        service.apply(POLICY)
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while not a.pushed:
            assert time.monotonic() < deadline, "the first change was never pushed"
            await asyncio.sleep(0.005)
        service.apply(POLICY.replace("DELETE", "PUT"))
        deadline = time.monotonic() + 0.5  # well inside the workers' own 1 s default
        while len(a.pushed) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
    assert len(a.pushed) == pushes
