"""The push pipeline in isolation: changes in, ``(connection, PushRequest)`` pairs out.

Fake connections implement :class:`~pilothouse.push.target.ProxyWatches`; the store,
the registry and the PushContext are real.
"""

from __future__ import annotations

import itertools

import pytest

import pilothouse.push.pipeline as pipeline_module
from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings, OutboundPolicy
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds.table import SCHEMAS
from pilothouse.protocol.type_urls import LDS, RDS
from pilothouse.push.cache import ResourceCache
from pilothouse.push.context import PushContext
from pilothouse.push.pipeline import PushPipeline, PushPlan
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.push.request import PushRequest, TriggerReason
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.registry.update import RegistryUpdate
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.generators.api import watched_kinds

MESH = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: a, namespace: team-a}
spec:
  hosts: [a.team-a.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 80, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.1}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: b, namespace: team-b}
spec:
  hosts: [b.team-b.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 80, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.2}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: team-c}
spec:
  egress: [{hosts: ["./*"]}]
---
"""
A_ROUTES = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: a-routes, namespace: team-a}
spec:
  hosts: [a.team-a.svc.cluster.local]
  http: [{route: [{destination: {host: a.team-a.svc.cluster.local}}]}]
"""
WORKLOAD = """\
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm, namespace: team-b}
spec:
  address: 10.0.0.7
"""
B_HOST = "b.team-b.svc.cluster.local"
VS_TYPE = "networking.istio.io/v1/VirtualService"
WE_TYPE = "networking.istio.io/v1/WorkloadEntry"


class FakeConnection:
    """A connection as the pipeline sees it; ``broken`` makes every question raise."""

    def __init__(
        self,
        connection_id: str,
        proxy: ProxyIdentity,
        types: tuple[str, ...] = (),
        hosts: frozenset[str] = frozenset(),
    ) -> None:
        self.id = connection_id
        self._proxy = proxy
        self._types = types
        self._hosts = hosts
        self.broken = False

    def __repr__(self) -> str:
        return f"FakeConnection({self.id})"

    @property
    def proxy(self) -> ProxyIdentity:
        if self.broken:
            raise RuntimeError(f"{self.id} is broken")
        return self._proxy

    def watched_types(self) -> list[str]:
        if self.broken:
            raise RuntimeError(f"{self.id} is broken")
        return list(self._types)

    def watches_any_host(self, hostnames: frozenset[str]) -> bool:
        if self.broken:
            raise RuntimeError(f"{self.id} is broken")
        return not self._hosts.isdisjoint(hostnames)


def one(text: str) -> Config:
    (config,) = Loader(SCHEMAS).load_strict(text, "test.yaml")
    return config


def sidecar(connection_id: str, ns: str, hosts: frozenset[str] = frozenset()) -> FakeConnection:
    node = parse_node(f"sidecar~10.1.0.1~{connection_id}.{ns}~{ns}.svc.cluster.local")
    return FakeConnection(connection_id, node, hosts=hosts)


def api_client(connection_id: str, ns: str, *types: str) -> FakeConnection:
    node = parse_node(
        f"sidecar~10.1.0.9~{connection_id}.{ns}~{ns}.svc.cluster.local", {"GENERATOR": "api"}
    )
    return FakeConnection(connection_id, node, types=types)


class Stage:
    """A store, a registry and a started pipeline over them."""

    def __init__(self, *connections: FakeConnection) -> None:
        self.store = MemoryStore()
        for config in Loader(SCHEMAS).load_strict(MESH, "mesh.yaml"):
            self.store.apply(config)
        self.store.mark_synced()
        self.registry = ServiceEntryRegistry(self.store, lambda _update: None)
        self.registry.initial_load()
        versions = (f"v{n}" for n in itertools.count(1))
        self.pipeline: PushPipeline[FakeConnection] = PushPipeline(
            self.store,
            self.registry.services,
            MeshSettings(),
            ResourceCache(),
            next_version=lambda: next(versions),
            api_kinds=watched_kinds,
        )
        self.pipeline.start()
        for connection in connections:
            self.pipeline.connect(connection)

    @property
    def context(self) -> PushContext:
        context = self.pipeline.context
        assert context is not None
        return context

    def apply(self, text: str) -> PushRequest | None:
        config = one(text)
        self.store.apply(config)
        return self.pipeline.config_changed(config.key, start=1.0)

    def plan(self, request: PushRequest | None) -> PushPlan[FakeConnection]:
        assert request is not None
        plan = self.pipeline.plan(request)
        assert plan is not None
        return plan


def pushed(plan: PushPlan[FakeConnection]) -> list[str]:
    return [connection.id for connection, _ in plan.pushes]


def test_nothing_is_pushed_before_the_first_context() -> None:
    store = MemoryStore()
    pipeline: PushPipeline[FakeConnection] = PushPipeline(
        store,
        lambda: (),
        MeshSettings(),
        ResourceCache(),
        next_version=lambda: "v1",
        api_kinds=watched_kinds,
    )
    key = ConfigKey("VirtualService", "team-a", "a-routes")
    assert pipeline.config_changed(key, start=1.0) is None
    assert pipeline.plan(PushRequest.everything()) is None


def test_full_push_selects_only_connections_whose_scope_sees_a_changed_key() -> None:
    a, b, c = sidecar("a", "team-a"), sidecar("b", "team-b"), sidecar("c", "team-c")
    stage = Stage(a, b, c)
    before, version = stage.context, stage.pipeline.version
    request = stage.apply(A_ROUTES)
    assert request is not None and request.full
    plan = stage.plan(request)
    assert plan.full and plan.failed == ()
    # team-c's Sidecar sees only its own namespace: the team-a VirtualService is not for it
    assert pushed(plan) == ["a", "b"]
    # the request itself, but for what its scope showed inert (a sidecar's listeners)
    assert all(sent.with_inert(frozenset()) == request for _, sent in plan.pushes)
    assert stage.context is not before and stage.pipeline.version != version


def test_everything_and_forced_pushes_select_every_connection() -> None:
    stage = Stage(sidecar("a", "team-a"), sidecar("c", "team-c"))
    assert pushed(stage.plan(PushRequest.everything())) == ["a", "c"]
    key = ConfigKey("VirtualService", "team-a", "a-routes")
    forced = PushRequest(full=True, configs_updated=frozenset({key}), forced=True)
    assert pushed(stage.plan(forced)) == ["a", "c"]


def test_endpoint_push_takes_the_fast_path_and_selects_watchers_of_changed_hosts() -> None:
    watcher = sidecar("w", "team-a", hosts=frozenset({B_HOST}))
    other = sidecar("o", "team-a", hosts=frozenset({"a.team-a.svc.cluster.local"}))
    stage = Stage(watcher, other)
    before = stage.context
    (service,) = stage.registry.services_by_hostname(B_HOST)
    update = RegistryUpdate(
        False, frozenset({ConfigKey("ServiceEntry", "team-b", "b")}), frozenset({service.key})
    )
    request = stage.pipeline.registry_changed(update, start=2.0)
    assert request is not None and not request.full
    assert dict(request.reasons) == {TriggerReason.ENDPOINT: 1}
    plan = stage.plan(request)
    assert not plan.full and plan.failed == ()
    assert stage.context is before, "the EDS fast path builds no PushContext"
    assert pushed(plan) == ["w"]
    assert plan.pushes[0][1] is request


def test_api_connections_get_the_kinds_they_watch_whatever_their_scope() -> None:
    sees_nothing = sidecar("c", "team-c")
    vs_watcher = api_client("vs", "team-c", VS_TYPE)
    we_watcher = api_client("we", "team-c", WE_TYPE)
    stage = Stage(sees_nothing, vs_watcher, we_watcher)
    # a VirtualService change out of team-c's scope still reaches the client watching them
    assert pushed(stage.plan(stage.apply(A_ROUTES))) == ["vs"]
    # a WorkloadEntry is named for MCP-over-xDS clients, non-full; the api generator
    # answers from the store, so its watcher gets it as a full push
    request = stage.apply(WORKLOAD)
    assert request is not None and not request.full
    plan = stage.plan(request)
    assert [(c.id, sent.full) for c, sent in plan.pushes] == [("we", True)]


def test_registry_kinds_are_not_named_without_api_connections() -> None:
    stage = Stage(sidecar("a", "team-a"))
    assert stage.apply(WORKLOAD) is None


@pytest.mark.parametrize("endpoint", [False, True], ids=["full", "endpoint"])
def test_a_connection_whose_selection_raises_is_reported_and_the_rest_pushed(
    endpoint: bool,
) -> None:
    first = sidecar("first", "team-a", hosts=frozenset({B_HOST}))
    broken = sidecar("broken", "team-a", hosts=frozenset({B_HOST}))
    last = sidecar("last", "team-b", hosts=frozenset({B_HOST}))
    stage = Stage(first, broken, last)
    broken.broken = True
    if endpoint:
        (service,) = stage.registry.services_by_hostname(B_HOST)
        request = PushRequest.for_configs(
            [service.key.config_key], TriggerReason.ENDPOINT, full=False
        )
    else:
        request = stage.apply(A_ROUTES)
    plan = stage.plan(request)
    assert plan.failed == (broken,)
    assert pushed(plan) == ["first", "last"]


def test_a_plan_that_raises_is_merged_into_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    stage = Stage(sidecar("a", "team-a"))
    real = pipeline_module.build_context
    failures = [RuntimeError("boom")]

    def build_failing_once(*args: object, **kwargs: object) -> object:
        if failures:
            raise failures.pop()
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline_module, "build_context", build_failing_once)
    first = stage.apply(A_ROUTES)
    assert first is not None
    with pytest.raises(RuntimeError):
        stage.plan(first)
    # alone, this change (of nothing that exists) would push no one
    second = PushRequest.for_configs([ConfigKey("VirtualService", "team-b", "gone")])
    assert pushed(Stage(sidecar("a", "team-a")).plan(second)) == []
    plan = stage.plan(second)
    assert plan.request == first.merge(second)
    assert [sent.with_inert(frozenset()) for _, sent in plan.pushes] == [first.merge(second)]


def _a_rule(balancer: str, pool: int) -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: a, namespace: team-a}}
spec:
  host: a.team-a.svc.cluster.local
  trafficPolicy:
    loadBalancer: {balancer}
    connectionPool: {{tcp: {{maxConnections: {pool}}}}}
"""


HASH = "{consistentHash: {httpHeaderName: x-user}}"
B_RULE = """\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: b, namespace: team-b}
spec:
  host: b.team-b.svc.cluster.local
  exportTo: ["."]
  trafficPolicy: {connectionPool: {tcp: {maxConnections: 5}}}
"""


def _inert(plan: PushPlan[FakeConnection]) -> dict[str, bool]:
    """Connection id → whether its request marks every changed DestinationRule inert for RDS."""
    return {
        c.id: bool(r.inert) and all((RDS, k) in r.inert for k in r.configs_updated)
        for c, r in plan.pushes
    }


def test_a_rule_edit_marks_rds_inert_only_where_hashing_stayed() -> None:
    a, b = sidecar("a", "team-a"), sidecar("b", "team-b")
    stage = Stage(a, b)
    assert _inert(stage.plan(stage.apply(_a_rule(HASH, 1)))) == {"a": False, "b": False}
    assert _inert(stage.plan(stage.apply(_a_rule(HASH, 2)))) == {"a": True, "b": True}
    assert _inert(stage.plan(stage.apply(_a_rule("{simple: RANDOM}", 2)))) == {
        "a": False,
        "b": False,
    }
    assert _inert(stage.plan(stage.apply(_a_rule("{simple: LEAST_REQUEST}", 3)))) == {
        "a": True,
        "b": True,
    }


def test_a_rule_that_reached_a_context_before_its_request_is_not_compared() -> None:
    """The hashing of rule a changes in the store, and a context is built for rule b's
    request before a's comes (so the connection that sees a but not b is not pushed
    then); a's own request must then push routes, although the contexts on either side
    of it hash alike."""
    a, b = sidecar("a", "team-a"), sidecar("b", "team-b")
    stage = Stage(a, b)
    early = stage.apply(_a_rule(HASH, 1))  # not planned yet
    assert pushed(stage.plan(stage.apply(B_RULE))) == ["b"]
    assert early is not None
    late = stage.apply(_a_rule(HASH, 2))
    assert late is not None
    assert _inert(stage.plan(early.merge(late))) == {"a": False, "b": False}
    # compared again once its request came
    assert _inert(stage.plan(stage.apply(_a_rule(HASH, 3)))) == {"a": True, "b": True}


def test_a_virtual_service_edit_marks_lds_inert_for_sidecars_only() -> None:
    """A sidecar's listeners read no VirtualService; a gateway's do (TCP and TLS routes)."""
    a = sidecar("a", "team-a")
    router = FakeConnection(
        "gw",
        parse_node(
            "router~10.1.0.2~gw-1.team-a~team-a.svc.cluster.local",
            {"LABELS": {"istio": "ingressgateway"}},
        ),
    )
    stage = Stage(a, router)
    plan = stage.plan(stage.apply(A_ROUTES))
    key = ConfigKey("VirtualService", "team-a", "a-routes")
    inert = {c.id: r.inert for c, r in plan.pushes}
    assert inert == {"a": {(LDS, key)}, "gw": frozenset()}


def test_nothing_is_compared_across_a_change_of_the_mesh_settings() -> None:
    a = sidecar("a", "team-a")
    stage = Stage(a)
    stage.plan(stage.apply(_a_rule(HASH, 1)))
    stage.pipeline.set_mesh(MeshSettings(outbound_traffic_policy=OutboundPolicy.REGISTRY_ONLY))
    assert _inert(stage.plan(stage.apply(_a_rule(HASH, 2)))) == {"a": False}
    assert _inert(stage.plan(stage.apply(_a_rule(HASH, 3)))) == {"a": True}
