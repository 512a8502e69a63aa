"""A type a full push leaves out is one the change cannot alter: the skip table is exact.

A full push does not regenerate CDS, LDS or RDS when every changed kind is one that type
does not read (:data:`pilothouse.push.affected_types.UNAFFECTED_BY`). A wrong row would
leave a proxy holding stale resources, so this test checks every row against the
generators themselves: a running :class:`DiscoveryServer` (its own push path: store
events, registry, debouncer, PushContext reuse, cache eviction) takes random edits of
every kind, and around each edit every proxy's resources of every type are generated as
a connection generates them. For each type that the pushes the edit caused would skip,
what every proxy (sidecars in three namespaces, one with a selecting Sidecar, one that
captures traffic, an ingress gateway, a proxyless gRPC client, proxies with a proved
identity) is given after the edit must be byte for byte what it was given before.

The edits come from the warm-equals-cold fuzz's strategies, plus AuthorizationPolicy
changes (the strategies only delete those).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from pilothouse.config.model import Config
from pilothouse.protocol.type_urls import CDS, LDS, RDS
from pilothouse.push.affected_types import UNAFFECTED_BY, unaffected_types
from pilothouse.push.pipeline import PushPlan
from pilothouse.push.request import PushRequest
from pilothouse.xds.server.connection import Connection
from tests.fuzz.mesh_edits import APPS, NAMESPACES, Apply, Edit, configs, edits, load_one
from tests.fuzz.test_warm_equals_cold import (
    SETTLE_TIMEOUT,
    WILDCARD,
    Snapshot,
    budget,
    example_mesh,
    generate,
    settled,
    start_server,
)

CHECKED = (CDS, LDS, RDS)


@st.composite
def authorization_policies(draw: st.DrawFn) -> Config:
    """An AuthorizationPolicy selecting one app (or a whole namespace), DENY or ALLOW."""
    namespace = draw(st.sampled_from(NAMESPACES))
    name = draw(st.sampled_from(("reviews-read-only", "p1")))
    action = draw(st.sampled_from(("DENY", "ALLOW")))
    method = draw(st.sampled_from(("GET", "DELETE", "POST")))
    selector = draw(st.one_of(st.none(), st.sampled_from(APPS)))
    lines = [
        "apiVersion: security.istio.io/v1",
        "kind: AuthorizationPolicy",
        f"metadata: {{name: {name}, namespace: {namespace}}}",
        "spec:",
        f"  action: {action}",
    ]
    if selector is not None:
        lines.append(f"  selector: {{matchLabels: {{app: {selector}}}}}")
    lines += ["  rules:", f"  - to: [{{operation: {{methods: [{method}]}}}}]"]
    return load_one("\n".join(lines) + "\n")


def _changed_though_skipped(
    before: Snapshot, after: Snapshot, skipped: frozenset[str]
) -> list[str]:
    """The (proxy, type) pairs of a skipped type whose resources the edit changed."""
    wrong = []
    for (proxy, type_url, watch), resources in after.items():
        if type_url not in skipped or watch != WILDCARD:
            continue
        if before[proxy, type_url, watch] != resources:
            wrong.append(f"{proxy} {type_url.rsplit('.', 1)[-1]}")
    return wrong


async def _check(
    initial: tuple[Config, ...], draw: Callable[[tuple[object, ...]], Edit], count: int = 6
) -> int:
    """Apply ``count`` drawn edits one at a time; return how many skipped a type."""
    server, store = start_server(initial)
    planned: list[PushRequest] = []
    pipeline = server._pipeline  # the test's look inside: which requests were planned
    plan = pipeline.plan

    def recording(request: PushRequest) -> PushPlan[Connection] | None:
        made = plan(request)
        if made is not None:
            planned.append(made.request)
        return made

    pipeline.plan = recording  # type: ignore[method-assign]
    running = asyncio.create_task(server.run())
    skipping = 0
    try:
        await asyncio.wait_for(server.wait_ready(), SETTLE_TIMEOUT)
        await settled(server)
        for _ in range(count):
            before = generate(server)
            planned.clear()
            edit = draw(tuple(store.keys()))
            if isinstance(edit, Apply):
                store.apply(edit.config)
            else:
                store.delete(edit.key)
            await settled(server)
            after = generate(server)
            full = [r for r in planned if r.full]
            if not full:
                continue
            # a type is left alone only if every full push since `before` skipped it
            skipped = frozenset(CHECKED)
            for request in full:
                skipped &= unaffected_types(request)
            if skipped:
                skipping += 1
            wrong = _changed_though_skipped(before, after, skipped)
            kinds = sorted(set().union(*(r.kinds() for r in full)))
            assert not wrong, f"{edit!r} (kinds {kinds}) skips types it changes: {wrong}"
    finally:
        server.close()
        await asyncio.wait_for(running, SETTLE_TIMEOUT)
    return skipping


def _drawer(data: st.DataObject) -> Callable[[tuple[object, ...]], Edit]:
    def draw(held: tuple[object, ...]) -> Edit:
        if data.draw(st.integers(0, 3)) == 0:
            return Apply(data.draw(authorization_policies()))
        return data.draw(edits(held))  # type: ignore[arg-type]

    return draw


@budget()
@given(data=st.data())
def test_edits_to_the_example_mesh_never_change_a_type_the_push_skips(
    data: st.DataObject,
) -> None:
    asyncio.run(_check(example_mesh(), _drawer(data)))


@budget()
@given(initial=st.lists(configs(), min_size=2, max_size=10), data=st.data())
def test_edits_to_a_generated_mesh_never_change_a_type_the_push_skips(
    initial: list[Config], data: st.DataObject
) -> None:
    asyncio.run(_check(tuple(initial), _drawer(data)))


TCP_GATEWAY = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: tcp-gateway, namespace: bookinfo}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 9443, name: tcp, protocol: TCP}
    bind: 127.0.0.1
    hosts: ["*"]
"""
HTTP_GATEWAY = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: bookinfo-gateway, namespace: bookinfo}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 8080, name: http, protocol: HTTP}
    bind: 127.0.0.1
    hosts: ["*"]
  - port: {number: 8081, name: http-2, protocol: HTTP}
    bind: 127.0.0.1
    hosts: ["*"]
"""
LEAST_REQUEST = """\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: productpage, namespace: bookinfo}
spec:
  host: productpage.bookinfo.svc.cluster.local
  trafficPolicy:
    loadBalancer: {simple: LEAST_REQUEST}
"""


def _tcp_route(host: str) -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: tcp-route, namespace: bookinfo}}
spec:
  hosts: ["*"]
  gateways: [tcp-gateway]
  tcp:
  - match: [{{port: 9443}}]
    route: [{{destination: {{host: {host}.bookinfo.svc.cluster.local, port: {{number: 9080}}}}}}]
"""


def _peer_authentication(mode: str) -> str:
    return f"""\
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {{name: default, namespace: bookinfo}}
spec: {{mtls: {{mode: {mode}}}}}
"""


def _hash_cookie(name: str) -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: productpage, namespace: bookinfo}}
spec:
  host: productpage.bookinfo.svc.cluster.local
  trafficPolicy:
    loadBalancer:
      consistentHash:
        httpCookie: {{name: {name}, ttl: 0s}}
"""


def _authorization(action: str) -> str:
    return f"""\
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {{name: reviews-read-only, namespace: bookinfo}}
spec:
  selector: {{matchLabels: {{app: reviews}}}}
  action: {action}
  rules:
  - to: [{{operation: {{methods: [DELETE]}}}}]
"""


HISTORY = (
    # each of these changes what some proxy is given, in a type of its kind's row
    TCP_GATEWAY,  # a gateway's listeners, not its clusters
    _tcp_route("reviews"),  # a gateway's TCP listener, not its clusters
    _tcp_route("ratings"),
    HTTP_GATEWAY,  # a second HTTP server: a listener and a route, not a cluster
    _peer_authentication("STRICT"),  # inbound listeners and auto-mTLS clusters, not routes
    _peer_authentication("DISABLE"),
    _hash_cookie("session-2"),  # route hash policies, not listeners
    LEAST_REQUEST,  # clusters' load balancing and routes' hash policies, not listeners
    _authorization("ALLOW"),  # a workload's listeners only
    _authorization("DENY"),
)


def test_a_change_of_every_kind_the_table_names_skips_only_what_it_cannot_change() -> None:
    """A fixed history through every kind a row names (AuthorizationPolicy,
    DestinationRule, Gateway, PeerAuthentication, VirtualService), each edit one that
    changes the types beside those its kind skips; each must skip at least one type,
    and change none it skips."""
    history = [Apply(load_one(text)) for text in HISTORY]
    named = set().union(*UNAFFECTED_BY.values()) - {"RequestAuthentication"}
    assert {edit.config.kind for edit in history} == named
    queue = iter(history)
    skipping = asyncio.run(_check(example_mesh(), lambda _held: next(queue), len(history)))
    assert skipping == len(history)
