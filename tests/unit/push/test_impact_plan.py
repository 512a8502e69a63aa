"""The impact of candidate objects: which connections the pipeline would push, which types.

The store, registry, pipeline and PushContext are real (the set-up of
test_peer_authentication_push: web and db in ``shop``, tool in ``other`` behind a
Sidecar that sees ``./*`` only); connections are stand-ins that only tell the pipeline
who their proxy is. Nothing live may change: not the store, the context, the version.
"""

from __future__ import annotations

import pytest

from pilothouse.config.load import Loader
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds.table import SCHEMAS
from pilothouse.protocol.type_urls import CDS, LDS, RDS
from pilothouse.push.impact import CandidateStore, NotPredicted, plan_impact
from tests.unit.xds_server.test_peer_authentication_push import Connection, Stage

REVIEWS_ROUTE = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: shop}
spec:
  hosts: [web.shop.svc.cluster.local]
  http:
  - timeout: 3s
    route: [{destination: {host: web.shop.svc.cluster.local}}]
"""
WEB_ALLOW = """\
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: web-allow, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  rules:
  - from:
    - source: {principals: [cluster.local/ns/shop/sa/frontend]}
"""
NEW_SERVICE = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: cache, namespace: shop}
spec:
  hosts: [cache.shop.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 6379, name: tcp, protocol: TCP}]
  endpoints: [{address: 10.0.0.7}]
"""


def candidates(text: str) -> list[Config]:
    return list(Loader(SCHEMAS, source="test").load_strict(text, "candidate.yaml"))


def pushed(plan_pushes: tuple[tuple[Connection, object], ...]) -> list[str]:
    return sorted(connection.id for connection, _ in plan_pushes)


def test_a_virtual_service_edit_concerns_only_the_proxies_that_see_its_host() -> None:
    stage = Stage()
    context, version, keys = stage.pipeline.context, stage.pipeline.version, stage.store.keys()

    plan = plan_impact(stage.pipeline, stage.store, candidates(REVIEWS_ROUTE))

    # tool's Sidecar sees its own namespace only; web and db see shop's hosts
    assert pushed(plan.pushes) == ["db", "web"]
    assert plan.changed == (ConfigKey("VirtualService", "shop", "web"),)
    for _, push in plan.pushes:
        # routes only: clusters never read a VirtualService, a sidecar's listeners neither
        assert RDS not in push.unchanged
        assert {CDS, LDS} <= push.unchanged
        assert not push.endpoints
    assert plan.context is not None and plan.context is not context
    assert plan.context.virtual_services  # the candidate is in the context it would build
    # nothing live moved
    assert stage.pipeline.context is context
    assert stage.pipeline.version == version
    assert stage.store.keys() == keys
    assert stage.store.get(ConfigKey("VirtualService", "shop", "web")) is None


def test_an_authorization_policy_edit_concerns_the_selected_workload_s_listeners() -> None:
    stage = Stage()
    plan = plan_impact(stage.pipeline, stage.store, candidates(WEB_ALLOW))
    assert pushed(plan.pushes) == ["web"]
    ((_, push),) = plan.pushes
    assert LDS not in push.unchanged
    assert {CDS, RDS} <= push.unchanged
    assert not push.endpoints


def test_an_edit_that_changes_nothing_pushes_no_proxy() -> None:
    stage = Stage("---\n" + REVIEWS_ROUTE)
    same = candidates(REVIEWS_ROUTE)
    plan = plan_impact(stage.pipeline, stage.store, same)
    assert plan.pushes == ()
    assert plan.context is None
    assert plan.changed == ()
    assert plan.unchanged == (ConfigKey("VirtualService", "shop", "web"),)
    # the same object once more beside a real change: only the change counts
    both = plan_impact(stage.pipeline, stage.store, [*same, *candidates(WEB_ALLOW)])
    assert both.unchanged == plan.unchanged
    assert pushed(both.pushes) == ["web"]


def test_registry_kinds_are_refused_rather_than_predicted_wrong() -> None:
    stage = Stage()
    with pytest.raises(NotPredicted, match="ServiceEntry"):
        plan_impact(stage.pipeline, stage.store, candidates(NEW_SERVICE))


def test_before_the_first_context_there_is_nothing_to_plan_against() -> None:
    stage = Stage()
    stage.pipeline._context = None  # as before start()
    with pytest.raises(LookupError):
        plan_impact(stage.pipeline, stage.store, candidates(WEB_ALLOW))


def test_the_candidate_store_overlays_without_writing() -> None:
    stage = Stage("---\n" + REVIEWS_ROUTE)
    (edited,) = candidates(REVIEWS_ROUTE.replace("3s", "5s"))
    (added,) = candidates(WEB_ALLOW)
    overlay = CandidateStore(stage.store, {edited.key: edited, added.key: added})
    assert overlay.get(edited.key) is edited
    assert stage.store.get(edited.key) is not edited
    assert overlay.configs("VirtualService", "shop") == [edited]
    assert overlay.configs("AuthorizationPolicy") == [added]
    assert overlay.configs("AuthorizationPolicy", "other") == []
    assert set(overlay.keys()) == {*stage.store.keys(), added.key}
    assert len(overlay.keys()) == len(stage.store.keys()) + 1
    assert added.key not in stage.store.keys()
    events: list[object] = []
    overlay.subscribe(events.append)()
    assert overlay.has_synced() and overlay.revision == stage.store.revision
