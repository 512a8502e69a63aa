"""Who an EnvoyFilter edit pushes, and which types: the proxies the old or the new
version selects, and only the types their patches change (the push pipeline with a real
store, registry and PushContext, fake connections)."""

from __future__ import annotations

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.affected_types import unaffected_types
from pilothouse.push.pipeline import PushPlan
from pilothouse.push.proxy import parse_node
from tests.unit.push.test_push_pipeline import FakeConnection, Stage, pushed


def labelled(connection_id: str, ns: str, app: str) -> FakeConnection:
    node = parse_node(
        f"sidecar~10.1.0.1~{connection_id}.{ns}~{ns}.svc.cluster.local", {"LABELS": {"app": app}}
    )
    return FakeConnection(connection_id, node)


def envoy_filter(
    namespace: str, app: str | None, apply_to: str, name: str = "f", context: str = "ANY"
) -> str:
    selector = f"workloadSelector: {{labels: {{app: {app}}}}}" if app else ""
    value = "{name: x}" if apply_to == "CLUSTER" else "{}"
    return f"""\
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  {selector}
  configPatches:
  - applyTo: {apply_to}
    match: {{context: {context}}}
    patch: {{operation: MERGE, value: {value}}}
"""


def skipped(plan: PushPlan[FakeConnection]) -> dict[str, frozenset[str]]:
    return {c.id: unaffected_types(r) & {CDS, LDS, RDS, EDS} for c, r in plan.pushes}


def connections() -> tuple[FakeConnection, ...]:
    return (
        labelled("web", "team-a", "web"),
        labelled("cart", "team-a", "cart"),
        labelled("other", "team-b", "web"),
    )


def test_an_edit_pushes_only_the_proxies_it_selects_and_the_types_it_patches() -> None:
    stage = Stage(*connections())
    plan = stage.plan(stage.apply(envoy_filter("team-a", "web", "CLUSTER")))
    assert pushed(plan) == ["web"]
    assert skipped(plan) == {"web": frozenset({LDS, RDS})}


def test_the_old_version_s_proxies_and_types_are_pushed_too() -> None:
    stage = Stage(*connections())
    stage.plan(stage.apply(envoy_filter("team-a", "web", "CLUSTER")))
    plan = stage.plan(stage.apply(envoy_filter("team-a", "cart", "HTTP_FILTER")))
    assert sorted(pushed(plan)) == ["cart", "web"]
    assert skipped(plan) == {"web": frozenset({RDS}), "cart": frozenset({RDS})}


def test_a_root_namespace_filter_without_selector_pushes_every_proxy() -> None:
    stage = Stage(*connections())
    outbound = envoy_filter("istio-system", None, "VIRTUAL_HOST", context="SIDECAR_OUTBOUND")
    plan = stage.plan(stage.apply(outbound))
    assert sorted(pushed(plan)) == ["cart", "other", "web"]
    assert set(skipped(plan).values()) == {frozenset({CDS, LDS})}


def test_a_route_patch_that_may_reach_inbound_routes_pushes_listeners_too() -> None:
    """A sidecar's inbound routes are inline in its listeners."""
    stage = Stage(*connections())
    plan = stage.plan(stage.apply(envoy_filter("team-a", "web", "HTTP_ROUTE", context="ANY")))
    assert skipped(plan) == {"web": frozenset({CDS})}


def test_a_filter_that_reached_a_context_before_its_request_is_pushed_by_namespace() -> None:
    """A context built for another request already held it: old and new agree, so its
    own request pushes every proxy of its namespace, every type."""
    stage = Stage(*connections())
    early = stage.apply(envoy_filter("team-a", "web", "CLUSTER", name="early"))
    assert early is not None
    stage.plan(stage.apply(envoy_filter("team-b", "web", "CLUSTER", name="other")))
    plan = stage.plan(early)
    assert sorted(pushed(plan)) == ["cart", "web"]
    assert set(skipped(plan).values()) == {frozenset()}
