"""Hypothesis state machine: an Envoy-like delta client against ``DeltaSession``.

The client keeps its own subscription and holdings, processes responses in order
and ACKs or NACKs each; it subscribes and unsubscribes (sometimes with a stale
nonce) and reconnects with ``initial_resource_versions``.  The server answers with
``plan_delta`` and pushes resource changes.  Invariants: what the client holds
equals what the server believes after ACKs; NACKed content is not resent
unchanged; every newly subscribed name is answered; the node never changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pilothouse.protocol.type_urls import CDS, EDS, is_wildcard_type
from pilothouse.xds.protocol.delta import DeltaDecision, DeltaKind, DeltaSession
from pilothouse.xds.protocol.delta_plan import plan_delta
from pilothouse.xds.protocol.versions import NonceSource, PushVersions

from .discovery import delta_request

TYPES = (CDS, EDS)
NAMES = ("a", "b", "c", "d")
types = st.sampled_from(TYPES)
name_sets = st.lists(st.sampled_from(NAMES), max_size=3, unique=True)
nodes = st.one_of(st.none(), st.sampled_from(("node-1", "node-2")))


@dataclass
class Response:
    nonce: str
    resources: dict[str, str]
    removed: frozenset[str]


@dataclass
class ClientType:
    """What the simulated client knows about one type."""

    started: bool = False
    wildcard: bool = False
    names: set[str] = field(default_factory=set)
    holds: dict[str, str] = field(default_factory=dict)
    queue: list[Response] = field(default_factory=list)
    processed: list[str] = field(default_factory=list)

    def covers(self, name: str) -> bool:
        return self.wildcard or name in self.names

    def forget_uncovered(self) -> None:
        self.holds = {n: v for n, v in self.holds.items() if self.covers(n)}


class DeltaMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.session = DeltaSession()
        self.client = {t: ClientType() for t in TYPES}
        self.available: dict[str, dict[str, str]] = {t: {} for t in TYPES}
        self.units: dict[str, list[dict[str, str]]] = {t: [] for t in TYPES}
        self.now = 0.0
        self.nonces = NonceSource(token="d")
        self.versions = PushVersions(wall_clock=lambda: self.now)
        self.first_node: str | None = None

    # -- plumbing --------------------------------------------------------------

    def receive(self, type_url: str, subscribe: list[str], unsubscribe: list[str],
                nonce: str = "", error: str | None = None, node: str | None = None,
                initial: dict[str, str] | None = None) -> DeltaDecision:
        self.now += 1.0
        if self.first_node is None and node is not None:
            self.first_node = node
        request = delta_request(type_url, subscribe, unsubscribe, nonce=nonce, error=error,
                                node_id=node, initial=initial)
        decision = self.session.receive(request, self.now)
        if decision.respond:
            watch = self.session.watch(type_url)
            assert watch is not None
            plan = plan_delta(watch, self.available[type_url], decision)
            initial_request = decision.kind in (DeltaKind.INIT, DeltaKind.RECONNECT)
            if not plan.empty or initial_request:
                self.send(type_url, dict(plan.resources), plan.removed)
        return decision

    def send(self, type_url: str, resources: dict[str, str], removed: frozenset[str]) -> None:
        for unit in self.units[type_url]:
            live = all(self.available[type_url].get(n) == v for n, v in unit.items())
            resent = {n for n, v in resources.items() if unit.get(n) == v}
            assert not (live and resent), f"NACKed content {resent} sent again unchanged"
        self.units[type_url] = [
            u
            for u in self.units[type_url]
            if not any(n in removed or (n in resources and resources[n] != v)
                       for n, v in u.items())
        ]
        version = self.versions.next()
        nonce = self.nonces.next(version)
        self.session.record_sent(type_url, nonce, resources, removed, self.now, version)
        self.client[type_url].queue.append(Response(nonce, resources, removed))

    def last_response(self, type_url: str) -> Response | None:
        queue = self.client[type_url].queue
        return queue[-1] if queue else None

    # -- client ----------------------------------------------------------------

    @rule(type_url=types, names=name_sets, star=st.booleans(), node=nodes)
    def subscribe(self, type_url: str, names: list[str], star: bool, node: str | None) -> None:
        client = self.client[type_url]
        subscribe = [*names, "*"] if star else names
        if not client.started:
            client.started = True
            client.wildcard = star or (not names and is_wildcard_type(type_url))
        else:
            client.wildcard = client.wildcard or star
        client.names |= set(names)
        before = len(client.queue)
        decision = self.receive(type_url, subscribe, [], node=node)
        assert decision.respond or not names
        response = self.last_response(type_url) if len(client.queue) > before else None
        withheld = self.session.watch(type_url)
        assert withheld is not None
        held_back = withheld.withheld(self.available[type_url])
        for name in names:
            if name in held_back:
                continue
            assert response is not None, f"subscription to {name} not answered"
            if name in self.available[type_url]:
                assert response.resources.get(name) == self.available[type_url][name]
            else:
                assert name in response.removed

    @precondition(lambda self: any(c.started for c in self.client.values()))
    @rule(type_url=types, names=name_sets, star=st.booleans(), stale=st.booleans())
    def unsubscribe(self, type_url: str, names: list[str], star: bool, stale: bool) -> None:
        client = self.client[type_url]
        if not client.started:
            return
        nonce = ""
        if stale:
            if not client.processed:
                return
            nonce = client.processed[-1]
        unsubscribe = [*names, "*"] if star else names
        covered_before = {n for n in names if n in client.names}
        client.names -= set(names)
        if star:
            client.wildcard = False
        client.forget_uncovered()
        decision = self.receive(type_url, [], unsubscribe, nonce=nonce)
        assert decision.kind is (DeltaKind.STALE if stale else DeltaKind.SUBSCRIPTION)
        if not client.wildcard:
            assert not decision.respond or decision.always_respond, "pure unsubscribe answered"
        else:
            assert decision.resend >= covered_before

    @precondition(lambda self: any(c.queue for c in self.client.values()))
    @rule(type_url=types, ack=st.booleans())
    def process_response(self, type_url: str, ack: bool) -> None:
        client = self.client[type_url]
        if not client.queue:
            return
        response = client.queue.pop(0)
        client.processed.append(response.nonce)
        if ack:
            for name, version in response.resources.items():
                if client.covers(name):
                    client.holds[name] = version
            for name in response.removed:
                client.holds.pop(name, None)
            decision = self.receive(type_url, [], [], nonce=response.nonce)
            assert decision.kind is DeltaKind.ACK
        else:
            if response.resources:
                self.units[type_url].append(dict(response.resources))
            decision = self.receive(type_url, [], [], nonce=response.nonce, error="rejected")
            assert decision.kind is DeltaKind.NACK
            assert not decision.respond

    @precondition(lambda self: any(c.processed for c in self.client.values()))
    @rule(type_url=types)
    def repeat_old_ack(self, type_url: str) -> None:
        client = self.client[type_url]
        if not client.processed:
            return
        expired = self.session.expired_nonces.get(type_url, 0)
        decision = self.receive(type_url, [], [], nonce=client.processed[-1])
        assert decision.kind is DeltaKind.STALE and not decision.respond
        assert self.session.expired_nonces[type_url] == expired + 1

    @rule(node=nodes)
    def reconnect(self, node: str | None) -> None:
        self.session = DeltaSession()
        self.first_node = None
        self.units = {t: [] for t in TYPES}  # NACK history is per stream
        for type_url, client in self.client.items():
            client.queue.clear()
            client.processed.clear()
            if not client.started:
                continue
            subscribe = sorted(client.names) + (["*"] if client.wildcard else [])
            if not subscribe and is_wildcard_type(type_url):
                client.started = False  # an empty first request would mean wildcard
                client.holds.clear()
                continue
            client.started = True
            decision = self.receive(type_url, subscribe, [], node=node,
                                    initial=dict(client.holds))
            assert decision.kind is (DeltaKind.RECONNECT if client.holds else DeltaKind.INIT)

    # -- server ----------------------------------------------------------------

    @rule(type_url=types, name=st.sampled_from(NAMES),
          version=st.sampled_from(("h1", "h2", "h3", None)))
    def change_resource(self, type_url: str, name: str, version: str | None) -> None:
        if version is None:
            self.available[type_url].pop(name, None)
        else:
            self.available[type_url][name] = version

    @rule(type_url=types, limit=st.one_of(st.none(), name_sets))
    def push(self, type_url: str, limit: list[str] | None) -> None:
        watch = self.session.watch(type_url)
        if watch is None:
            return
        plan = plan_delta(watch, self.available[type_url], changed=limit)
        if not plan.empty:
            self.send(type_url, dict(plan.resources), plan.removed)

    # -- invariants ------------------------------------------------------------

    @invariant()
    def client_holds_what_server_believes(self) -> None:
        for type_url, client in self.client.items():
            watch = self.session.watch(type_url)
            if watch is None:
                assert client.holds == {}
                continue
            assert dict(watch.confirmed) == client.holds
            if not client.queue:
                assert dict(watch.held) == client.holds
            assert [r.nonce for r in watch.in_flight] == [r.nonce for r in client.queue]

    @invariant()
    def node_never_changes(self) -> None:
        node = self.session.node
        assert (node.id if node is not None else None) == self.first_node


DeltaMachine.TestCase.settings = settings(
    max_examples=200, deadline=None, stateful_step_count=40,
    suppress_health_check=[HealthCheck.too_slow],
)
test_delta_session_machine = DeltaMachine.TestCase
