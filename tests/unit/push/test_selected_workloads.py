"""The selected-workload audience read from the kind table: who a change of a kind that
selects workloads concerns, which types it leaves alone, and when it cannot be compared
(real store and PushContexts, the proxies parsed from node ids)."""

from __future__ import annotations

from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import ConfigKey
from pilothouse.kinds.kind import Audience
from pilothouse.kinds.table import KINDS, SCHEMAS
from pilothouse.protocol.type_urls import CDS, LDS, RDS
from pilothouse.push.context import PushContext, build_context
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.push.request import PushRequest
from pilothouse.push.scope import AUDIENCE_RULES
from pilothouse.push.selected_workloads import (
    SELECTING,
    index_of,
    moved_selections,
    selected_change,
)
from pilothouse.sources.memory import MemoryStore

POLICY = """\
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny, namespace: shop}
spec: {selector: {matchLabels: {app: cart}}, action: DENY, rules: [{}]}
"""
FILTER = """\
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: f, namespace: shop}
spec:
  workloadSelector: {labels: {app: cart}}
  configPatches:
  - applyTo: CLUSTER
    patch: {operation: MERGE, value: {name: x}}
"""
ROUTE = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: r, namespace: shop}
spec: {hosts: [a.example.com], http: [{route: [{destination: {host: a.example.com}}]}]}
"""

POLICY_KEY = ConfigKey("AuthorizationPolicy", "shop", "deny")
FILTER_KEY = ConfigKey("EnvoyFilter", "shop", "f")
ROUTE_KEY = ConfigKey("VirtualService", "shop", "r")


def sidecar(namespace: str, app: str) -> ProxyIdentity:
    node = f"sidecar~10.0.0.1~pod.{namespace}~{namespace}.svc.cluster.local"
    return parse_node(node, {"LABELS": {"app": app}})


def contexts() -> tuple[PushContext, PushContext]:
    """A context without the three objects, and the next one with them."""
    store = MemoryStore("test")
    store.mark_synced()
    before = build_context(store, lambda: (), MeshSettings(), "v1")
    for config in Loader(SCHEMAS, source="test").load_strict(
        POLICY + "---\n" + FILTER + "---\n" + ROUTE, "m.yaml"
    ):
        store.apply(config)
    keys = [POLICY_KEY, FILTER_KEY, ROUTE_KEY]
    after = build_context(
        store, lambda: (), MeshSettings(), "v2", before, PushRequest.for_configs(keys)
    )
    return before, after


def test_the_selecting_kinds_are_those_the_table_declares_and_each_has_an_index() -> None:
    before, _ = contexts()
    assert set(SELECTING) == {k.name for k in KINDS if k.audience is Audience.SELECTED_WORKLOADS}
    assert set(SELECTING) == {
        "AuthorizationPolicy", "RequestAuthentication", "EnvoyFilter", "WasmPlugin", "Telemetry"
    }  # fmt: skip
    for kind in SELECTING.values():
        index = index_of(before, kind)
        assert kind.index is not None and index is getattr(before, kind.index)
        assert not index.selects(ConfigKey(kind.name, "shop", "absent"), sidecar("shop", "cart"))
    for kind in KINDS:
        if kind.audience is not Audience.SELECTED_WORKLOADS:
            assert kind.changed_types is None and kind.uncompared_audience is None, kind.name
        elif kind.uncompared_audience is not None:
            assert kind.uncompared_audience is not Audience.SELECTED_WORKLOADS
            assert kind.uncompared_audience in AUDIENCE_RULES


def test_a_compared_change_concerns_the_workloads_either_version_selects() -> None:
    before, after = contexts()
    keys = frozenset({POLICY_KEY, FILTER_KEY, ROUTE_KEY})
    change = selected_change(keys, before, after, frozenset())
    assert change.others == {ROUTE_KEY}
    assert {key for key, _, _ in change.compared} == {POLICY_KEY, FILTER_KEY}
    assert change.uncompared == ()
    assert change.selects(sidecar("shop", "cart"))
    assert not change.selects(sidecar("shop", "till"))
    assert not change.selects(sidecar("bank", "cart"))
    # the version before (here: none) counts as much as the one after
    assert selected_change(keys, after, before, frozenset()).selects(sidecar("shop", "cart"))


def test_only_the_types_a_filter_s_patches_change_are_left_in() -> None:
    before, after = contexts()
    change = selected_change(frozenset({POLICY_KEY, FILTER_KEY}), before, after, frozenset())
    # a CLUSTER patch: listeners and routes are left alone; the policy declares no
    # changed types (its kind's unread_by already leaves clusters and routes out)
    assert change.inert == {(LDS, FILTER_KEY), (RDS, FILTER_KEY)}
    assert (CDS, FILTER_KEY) not in change.inert


def test_a_change_that_cannot_be_compared_follows_the_uncompared_audience() -> None:
    before, after = contexts()
    keys = frozenset({POLICY_KEY, FILTER_KEY})
    for unsettled in (frozenset({FILTER_KEY}), None):
        change = selected_change(keys, before, after, unsettled)
        assert [key for key, _, _ in change.compared] == [POLICY_KEY]  # never tracked
        assert [key for key, _ in change.uncompared] == [FILTER_KEY]
        assert change.inert == frozenset()  # every type
        shop, bank = sidecar("shop", "till"), sidecar("bank", "till")
        assert change.seen_by(after.scope(shop), after.scope(shop), "istio-system")
        assert not change.seen_by(after.scope(bank), after.scope(bank), "istio-system")


def test_only_kinds_with_an_uncompared_audience_are_tracked_across_contexts() -> None:
    before, after = contexts()
    assert moved_selections(before, after) == {FILTER_KEY}
    assert moved_selections(after, after) == frozenset()
