"""A type a full push leaves out is one the change cannot alter: the skip rules are exact.

A full push does not regenerate CDS, LDS or RDS when every changed kind is one that type
does not read (:data:`pilothouse.push.affected_types.UNAFFECTED_BY`), nor RDS for a
connection whose routes read the same of the changed DestinationRules in the old and the
new push context (``affected_types.inert_for_scope``). A wrong rule would leave a proxy
holding stale resources, so this test checks the rules against the generators
themselves: a running :class:`DiscoveryServer` (its own push path: store events,
registry, debouncer, PushContext reuse, cache eviction, the pipeline's scoping and
per-scope requests, the push queue's merging) takes random edits of every kind, and
around each edit every proxy's resources of every type are generated as a connection
generates them. Each proxy (sidecars in three namespaces, one with a selecting Sidecar,
one that captures traffic, an ingress gateway, a proxyless gRPC client, proxies with a
proved identity) is connected to the push service through a :class:`Recorder`, a
stand-in for its connection that keeps the requests of the pushes it is handed (the
server's own Connection needs a stream; the service's rules apply
:func:`unaffected_types` to the same requests). For each type that the full pushes a
proxy was handed all skip, what the proxy is given after the edit must be byte for byte
what it was given before.

The edits come from the warm-equals-cold fuzz's strategies, plus AuthorizationPolicy
changes (the strategies only delete those) and DestinationRule edits around consistent
hashing (the load balancer at the top level, in a subset or for a port; hashing on a
header, a cookie or the source IP; or no hashing, beside connection pool and outlier
changes that routes do not read).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from pilothouse.config.model import Config, ConfigKey
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.affected_types import UNAFFECTED_BY, moves_endpoints, unaffected_types
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.proxy_push import ProxyPush
from pilothouse.push.request import PushRequest
from tests.fuzz.mesh_edits import APPS, NAMESPACES, Apply, Delete, Edit, configs, edits, load_one
from tests.fuzz.test_warm_equals_cold import (
    PROXIES,
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
EDS_BY_NAME = "CDS names"
"""The snapshot's EDS watch of the clusters CDS sent (test_warm_equals_cold.generate)."""


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


@st.composite
def hashing_rules(draw: st.DrawFn) -> Config:
    """A DestinationRule for a bookinfo service whose load balancing may hash: where the
    balancer sits and what it hashes on vary, and so do parts routes never read and the
    subsets' labels (what endpoint assignments read)."""
    service = draw(st.sampled_from(("productpage", "reviews", "ratings")))
    balancer = draw(
        st.sampled_from(
            (
                None,
                "{simple: ROUND_ROBIN}",
                "{simple: LEAST_REQUEST}",
                "{consistentHash: {httpHeaderName: x-user}}",
                "{consistentHash: {httpHeaderName: x-session}}",
                "{consistentHash: {httpCookie: {name: session, ttl: 0s}}}",
                "{consistentHash: {useSourceIp: true}}",
            )
        )
    )
    where = draw(st.sampled_from(("top", "subset", "port")))
    limit = draw(st.integers(min_value=1, max_value=3))
    ejections = draw(st.sampled_from((None, 5, 7)))
    subsets = draw(st.sampled_from(((), ("v1",), ("v1", "v2"))))
    lines = [
        "apiVersion: networking.istio.io/v1",
        "kind: DestinationRule",
        f"metadata: {{name: {service}, namespace: bookinfo}}",
        "spec:",
        f"  host: {service}.bookinfo.svc.cluster.local",
        "  trafficPolicy:",
        f"    connectionPool: {{tcp: {{maxConnections: {limit}}}}}",
    ]
    if ejections is not None:
        lines.append(f"    outlierDetection: {{consecutive5xxErrors: {ejections}}}")
    if balancer is not None and where == "top":
        lines.append(f"    loadBalancer: {balancer}")
    if balancer is not None and where == "port":
        lines.append(
            f"    portLevelSettings: [{{port: {{number: 9080}}, loadBalancer: {balancer}}}]"
        )
    if balancer is not None and where == "subset" and not subsets:
        subsets = ("v1",)
    if subsets:
        lines.append("  subsets:")
        for position, subset in enumerate(subsets):
            version = draw(st.sampled_from(("v1", "v2", "v3")))  # may change under the name
            entry = f"  - {{name: {subset}, labels: {{version: {version}}}"
            if balancer is not None and where == "subset" and position == 0:
                entry += f", trafficPolicy: {{loadBalancer: {balancer}}}"
            lines.append(entry + "}")
    return load_one("\n".join(lines) + "\n")


class Recorder:
    """One proxy's connection as the push path sees it, and nothing more: the pipeline
    scopes it, the push queue merges its requests, and the server hands it each one,
    which it keeps (it watches every type by wildcard, no EDS cluster and no secret, so
    only full pushes reach it; nothing is generated or sent)."""

    def __init__(self, proxy: ProxyIdentity) -> None:
        self.proxy = proxy
        self.id = f"recorder-{proxy.id}"
        self.failure: str | None = None
        self.handed: list[PushRequest] = []

    def watched_types(self) -> list[str]:
        return [CDS, EDS, LDS, RDS]

    def watches_any_host(self, hostnames: frozenset[str]) -> bool:
        return True  # so endpoint pushes come too: EDS then counts as pushed

    def watches_secrets(self, names: frozenset[str]) -> bool:
        return False

    def watches_hosts(self, hostnames: frozenset[str]) -> frozenset[str]:
        return frozenset()

    def reidentify(self, proxy: ProxyIdentity) -> None:
        self.proxy = proxy

    def push(self, planned: ProxyPush, now: float) -> None:
        self.handed.append(planned.request)

    def fail(self) -> None:
        self.failure = "failed"

    def when_written(self) -> None:
        return None

    def when_answered(self) -> None:
        return None

    def close(self) -> None:
        pass

    def skipped(self) -> frozenset[str] | None:
        """The types every full push handed since the last look left out, EDS when none
        moved endpoints and no endpoint push came; None when no full push came (whether
        the proxy should have had one is scoping's question, and endpoints reach a
        proxy's own listeners by the next full push: not checked here)."""
        full = [request for request in self.handed if request.full]
        if not full:
            return None
        skipped = frozenset(CHECKED)
        for request in full:
            skipped &= unaffected_types(request)
        if not any(r.configs_updated for r in self.handed if not r.full) and not any(
            moves_endpoints(r) for r in full
        ):
            skipped |= {EDS}
        return skipped


def _changed_though_skipped(
    before: Snapshot, after: Snapshot, proxy: str, skipped: frozenset[str]
) -> list[str]:
    """The types of ``proxy`` the edit changed, among ``skipped``. For EDS, a push that
    moves no endpoints still sends the assignments of the clusters CDS changed, so only
    those of unchanged clusters must be as they were."""
    wrong = [
        type_url.rsplit(".", 1)[-1]
        for type_url in skipped
        if type_url != EDS and before[proxy, type_url, WILDCARD] != after[proxy, type_url, WILDCARD]
    ]
    if EDS in skipped:
        clusters, now = before[proxy, CDS, WILDCARD], after[proxy, CDS, WILDCARD]
        for watch in (EDS_BY_NAME, WILDCARD):
            was, held = before[proxy, EDS, watch], after[proxy, EDS, watch]
            wrong += [
                f"ClusterLoadAssignment {name}"
                for name in sorted(was.keys() & held.keys())
                if was[name] != held[name] and name in now and clusters.get(name) == now[name]
            ]
    return wrong


Skips = dict[str, frozenset[str]]
"""Proxy id → the types its pushes left out, for the proxies an edit pushed."""


async def _check(
    initial: tuple[Config, ...], draw: Callable[[tuple[object, ...]], Edit], count: int = 6
) -> list[Skips]:
    """Apply ``count`` drawn edits one at a time; for each, what each pushed proxy skipped."""
    server, store = start_server(initial)
    recorders = [Recorder(proxy) for proxy in PROXIES]
    running = asyncio.create_task(server.run())
    found: list[Skips] = []
    try:
        await asyncio.wait_for(server.wait_ready(), SETTLE_TIMEOUT)
        for recorder in recorders:
            server.pushes.connect(recorder)  # the test's look inside: no stream needed
        await settled(server)
        for _ in range(count):
            before = generate(server)
            for recorder in recorders:
                recorder.handed.clear()
            edit = draw(tuple(store.keys()))
            if isinstance(edit, Apply):
                store.apply(edit.config)
            else:
                store.delete(edit.key)
            await settled(server)
            after = generate(server)
            skips: Skips = {}
            for recorder in recorders:
                skipped = recorder.skipped()
                if skipped is None:
                    continue
                wrong = _changed_though_skipped(before, after, recorder.proxy.id, skipped)
                kinds = sorted({k.kind for r in recorder.handed for k in r.configs_updated})
                assert not wrong, (
                    f"{edit!r} (kinds {kinds}) skips types it changes for "
                    f"{recorder.proxy.id}: {wrong}"
                )
                skips[recorder.proxy.id] = skipped
            found.append(skips)
    finally:
        server.close()
        await asyncio.wait_for(running, SETTLE_TIMEOUT)
    return found


def _drawer(data: st.DataObject) -> Callable[[tuple[object, ...]], Edit]:
    def draw(held: tuple[object, ...]) -> Edit:
        pick = data.draw(st.integers(0, 5))
        if pick == 0:
            return Apply(data.draw(authorization_policies()))
        if pick == 1:
            return Apply(data.draw(hashing_rules()))
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


WASM_PLUGIN = """\
apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata: {name: add-header, namespace: bookinfo}
spec:
  selector: {matchLabels: {app: reviews}}
  url: file:///nowhere/add_header.wasm
"""


def _telemetry(expression: str) -> str:
    return f"""\
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {{name: reviews-logs, namespace: bookinfo}}
spec:
  selector: {{matchLabels: {{app: reviews}}}}
  accessLogging: [{{providers: [{{name: envoy}}], filter: {{expression: "{expression}"}}}}]
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
    WASM_PLUGIN,  # a workload's listeners (and extension configs) only
    _telemetry("response.code >= 500"),  # the selected workloads' listeners only
    _telemetry("response.code >= 400"),
)


def test_a_change_of_every_kind_the_table_names_skips_only_what_it_cannot_change() -> None:
    """A fixed history through every kind a row names (AuthorizationPolicy,
    DestinationRule, Gateway, PeerAuthentication, VirtualService, WasmPlugin,
    Telemetry), each edit one that
    changes the types beside those its kind skips; each must skip at least one type for
    some proxy it pushes, and change none it skips."""
    history = [Apply(load_one(text)) for text in HISTORY]
    # ProxyConfig is left out: it pushes no proxy at all, so it has no push that could
    # skip a type (tests/integration/test_proxy_config_push.py checks that).
    named = set().union(*UNAFFECTED_BY.values()) - {"RequestAuthentication", "ProxyConfig"}
    assert {edit.config.kind for edit in history} == named
    queue = iter(history)
    found = asyncio.run(_check(example_mesh(), lambda _held: next(queue), len(history)))
    assert [any(skips.values()) for skips in found] == [True] * len(history)


def _load_balanced(
    service: str, balancer: str, *, pool: int = 100, subset: str = "", v1: str = "v1"
) -> str:
    """A bookinfo DestinationRule with ``balancer`` at the top level, or (``subset``) in
    subset v1 only; subset v1 selects ``version: <v1>``."""
    top = "" if subset else f"    loadBalancer: {balancer}\n"
    inner = f", trafficPolicy: {{loadBalancer: {balancer}}}" if subset else ""
    return f"""\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: {service}, namespace: bookinfo}}
spec:
  host: {service}.bookinfo.svc.cluster.local
  trafficPolicy:
{top}    connectionPool: {{tcp: {{maxConnections: {pool}}}}}
  subsets:
  - {{name: v1, labels: {{version: {v1}}}{inner}}}
  - {{name: v2, labels: {{version: v2}}}}
"""


COOKIE = "{consistentHash: {httpCookie: {name: session, ttl: 0s}}}"
HEADER = "{consistentHash: {httpHeaderName: x-user}}"
RULE_HISTORY: tuple[tuple[Edit, bool | None, bool], ...] = (
    # (edit, whether it leaves every route as it was (None: not asserted), whether it
    # leaves every endpoint assignment as it was)
    (Apply(load_one(_load_balanced("productpage", COOKIE, pool=7))), None, False),  # subsets
    (Apply(load_one(_load_balanced("productpage", COOKIE, pool=9))), True, True),  # pool only
    (Apply(load_one(_load_balanced("productpage", HEADER, pool=9))), False, True),  # hashes on
    (Apply(load_one(_load_balanced("productpage", "{simple: LEAST_REQUEST}"))), False, True),
    (Apply(load_one(_load_balanced("productpage", "{simple: ROUND_ROBIN}"))), True, True),
    (Apply(load_one(_load_balanced("reviews", HEADER, subset="v1"))), False, False),  # v3 goes
    (Apply(load_one(_load_balanced("reviews", HEADER, subset="v1", pool=3))), True, True),
    # subset v1 selects other endpoints; its cluster stays: only an EDS push tells
    (Apply(load_one(_load_balanced("reviews", HEADER, subset="v1", pool=3, v1="v3"))), True, False),
    (Delete(ConfigKey("DestinationRule", "bookinfo", "ratings")), True, False),  # subset v1 goes
)


def test_destination_rule_edits_skip_routes_and_endpoints_exactly_when_their_reads_stay() -> None:
    """DestinationRule edits that keep what routes read of them (connection pools,
    a load balancer that hashes nothing, a rule without hashing deleted) leave RDS out
    for every proxy they push, and edits of the hashing itself (what it hashes on, where
    it sits, turned off) push RDS to every proxy they push; likewise edits that keep the
    subsets leave EDS out but for the clusters CDS changed, and edits of the subsets
    push EDS. No proxy is left with routes or assignments other than a fresh build's."""
    queue = iter(edit for edit, _, _ in RULE_HISTORY)
    found = asyncio.run(_check(example_mesh(), lambda _held: next(queue), len(RULE_HISTORY)))
    for (edit, routes, endpoints), skips in zip(RULE_HISTORY, found, strict=True):
        assert skips, f"{edit!r} pushed no proxy"
        if routes is not None:
            assert [RDS in s for s in skips.values()] == [routes] * len(skips), (edit, skips)
        assert [EDS in s for s in skips.values()] == [endpoints] * len(skips), (edit, skips)
