"""The plan of a full push: made once per request and shared, still per connection's state.

:class:`ProxyPushRules` plans what each connection is sent. A full push's plan depends
on the request and on whether the connection is settled (its last full push saw the
endpoints as they are); these check that the connections one request is queued for
share its plans, and that a connection's own state still decides which one it gets.
"""

from __future__ import annotations

from dataclasses import dataclass

from pilothouse.config.model import ConfigKey
from pilothouse.protocol.type_urls import EDS
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.push.proxy_push import FullPush, ProxyPushRules
from pilothouse.push.request import PushRequest

RULE = ConfigKey("DestinationRule", "ns", "a")
ENTRY = ConfigKey("WorkloadEntry", "ns", "a-1")


@dataclass(frozen=True)
class Watcher:
    """A connection as the rules read it (no stream: the rules read nothing else)."""

    name: str

    @property
    def proxy(self) -> ProxyIdentity:
        return parse_node(f"sidecar~10.0.0.1~{self.name}.ns~ns.svc.cluster.local", {})

    def watches_hosts(self, hostnames: frozenset[str]) -> frozenset[str]:
        return frozenset()


def test_connections_of_one_request_share_its_plan_and_a_first_push_trusts_no_mark() -> None:
    revision = [1]
    rules: ProxyPushRules[Watcher] = ProxyPushRules(lambda: revision[0])
    a, b = Watcher("a"), Watcher("b")
    first = PushRequest.for_configs([RULE])
    assert rules.plan(a, first) is rules.plan(b, first)  # both unsettled: the same plan

    inert = PushRequest(
        full=True, configs_updated=frozenset({ENTRY}), inert=frozenset({(EDS, ENTRY)})
    )
    settled_a = rules.plan(a, inert)
    assert isinstance(settled_a, FullPush) and not settled_a.endpoints
    assert rules.plan(b, inert) is settled_a
    revision[0] = 2  # the endpoints moved: the next full push is a first again
    unsettled = rules.plan(a, inert)
    assert isinstance(unsettled, FullPush) and unsettled.endpoints and not unsettled.unchanged
    assert rules.plan(a, inert) is settled_a  # settled once more, same request, same plan

    again = PushRequest.for_configs([RULE])  # equal, but another request
    planned = rules.plan(b, again)
    assert isinstance(planned, FullPush) and planned.request is again


def test_requests_of_interleaved_scopes_each_keep_their_plans() -> None:
    """A push queues one request per scope; their connections come off the queue
    interleaved, and each request's plans are made once, not once per connection."""
    rules: ProxyPushRules[Watcher] = ProxyPushRules(lambda: 1)
    scopes = [PushRequest.for_configs([RULE]) for _ in range(3)]
    watchers = [Watcher(f"w{i}") for i in range(12)]
    plans = [rules.plan(w, scopes[i % 3]) for i, w in enumerate(watchers)]
    for i, planned in enumerate(plans):
        assert isinstance(planned, FullPush) and planned.request is scopes[i % 3]
        assert planned is plans[i % 3]  # the same scope's plan, made once
    settled = [rules.plan(w, scopes[i % 3]) for i, w in enumerate(watchers)]
    assert all(s is settled[i % 3] for i, s in enumerate(settled))
    assert settled[0] is not plans[0]  # each connection's own state still decides
