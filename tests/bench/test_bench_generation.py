"""The generation-cost benchmark's parts: the scaled bookinfo mesh, Envoy's subscriptions,
the build counter, the figures, and a tiny end-to-end run."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest
from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)

from bench.generation_cost import EXAMPLE, Options, measure
from bench.generation_figures import (
    BuildCounter,
    CacheDelta,
    Tally,
    judge,
    ratio,
    weighted_us_per_resource,
)
from bench.generation_mesh import (
    CHANGED_NAMESPACE,
    ScaledBookinfo,
    read_example,
    rename_hosts,
    served_workloads,
    spread,
)
from bench.harness.subscriptions import Subscriptions, message_of
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.protocol.type_urls import CDS, EDS, LDS
from pilothouse.push.cache import CacheStats, Resource
from pilothouse.push.proxy import ProxyType
from pilothouse.xds.generators import cds
from pilothouse.xds.generators.cds import encode


def load(root: Path) -> dict[str, str]:
    """Every object under ``root``: ``kind ns/name`` → its spec as text (all must be valid)."""
    loader = Loader(SCHEMAS)
    objects: dict[str, str] = {}
    for path in sorted(root.rglob("*.yaml")):
        result = loader.load_text(path.read_text(encoding="utf-8"), str(path))
        assert result.ok, result.errors
        for config in result.configs:
            objects[f"{config.kind} {config.namespace}/{config.name}"] = str(config.spec)
    return objects


def small_mesh(view: str = "namespace") -> ScaledBookinfo:
    return ScaledBookinfo.build(
        read_example(EXAMPLE), services=12, sidecars=20, gateways=2, view=view
    )


# -- the mesh ---------------------------------------------------------------------------


def test_only_the_workloads_of_kept_services_get_pods() -> None:
    example = read_example(EXAMPLE)
    everything = served_workloads(example, 5)
    assert set(everything) == {
        "ratings-v1",
        "productpage-v1",
        "details-v1",
        "reviews-v1",
        "reviews-v2",
        "reviews-v3",
    }
    assert served_workloads(example, 2) == ("productpage-v1", "details-v1")


def test_spread_is_even_and_complete() -> None:
    assert spread(10, 3) == [4, 3, 3]
    assert spread(2, 4) == [1, 1, 0, 0]
    assert spread(5, 0) == []


def test_hosts_move_into_the_namespace() -> None:
    renamed = rename_hosts(
        {"hosts": ["reviews.bookinfo.svc.cluster.local", "books.example.com", "*"]}, "bookinfo-7"
    )
    assert renamed == {
        "hosts": [
            "reviews.bookinfo-7.svc.cluster.local",
            "books.bookinfo-7.example.com",
            "*",
        ]
    }


def test_the_scaled_mesh_is_valid_and_has_the_requested_services(tmp_path: Path) -> None:
    mesh = small_mesh()
    mesh.write(tmp_path)
    objects = load(tmp_path)
    kinds = Counter(key.split()[0] for key in objects)
    # 12 services: two full namespaces of 5, then 2 of the third namespace's.
    assert kinds["ServiceEntry"] == 12 == mesh.service_count()
    assert {k.split()[1].split("/")[0] for k in objects} == {
        "bookinfo-0",
        "bookinfo-1",
        "bookinfo-2",
    }
    assert kinds["Gateway"] == 3
    assert kinds["Sidecar"] == 6  # the example's productpage Sidecar + a namespace default
    assert len(mesh.pods) == 20 and len(mesh.routers) == 2
    assert len({p.ip for p in [*mesh.pods, *mesh.routers]}) == 22
    reviews = objects["ServiceEntry bookinfo-1/reviews"]
    assert "reviews.bookinfo-1.svc.cluster.local" in reviews
    gateway = objects["Gateway bookinfo-1/bookinfo-gateway"]
    assert "bookinfo.bookinfo-1.example.com" in gateway and '"*"' not in gateway


def test_every_pod_is_an_endpoint_of_its_workload(tmp_path: Path) -> None:
    mesh = small_mesh()
    documents = list(mesh.objects())
    entries = {
        (d["metadata"]["namespace"], d["spec"]["address"])
        for d in documents
        if d["kind"] == "WorkloadEntry"
    }
    inline = {
        (d["metadata"]["namespace"], e["address"])
        for d in documents
        if d["kind"] == "ServiceEntry"
        for e in d["spec"].get("endpoints", ())
    }
    for pod in mesh.pods:
        where = entries if pod.app != "ratings" else inline
        assert (pod.namespace, pod.ip) in where, pod


def test_the_mesh_view_has_no_namespace_sidecar() -> None:
    mesh = small_mesh("mesh")
    sidecars = [d for d in mesh.objects() if d["kind"] == "Sidecar"]
    assert sidecars and all(d["spec"].get("workloadSelector") for d in sidecars)


def test_a_change_rewrites_one_rule(tmp_path: Path) -> None:
    mesh = small_mesh()
    mesh.write(tmp_path)
    before = load(tmp_path)
    path = mesh.set_state(tmp_path, 1)
    after = load(tmp_path)
    assert path.parent.name == CHANGED_NAMESPACE
    assert [k for k in after if after[k] != before[k]] == [
        f"DestinationRule {CHANGED_NAMESPACE}/reviews"
    ]
    assert not list(tmp_path.rglob(".*.tmp"))


def test_proxies_parse_as_the_server_parses_them() -> None:
    mesh = small_mesh()
    proxies = mesh.proxies()
    assert len(proxies) == 22
    sidecar, router = proxies[0], proxies[-1]
    assert sidecar.type is ProxyType.SIDECAR and sidecar.namespace == mesh.pods[0].namespace
    assert sidecar.labels.matches({"app": mesh.pods[0].app, "version": mesh.pods[0].version})
    assert (sidecar.metadata or {}).get("INTERCEPTION_MODE") == "REDIRECT"
    assert router.type is ProxyType.ROUTER and router.namespace == "istio-system"
    assert router.labels.matches({"istio": "ingressgateway"})


# -- subscriptions ----------------------------------------------------------------------


def _listener(route: str) -> listener_pb2.Listener:
    manager = hcm_pb2.HttpConnectionManager(stat_prefix="x")
    manager.rds.route_config_name = route
    listener = listener_pb2.Listener(name=f"0.0.0.0_{route}")
    listener.filter_chains.add().filters.add(name="hcm").typed_config.Pack(manager)
    return listener


def test_subscriptions_name_eds_clusters_and_routes() -> None:
    eds_cluster = cluster_pb2.Cluster(name="outbound|80||a", type=cluster_pb2.Cluster.EDS)
    dns_cluster = cluster_pb2.Cluster(name="outbound|80||b", type=cluster_pb2.Cluster.STRICT_DNS)
    named = cluster_pb2.Cluster(name="outbound|80||c", type=cluster_pb2.Cluster.EDS)
    named.eds_cluster_config.service_name = "c-endpoints"
    clusters = [encode(c, c.name) for c in (eds_cluster, dns_cluster, named)]
    subscriptions = Subscriptions()
    assert subscriptions.eds_names(clusters) == {"outbound|80||a", "c-endpoints"}
    listeners = [encode(_listener(r), f"l{r}") for r in ("80", "9080")]
    assert subscriptions.rds_names(listeners) == {"80", "9080"}
    assert message_of(CDS, clusters[2]) == named


# -- the build counter --------------------------------------------------------------------


def test_the_build_counter_counts_encodes_and_puts_encode_back() -> None:
    original = cds.encode
    counter = BuildCounter()
    with counter.active():
        assert cds.encode is not original
        cds.encode(cluster_pb2.Cluster(name="x"), "x")
        cds.encode(cluster_pb2.Cluster(name="y"), "y")
    assert cds.encode is original
    assert counter.reset()[CDS] == 2
    assert counter.built[CDS] == 0


# -- figures ----------------------------------------------------------------------------


def _resource(name: str, version: str) -> Resource:
    return Resource(name, version, b"")


def test_a_tally_adds_up_per_type_and_counts_each_distinct_resource() -> None:
    tally = Tally(proxies=2)
    tally.add(CDS, {"a": _resource("a", "1"), "b": _resource("b", "2")}, 0.002)
    tally.add(CDS, {"a": _resource("a", "1")}, 0.001)
    tally.add(EDS, {"a": _resource("a", "9")}, 0.001)
    tally.built = {CDS: 2, EDS: 0}
    assert tally.total_resources == 4
    assert tally.us_per_resource == 1000.0
    assert tally.occurrences[(CDS, "1")] == 2
    assert len(tally.samples) == 3
    assert tally.reused_share == 0.5
    assert tally.by_type() == "CDS 3 in 0.003 s; EDS 1 in 0.001 s"


def test_the_baseline_is_weighted_by_occurrences() -> None:
    occurrences = {(CDS, "1"): 3, (LDS, "2"): 1}
    prices = {(CDS, "1"): 1e-6, (LDS, "2"): 5e-6}
    assert weighted_us_per_resource(occurrences, prices) == pytest.approx(2.0)
    assert weighted_us_per_resource({}, prices) is None
    assert ratio(2.0, 8.0) == 0.25
    assert ratio(None, 8.0) is None


def test_cache_delta_reads_the_cache_counters() -> None:
    before = CacheStats(hits=10, misses=5)
    after = dataclasses.replace(before, hits=105, misses=10)
    delta = CacheDelta.between(before, after)
    assert (delta.hits, delta.misses, delta.lookups) == (95, 5, 100)
    assert delta.hit_rate == 0.95


def test_judge_says_by_how_much_a_target_is_missed() -> None:
    met = judge(4.0, 0.99, hits_count=True)
    assert met.met and met.missed_by is None
    assert met.target == "≤ 5 µs amortised per resource per push, ≥ 95% cache hits"
    missed = judge(15.0, 0.9, hits_count=True)
    assert not missed.met
    assert missed.missed_by == (
        "15.00 µs per resource is 3.00× the target (10.00 µs over); "
        "hit rate 90.00% is 5.00 points short"
    )
    assert judge(15.0, 0.1, hits_count=False).missed_by == (
        "15.00 µs per resource is 3.00× the target (10.00 µs over)"
    )


# -- end to end -------------------------------------------------------------------------


async def test_a_tiny_run_reports_three_passes() -> None:
    options = Options(services=10, proxies=14, gateways=2, view="namespace", sample=1, profile=None)
    groups = await measure(options)
    assert [g["benchmark"].split(", ", 1)[1] for g in groups] == [
        "first push (namespace view)",
        "one service changes, concerned proxies (namespace view)",
        "one service changes, every proxy regenerated (namespace view)",
    ]
    for group in groups:
        for key in ("baseline", "ratio_to_baseline", "target", "target_met"):
            assert key in group
        assert group["resources"] > 0
        assert group["baseline_us_per_resource"] > 0
    first, scoped, everyone = groups
    assert first["proxies_generated"] == everyone["proxies_generated"] == 14
    # the changed rule's namespace (6 sidecars of bookinfo-0) and both routers
    assert scoped["proxies_concerned"] == "8 of 14"
    assert scoped["proxies_generated"] == 8
    assert scoped["context_rebuilt"] == "destination_rules"
    assert scoped["cache_entries_evicted"] > 0
    assert 0 < scoped["cache_hit_rate"] < 1
    assert everyone["resources"] == first["resources"]
