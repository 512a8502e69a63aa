"""Hypothesis state machine: random SotW request sequences against ``SotwSession``.

A server model answers with ``plan_sotw`` and pushes resource changes; a client
sends fresh requests, ACKs of the latest response (with changed names), stale
ACKs and NACKs.  Invariants: a stale nonce is never answered, NACKed content is
never sent again unchanged, versions per type only increase, and the node never
changes after the first one.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pilothouse.protocol.request_bytes import names_fingerprint, type_url_field
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS, is_wildcard_type
from pilothouse.xds.protocol.sotw import SotwKind, SotwSession
from pilothouse.xds.protocol.sotw_watch import plan_sotw
from pilothouse.xds.protocol.versions import (
    NonceSource,
    PushVersions,
    VersionRegression,
    version_ordinal,
)

from .discovery import sotw_request, watch_state

TYPES = (CDS, EDS, LDS, RDS)
types = st.sampled_from(TYPES)
name_lists = st.lists(st.sampled_from(("a", "b", "c", "*")), max_size=3)
nodes = st.one_of(st.none(), st.sampled_from(("node-1", "node-2", "node-3")))


class SotwMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.session = SotwSession()
        self.now = 0.0
        self.versions = PushVersions(wall_clock=lambda: self.now)
        self.nonces = NonceSource(token="n")
        self.resources: dict[str, dict[str, str]] = {t: {} for t in TYPES}
        self.sent: dict[str, list[tuple[str, str, dict[str, str]]]] = {t: [] for t in TYPES}
        self.rejected: dict[str, dict[str, str] | None] = dict.fromkeys(TYPES)
        self.first_node: str | None = None
        self.expired: dict[str, int] = {}
        self.rejects: dict[str, int] = {}
        self.fingerprinted = False
        """Whether requests come with their names' fingerprint, as the server's parser
        gives it (toggled by a rule: sequences mix both)."""

    # -- plumbing --------------------------------------------------------------

    def receive(self, type_url: str, names: list[str], nonce: str, node: str | None,
                error: str | None = None) -> SotwKind:
        self.now += 1.0
        if self.first_node is None and node is not None:
            self.first_node = node
        version = self.sent[type_url][-1][0] if nonce and self.sent[type_url] else ""
        request = sotw_request(type_url, names, nonce=nonce, version=version, error=error,
                               node_id=node)
        watch_before = self.session.watch(type_url)
        subscription_before = None if watch_before is None else watch_before.subscription
        names_key = None
        if self.fingerprinted:
            body = request.SerializeToString()
            names_key = names_fingerprint(body, type_url_field(type_url))
        decision = self.session.receive(request, self.now, names_key)
        if decision.kind is SotwKind.UNSUBSCRIBE:
            self.rejected[type_url] = None
        if decision.kind is SotwKind.ACK:
            self.rejected[type_url] = None
        if (
            decision.kind is SotwKind.ACK
            and not decision.always_respond
            and subscription_before is not None
            and decision.subscription == subscription_before
        ):
            assert not decision.respond, "unchanged ACK answered"
        if decision.respond:
            watch = self.session.watch(type_url)
            assert watch is not None
            plan = plan_sotw(watch, self.resources[type_url], answering=True)
            if plan is not None:
                self.send(type_url, dict(plan.resources))
        return decision.kind

    def send(self, type_url: str, content: dict[str, str]) -> None:
        rejected = self.rejected[type_url]
        assert rejected is None or content != rejected, "NACKed content sent again unchanged"
        version = self.versions.next()
        nonce = self.nonces.next(version)
        self.session.record_sent(type_url, version, nonce, content, self.now)
        self.sent[type_url].append((version, nonce, content))

    # -- client ----------------------------------------------------------------

    @rule()
    def toggle_fingerprints(self) -> None:
        self.fingerprinted = not self.fingerprinted

    @rule(type_url=types, names=name_lists, node=nodes)
    def fresh_request(self, type_url: str, names: list[str], node: str | None) -> None:
        kind = self.receive(type_url, names, "", node)
        if not names and not is_wildcard_type(type_url):
            assert kind is SotwKind.UNSUBSCRIBE
        else:
            assert kind in (SotwKind.INIT, SotwKind.RECONNECT)

    @precondition(lambda self: any(self.sent.values()))
    @rule(type_url=types, names=name_lists, node=nodes)
    def ack_latest(self, type_url: str, names: list[str], node: str | None) -> None:
        if not self.sent[type_url]:
            return
        watch = self.session.watch(type_url)
        kind = self.receive(type_url, names, self.sent[type_url][-1][1], node)
        if not names and not is_wildcard_type(type_url):
            assert kind is SotwKind.UNSUBSCRIBE
        elif watch is None:
            assert kind is SotwKind.RECONNECT
        else:
            assert kind in (SotwKind.ACK, SotwKind.UPDATE)

    @precondition(lambda self: any(len(s) >= 2 for s in self.sent.values()))
    @rule(type_url=types, names=name_lists, data=st.data(), nack=st.booleans())
    def stale(self, type_url: str, names: list[str], data: st.DataObject, nack: bool) -> None:
        watch = self.session.watch(type_url)
        sent = self.sent[type_url]
        if watch is None or len(sent) < 2 or (not names and not is_wildcard_type(type_url)):
            return
        old = data.draw(st.sampled_from([nonce for _, nonce, _ in sent[:-1]]))
        count = len(self.sent[type_url])
        before = watch_state(watch)
        kind = self.receive(type_url, names, old, None, "late" if nack else None)
        if nack:
            assert kind is SotwKind.NACK
            self.rejects[type_url] = self.rejects.get(type_url, 0) + 1
        else:
            assert kind is SotwKind.STALE
            self.expired[type_url] = self.expired.get(type_url, 0) + 1
            assert watch_state(self.session.watch(type_url)) == before
        assert len(self.sent[type_url]) == count, "stale nonce answered"

    @precondition(lambda self: any(self.sent.values()))
    @rule(type_url=types)
    def nack_latest(self, type_url: str) -> None:
        watch = self.session.watch(type_url)
        if not self.sent[type_url] or watch is None:
            return
        _, nonce, content = self.sent[type_url][-1]
        count = len(self.sent[type_url])
        names = sorted(watch.subscription.names) or ([] if watch.subscription.wildcard else ["a"])
        kind = self.receive(type_url, names, nonce, None, "rejected")
        assert kind is SotwKind.NACK
        assert len(self.sent[type_url]) == count, "NACK answered"
        self.rejects[type_url] = self.rejects.get(type_url, 0) + 1
        if watch.nonce_sent == nonce:
            self.rejected[type_url] = content

    # -- server ----------------------------------------------------------------

    @rule(type_url=types, name=st.sampled_from(("a", "b", "c")),
          content=st.sampled_from(("h1", "h2", "h3", None)))
    def change_resource(self, type_url: str, name: str, content: str | None) -> None:
        if content is None:
            self.resources[type_url].pop(name, None)
        else:
            self.resources[type_url][name] = content

    @rule(type_url=types)
    def push(self, type_url: str) -> None:
        watch = self.session.watch(type_url)
        if watch is None:
            return
        plan = plan_sotw(watch, self.resources[type_url], answering=False)
        if plan is not None:
            self.send(type_url, dict(plan.resources))

    @precondition(lambda self: any(self.sent.values()))
    @rule(type_url=types)
    def send_older_version_refused(self, type_url: str) -> None:
        watch = self.session.watch(type_url)
        ordinal = version_ordinal(watch.version_sent) if watch is not None else None
        if watch is None or not ordinal:
            return
        older = f"old/{ordinal - 1}"
        nonce = self.nonces.next(older)
        before = watch_state(watch)
        with pytest.raises(VersionRegression):
            self.session.record_sent(type_url, older, nonce, {}, self.now)
        assert watch_state(self.session.watch(type_url)) == before

    # -- invariants ------------------------------------------------------------

    @invariant()
    def node_never_changes(self) -> None:
        node = self.session.node
        assert (node.id if node is not None else None) == self.first_node

    @invariant()
    def versions_only_increase(self) -> None:
        for type_url, sent in self.sent.items():
            ordinals = [version_ordinal(v) for v, _, _ in sent]
            assert ordinals == sorted(ordinals)
            watch = self.session.watch(type_url)
            if watch is not None and watch.version_sent:
                assert watch.version_sent == sent[-1][0]

    @invariant()
    def held_names_point_at_their_latest_response(self) -> None:
        for type_url, sent in self.sent.items():
            watch = self.session.watch(type_url)
            if watch is None or watch.carriers is None:
                continue
            latest = {name: nonce for _, nonce, content in sent for name in content}
            for name, nonce in watch.carriers.items():
                assert latest[name] == nonce
                assert watch.versions is not None
                assert watch.versions[name] == watch.responses[nonce].content[name]
            kept = set(watch.carriers.values()) | ({watch.nonce_sent} - {""})
            assert set(watch.responses) == kept, "a response kept with no name, or lost"
            if not watch.strays and not watch.subscription.wildcard:
                assert watch.carriers.keys() <= watch.subscription.names

    @invariant()
    def counters_match(self) -> None:
        assert dict(self.session.expired_nonces) == self.expired
        assert dict(self.session.rejects) == self.rejects


SotwMachine.TestCase.settings = settings(
    max_examples=200, deadline=None, stateful_step_count=40,
    suppress_health_check=[HealthCheck.too_slow],
)
test_sotw_session_machine = SotwMachine.TestCase
