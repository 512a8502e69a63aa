"""A warm server's output equals a cold build, after any sequence of config edits.

This is the guard on cache keys (DESIGN.md §2): every cached builder's key is its inputs,
so however the caches were filled, what a server sends must be what a server that never
saw the history sends. Starting from the bookinfo example or from a generated mesh, a
running :class:`DiscoveryServer` (debouncer, registry, PushContext reuse, cache
eviction: its own push path) takes random edits of every kind (add, change, delete);
after each one has been pushed, every proxy's resources are generated as a connection
generates them, which fills the ResourceCache (resources, and every value generators
derive on the way: inbound ports, EDS watch answers, access filters, which
AuthorizationPolicies and RequestAuthentications apply to a workload...; the api
generator's encodings of each object, kept beside their inputs, fill the same way). At the
end a fresh server is started on the same final configs, and every resource of every
type URL, for every proxy (sidecars in three namespaces, one with a selecting Sidecar
and one that captures traffic, an ingress gateway, a proxyless gRPC client), must be
byte for byte the same.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from pilothouse.config.load import Loader
from pilothouse.config.model import Config
from pilothouse.kinds.table import SCHEMAS
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.debounce import DebounceSettings
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.security.identity import Caller, ProvedBy, SpiffeId
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.generators.api_resource import MESH_CONFIG_GVK
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.server.discovery import DiscoveryServer, XdsSettings
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.mesh_edits import Apply, Delete, Edit, configs, edits, load_one
from tests.unit.security.sample_keys import RSA_2048_JWKS

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bookinfo"
SETTLE_TIMEOUT = 20.0
WILDCARD = "*"

Snapshot = dict[tuple[str, str, str], dict[str, bytes]]
"""(proxy, type URL, watch: wildcard or the CDS names) → resource name → ``Any`` bytes."""


def _proxy(node: str, namespace: str, labels: Mapping[str, str], **extra: str) -> ProxyIdentity:
    return parse_node(node, {"NAMESPACE": namespace, "LABELS": dict(labels), **extra})


def _authenticated(proxy: ProxyIdentity, account: str) -> ProxyIdentity:
    """``proxy`` as if its stream proved ``account`` (mTLS chains, auto-mTLS clusters)."""
    spiffe = SpiffeId("cluster.local", proxy.namespace, account)
    return dataclasses.replace(proxy, caller=Caller((spiffe,), ProvedBy.JWT))


PROXIES = (
    _proxy(
        "sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local",
        "bookinfo",
        {"app": "productpage", "version": "v1"},
    ),
    _proxy(
        "sidecar~10.0.0.1~reviews-v2.bookinfo~bookinfo.svc.cluster.local",
        "bookinfo",
        {"app": "reviews", "version": "v2"},
        INTERCEPTION_MODE="REDIRECT",
    ),
    _proxy("sidecar~10.1.0.1~a-1.shop~shop.svc.cluster.local", "shop", {"app": "a"}),
    _proxy(
        "sidecar~10.2.0.1~b-1.bank~bank.svc.cluster.local",
        "bank",
        {"app": "b", "version": "v1"},
        INTERCEPTION_MODE="REDIRECT",
    ),
    _proxy(
        "router~10.0.0.9~ingress.bookinfo~bookinfo.svc.cluster.local",
        "bookinfo",
        {"istio": "ingressgateway"},
    ),
    _proxy(
        "sidecar~10.1.0.7~client-1.shop~shop.svc.cluster.local",
        "shop",
        {"app": "client"},
        GENERATOR="grpc",
    ),
    _authenticated(
        _proxy(
            "sidecar~127.0.0.1~reviews-v1.bookinfo~bookinfo.svc.cluster.local",
            "bookinfo",
            {"app": "reviews", "version": "v1"},
        ),
        "bookinfo-reviews",
    ),
    _authenticated(
        _proxy("sidecar~10.1.0.1~a-2.shop~shop.svc.cluster.local", "shop", {"app": "a"}),
        "a",
    ),
)
API_TYPES = (*(schema.gvks[0] for schema in SCHEMAS), MESH_CONFIG_GVK)


def example_mesh() -> tuple[Config, ...]:
    loader = Loader(SCHEMAS, source="fuzz")
    found: list[Config] = []
    for path in sorted(EXAMPLE.glob("*.yaml")):
        found.extend(loader.load_strict(path.read_text(), path.name))
    return tuple(found)


FIRST_SEEN = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def start_server(initial: Iterable[Config]) -> tuple[DiscoveryServer, MemoryStore]:
    store = MemoryStore("fuzz")
    for config in initial:
        store.apply(config)
    store.mark_synced()
    settings = XdsSettings(debounce=DebounceSettings(debounce_after=0.0))
    return DiscoveryServer(store, settings=settings, api_clock=first_seen), store


def first_seen() -> datetime.datetime:
    """One first-seen time for every server: an MCP resource's create_time is when its
    server first saw the object (history, like creationTimestamp), not an input."""
    return FIRST_SEEN


async def settled(server: DiscoveryServer) -> None:
    """Wait until every edit so far has been pushed (debouncer idle, nothing queued)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        await asyncio.sleep(0)
        state = server.pushes.debouncer.state  # the test's only look inside: is a push pending?
        if (
            state.pending is None
            and state.immediate is None
            and not state.in_flight
            and server.pending_pushes() == 0
        ):
            return
        assert time.monotonic() < deadline, "the edits were never pushed"
        await asyncio.sleep(0.001)


def generate(server: DiscoveryServer) -> Snapshot:
    """Every proxy's resources of every type, as a connection asks for them: CDS, LDS and
    RDS by wildcard, EDS for the clusters CDS sent and by wildcard, every Istio kind."""
    out: Snapshot = {}

    def one(
        proxy: ProxyIdentity, type_url: str, names: frozenset[str] | None, watch: str
    ) -> list[str]:
        generator = server.generator(type_url)
        assert generator is not None, type_url
        context = server.context
        made = generator.generate(
            GenerationInput(
                proxy=proxy,
                scope=context.scope(proxy),
                context=context,
                endpoints=server.endpoints,
                cache=server.cache,
                names=names,
            )
        )
        out[proxy.id, type_url, watch] = {name: r.body for name, r in made.items()}
        return list(made)

    for proxy in PROXIES:
        clusters = one(proxy, CDS, None, WILDCARD)
        one(proxy, EDS, frozenset(n for n in clusters if n.startswith("outbound|")), "CDS names")
        one(proxy, EDS, None, WILDCARD)
        one(proxy, LDS, None, WILDCARD)
        one(proxy, RDS, None, WILDCARD)
    for type_url in API_TYPES:
        one(PROXIES[0], type_url, None, WILDCARD)
    return out


async def warm_then_cold(
    initial: tuple[Config, ...], history: Callable[[MemoryStore], Iterator[Edit]]
) -> None:
    """Run ``history`` (edits drawn against the store as it is) on a warm server, then
    compare its output with a cold server's on the final configs."""
    warm, store = start_server(initial)
    running = asyncio.create_task(warm.run())
    try:
        await asyncio.wait_for(warm.wait_ready(), SETTLE_TIMEOUT)
        generate(warm)
        for edit in history(store):
            if isinstance(edit, Apply):
                store.apply(edit.config)
            else:
                store.delete(edit.key)
            await settled(warm)
            generate(warm)
        final = tuple(store.get(key) for key in store.keys())
        warmed = generate(warm)
    finally:
        warm.close()
        await asyncio.wait_for(running, SETTLE_TIMEOUT)
    cold, _ = start_server(c for c in final if c is not None)
    running = asyncio.create_task(cold.run())
    try:
        await asyncio.wait_for(cold.wait_ready(), SETTLE_TIMEOUT)
        fresh = generate(cold)
    finally:
        cold.close()
        await asyncio.wait_for(running, SETTLE_TIMEOUT)
    assert warmed.keys() == fresh.keys()
    for watch, resources in fresh.items():
        held = warmed[watch]
        names = sorted(held.keys() ^ resources.keys())
        assert not names, f"{watch}: only one of warm and cold has {names}"
        stale = [name for name, body in resources.items() if held[name] != body]
        assert not stale, f"{watch}: warm server differs from a cold build for {stale}"


def budget() -> settings:
    """The fuzz budget, without shrinking: each case runs two servers, and shrinking a
    failure would outlast the test's time bound; the failing history is printed as drawn."""
    return settings(fuzz_settings(0.25), phases=[Phase.explicit, Phase.reuse, Phase.generate])


def drawn(data: st.DataObject, count: int) -> Callable[[MemoryStore], Iterator[Edit]]:
    """``count`` edits, each drawn against the keys the store holds at that point."""

    def history(store: MemoryStore) -> Iterator[Edit]:
        for _ in range(count):
            yield data.draw(edits(tuple(store.keys())))

    return history


@budget()
@given(count=st.integers(min_value=1, max_value=10), data=st.data())
def test_after_edits_to_the_example_mesh_a_warm_server_equals_a_cold_build(
    count: int, data: st.DataObject
) -> None:
    asyncio.run(warm_then_cold(example_mesh(), drawn(data, count)))


@budget()
@given(
    initial=st.lists(configs(), min_size=2, max_size=10),
    count=st.integers(min_value=1, max_value=10),
    data=st.data(),
)
def test_after_edits_to_a_generated_mesh_a_warm_server_equals_a_cold_build(
    initial: list[Config], count: int, data: st.DataObject
) -> None:
    asyncio.run(warm_then_cold(tuple(initial), drawn(data, count)))


def test_deleting_and_restoring_every_example_object_leaves_the_output_as_it_was() -> None:
    """A fixed history through every kind: each example object deleted, then put back."""
    mesh = example_mesh()
    history: list[Edit] = [Delete(c.key) for c in mesh]
    history += [Apply(c) for c in mesh]
    asyncio.run(warm_then_cold(mesh, lambda _store: iter(history)))


def test_policies_that_come_go_and_change_what_they_select_leave_no_stale_selection() -> None:
    """A fixed history of access control: a mesh-wide policy in the root namespace, then
    narrowed to one app; a RequestAuthentication that moves from one workload to
    another; the mesh-wide policy deleted and put back (which policies apply to a
    workload is a cached value: each step must reach every proxy it concerns)."""
    mesh = example_mesh()

    def policy(selector: str) -> Config:
        return load_one(
            "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
            "metadata: {name: mesh-wide, namespace: istio-system}\n"
            f"spec: {{{selector}action: DENY, "
            "rules: [{to: [{operation: {methods: [PUT]}}]}]}\n"
        )

    def authentication(app: str) -> Config:
        return load_one(
            "apiVersion: security.istio.io/v1\nkind: RequestAuthentication\n"
            "metadata: {name: jwt, namespace: bookinfo}\n"
            f"spec: {{selector: {{matchLabels: {{app: {app}}}}}, "
            f"jwtRules: [{{issuer: 'https://issuer.test', jwks: '{RSA_2048_JWKS}'}}]}}\n"
        )

    everywhere = policy("")
    history: list[Edit] = [
        Apply(everywhere),
        Apply(policy("selector: {matchLabels: {app: reviews}}, ")),
        Apply(authentication("productpage")),
        Apply(authentication("reviews")),
        Delete(everywhere.key),
        Apply(everywhere),
    ]
    asyncio.run(warm_then_cold(mesh, lambda _store: iter(history)))
