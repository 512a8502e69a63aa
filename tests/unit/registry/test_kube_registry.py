"""The Kubernetes registry driven by in-memory feeds.

The feeds (:mod:`tests.memory_kube`) stand in for informers of a Kubernetes API server,
which cannot run here; they deliver the API server's JSON objects as watch events.
"""

from __future__ import annotations

from pilothouse.push.pods_proxy import proxy_with_pod
from pilothouse.push.proxy import parse_node
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.kubernetes.feeds import KubeFeeds
from pilothouse.registry.kubernetes.registry import KubeRegistry
from pilothouse.registry.kubernetes.services import port_protocol
from pilothouse.registry.model import Location, Resolution, ServiceKey
from pilothouse.registry.update import RegistryUpdate
from pilothouse.sources.kubernetes.events import KubeEvent, WatchEventType
from tests.memory_kube import (
    MemoryCluster,
    endpoint_slice,
    namespace,
    node,
    pod,
    service,
)

NS = "shop"
REVIEWS = ServiceKey("reviews.shop.svc.cluster.local", NS)


class Harness:
    def __init__(self, *, load: bool = True) -> None:
        self.cluster = MemoryCluster()
        self.updates: list[RegistryUpdate] = []
        self.pods: list[frozenset[tuple[str, str]]] = []
        self.index = EndpointIndex()
        self.registry = KubeRegistry(
            self.cluster.feeds(), self.index, self.updates.append, on_pods=self.pods.append
        )
        self.initial: RegistryUpdate | None = None
        if load:
            self.initial = self.registry.initial_load()


def reviews_mesh(h: Harness) -> None:
    c = h.cluster
    c.nodes.apply(node("node-a", "eu-west1", "eu-west1-b", "rack7"))
    c.nodes.apply(node("node-b", "eu-west1", "eu-west1-c"))
    c.namespaces.apply(namespace(NS, {"team": "shop"}))
    c.services.apply(
        service(
            "reviews",
            NS,
            [{"name": "http-api", "port": 9080, "targetPort": 8080}],
            selector={"app": "reviews"},
        )
    )
    c.pods.apply(
        pod("reviews-1", NS, "10.0.0.1", {"app": "reviews", "version": "v1"},
            service_account="bookinfo-reviews", node="node-a")
    )  # fmt: skip
    c.pods.apply(
        pod("reviews-2", NS, "10.0.0.2", {"app": "reviews", "version": "v2"},
            service_account="bookinfo-reviews", node="node-b")
    )  # fmt: skip
    c.endpointslices.apply(
        endpoint_slice(
            "reviews-abc", NS, "reviews", [("http-api", 8080)],
            [("10.0.0.1", "reviews-1", True), ("10.0.0.2", "reviews-2", True)],
        )
    )  # fmt: skip


def test_service_and_slice_of_two_ready_pods() -> None:
    h = Harness(load=False)
    reviews_mesh(h)
    assert h.registry.services() == ()  # nothing is converted before the initial load
    update = h.registry.initial_load()
    assert update is not None and update.full and update.services == {REVIEWS}
    (svc,) = h.registry.services()
    assert svc.key == REVIEWS
    assert svc.addresses == ("10.96.0.10",)
    assert svc.resolution is Resolution.STATIC and svc.location is Location.MESH_INTERNAL
    assert [(p.name, p.number, p.protocol, p.target_port) for p in svc.ports] == [
        ("http-api", 9080, "HTTP", 8080)
    ]
    assert dict(svc.workload_selector or {}) == {"app": "reviews"}
    one, two = h.index.endpoints(REVIEWS)
    assert (one.address, one.port, one.service_port_name) == ("10.0.0.1", 8080, "http-api")
    assert one.locality == "eu-west1/eu-west1-b/rack7"
    assert two.locality == "eu-west1/eu-west1-c"
    assert one.service_account == "bookinfo-reviews"
    assert one.labels["version"] == "v1" and two.labels["version"] == "v2"
    assert one.labels["topology.kubernetes.io/zone"] == "eu-west1-b"
    assert one.labels["kubernetes.io/hostname"] == "node-a"
    assert one.labels["topology.istio.io/cluster"] == "Kubernetes"
    assert h.registry.namespace_labels(NS)["team"] == "shop"
    assert h.updates == []  # the initial load is returned, not announced


def test_unready_pod_is_removed_by_an_endpoint_only_update() -> None:
    h = Harness()
    reviews_mesh(h)
    h.updates.clear()
    h.cluster.endpointslices.apply(
        endpoint_slice(
            "reviews-abc", NS, "reviews", [("http-api", 8080)],
            [("10.0.0.1", "reviews-1", True), ("10.0.0.2", "reviews-2", False)],
        )
    )  # fmt: skip
    assert h.updates == [RegistryUpdate(False, frozenset(), frozenset({REVIEWS}))]
    assert [e.address for e in h.index.endpoints(REVIEWS)] == ["10.0.0.1"]
    # the same slice again changes nothing and announces nothing
    h.updates.clear()
    h.cluster.endpointslices.apply(h.cluster.endpointslices.get(NS, "reviews-abc"))
    assert h.updates == []


def test_pod_label_and_node_changes_are_endpoint_only() -> None:
    h = Harness()
    reviews_mesh(h)
    h.updates.clear()
    h.cluster.pods.apply(
        pod("reviews-1", NS, "10.0.0.1", {"app": "reviews", "version": "v3"},
            service_account="bookinfo-reviews", node="node-a")
    )  # fmt: skip
    h.cluster.nodes.apply(node("node-b", "us-east1", "us-east1-a"))
    assert [u.full for u in h.updates] == [False, False]
    one, two = h.index.endpoints(REVIEWS)
    assert one.labels["version"] == "v3"
    assert two.locality == "us-east1/us-east1-a"
    # a Pod status change that the endpoints do not show announces nothing
    h.updates.clear()
    h.cluster.pods.apply(
        pod("reviews-1", NS, "10.0.0.1", {"app": "reviews", "version": "v3"},
            service_account="bookinfo-reviews", node="node-a", ready=False)
    )  # fmt: skip
    assert h.updates == []


def test_endpoint_waits_for_its_pod() -> None:
    h = Harness()
    c = h.cluster
    c.services.apply(service("reviews", NS, [{"name": "http", "port": 9080}]))
    c.endpointslices.apply(
        endpoint_slice("reviews-abc", NS, "reviews", [("http", 9080)],
                       [("10.0.0.9", "reviews-9", True), ("10.0.0.8", None, True)])
    )  # fmt: skip
    # the Pod-less entry is kept, the one naming an unknown Pod waits for it
    assert [e.address for e in h.index.endpoints(REVIEWS)] == ["10.0.0.8"]
    h.updates.clear()
    c.pods.apply(pod("reviews-9", NS, "10.0.0.9", {"app": "reviews"}))
    assert [u.full for u in h.updates] == [False]
    assert [e.address for e in h.index.endpoints(REVIEWS)] == ["10.0.0.8", "10.0.0.9"]


def test_service_deletion_removes_service_and_endpoints_with_a_full_update() -> None:
    h = Harness()
    reviews_mesh(h)
    h.updates.clear()
    h.cluster.services.delete(NS, "reviews")
    assert h.updates == [RegistryUpdate(True, frozenset(), frozenset({REVIEWS}))]
    assert h.registry.services() == ()
    assert h.index.endpoints(REVIEWS) == ()
    # the slice is still there: the Service coming back brings its endpoints back
    h.cluster.services.apply(
        service("reviews", NS, [{"name": "http-api", "port": 9080}], selector={"app": "reviews"})
    )
    assert len(h.index.endpoints(REVIEWS)) == 2


def test_headless_service() -> None:
    h = Harness()
    h.cluster.services.apply(
        service("db", NS, [{"name": "tcp-pg", "port": 5432}], cluster_ip="None")
    )
    (svc,) = h.registry.services()
    assert svc.resolution is Resolution.NONE
    assert svc.addresses == ()
    assert svc.ports[0].protocol == "TCP"


def test_external_name_service_resolves_the_external_name() -> None:
    h = Harness()
    h.cluster.services.apply(
        service("payments", NS, [{"name": "https", "port": 443}], kind="ExternalName",
                external_name="payments.example.com")
    )  # fmt: skip
    key = ServiceKey("payments.shop.svc.cluster.local", NS)
    (svc,) = h.registry.services()
    assert svc.resolution is Resolution.DNS and svc.location is Location.MESH_EXTERNAL
    (endpoint,) = h.index.endpoints(key)
    assert (endpoint.address, endpoint.port, endpoint.service_port_name) == (
        "payments.example.com", 443, "https",
    )  # fmt: skip
    # a slice claiming to belong to it is ignored
    h.cluster.endpointslices.apply(
        endpoint_slice("payments-x", NS, "payments", [("https", 443)], [("10.1.1.1", None, True)])
    )
    assert [e.address for e in h.index.endpoints(key)] == ["payments.example.com"]


def test_port_protocols_as_istio_reads_them() -> None:
    cases = [
        ({"name": "http-web", "port": 80}, "HTTP"),
        ({"name": "HTTP2-x", "port": 80}, "HTTP2"),
        ({"name": "http2foo", "port": 80}, ""),
        ({"name": "grpc-web-x", "port": 80}, "GRPC-WEB"),
        ({"name": "grpc", "port": 80}, "GRPC"),
        ({"name": "tls-x", "port": 443}, "TLS"),
        ({"name": "web", "port": 80, "appProtocol": "kubernetes.io/h2c"}, "HTTP2"),
        ({"name": "web", "port": 80, "appProtocol": "kubernetes.io/ws"}, "HTTP"),
        ({"name": "http-x", "port": 80, "appProtocol": "mongo"}, "MONGO"),
        ({"name": "http", "port": 53, "protocol": "UDP"}, "UDP"),
        ({"name": "", "port": 3306}, "TCP"),
        ({"port": 8080}, ""),
    ]
    assert [port_protocol(port) for port, _ in cases] == [want for _, want in cases]


def test_export_to_annotation() -> None:
    h = Harness()
    h.cluster.services.apply(
        service("a", NS, [{"name": "http", "port": 80}],
                annotations={"networking.istio.io/exportTo": ".,istio-system"})
    )  # fmt: skip
    (svc,) = h.registry.services()
    assert svc.export_to == {NS, "istio-system"}
    assert not svc.is_exported_to("other")


def test_malformed_object_is_skipped_and_others_go_on() -> None:
    h = Harness()
    bad = service("bad", NS, [{"name": "http"}])  # a port without a number
    for handler in h.cluster.services._handlers:
        handler(KubeEvent(WatchEventType.ADDED, bad))
    h.cluster.services.apply(service("good", NS, [{"name": "http", "port": 80}]))
    assert [s.hostname for s in h.registry.services()] == ["good.shop.svc.cluster.local"]


def test_sidecar_node_id_is_matched_to_its_pod() -> None:
    h = Harness()
    reviews_mesh(h)
    proxy = parse_node("sidecar~10.0.0.1~reviews-1.shop~shop.svc.cluster.local")
    found = proxy_with_pod(h.registry, proxy)
    assert found.labels["app"] == "reviews" and found.labels["version"] == "v1"
    assert found.labels["topology.istio.io/subzone"] == "rack7"
    assert (found.metadata or {})["SERVICE_ACCOUNT"] == "bookinfo-reviews"
    assert found.locality == "eu-west1/eu-west1-b/rack7"
    # node metadata wins where given
    told = parse_node(
        "sidecar~10.0.0.1~reviews-1.shop~shop.svc.cluster.local",
        {"LABELS": {"version": "canary"}, "SERVICE_ACCOUNT": "other"},
    )
    found = proxy_with_pod(h.registry, told)
    assert found.labels["version"] == "canary" and found.labels["app"] == "reviews"
    assert (found.metadata or {})["SERVICE_ACCOUNT"] == "other"
    # another namespace in metadata, or an unknown pod: left as it came
    for other in (
        parse_node("sidecar~10.0.0.1~reviews-1.shop~shop.svc.cluster.local", {"NAMESPACE": "x"}),
        parse_node("sidecar~10.0.0.1~reviews-7.shop~shop.svc.cluster.local"),
    ):
        assert proxy_with_pod(h.registry, other) == other


def test_pod_locality_label_wins_over_its_node() -> None:
    h = Harness()
    reviews_mesh(h)
    h.cluster.pods.apply(
        pod("reviews-1", NS, "10.0.0.1",
            {"app": "reviews", "topology.istio.io/locality": "us-east1.us-east1-d.rack1"},
            service_account="bookinfo-reviews", node="node-a")
    )  # fmt: skip
    one, _ = h.index.endpoints(REVIEWS)
    assert one.locality == "us-east1/us-east1-d/rack1"
    assert one.labels["topology.kubernetes.io/region"] == "us-east1"


def test_pods_whose_view_changed_are_announced() -> None:
    h = Harness(load=False)
    cluster, heard = h.cluster, h.pods
    reviews_mesh(h)
    h.registry.initial_load()
    assert heard == []  # nothing before the initial load
    cluster.endpointslices.apply(
        endpoint_slice(
            "reviews-abc", NS, "reviews", [("http-api", 8080)],
            [("10.0.0.1", "reviews-1", True), ("10.0.0.2", "reviews-2", False)],
        )
    )  # fmt: skip
    cluster.pods.apply(pod("reviews-1", NS, "10.0.0.1", {"app": "reviews"}, node="node-a"))
    cluster.nodes.apply(node("node-b", "us-east1", "us-east1-a"))
    assert heard == [
        frozenset({(NS, "reviews-2")}),
        frozenset({(NS, "reviews-1")}),
        frozenset({(NS, "reviews-2")}),
    ]


def test_a_pod_in_two_slices_is_one_endpoint() -> None:
    h = Harness()
    reviews_mesh(h)
    h.updates.clear()
    h.cluster.endpointslices.apply(
        endpoint_slice("reviews-new", NS, "reviews", [("http-api", 8080)],
                       [("10.0.0.2", "reviews-2", True)])
    )  # fmt: skip
    assert h.updates == []  # the rollout's second slice adds nothing
    assert [e.address for e in h.index.endpoints(REVIEWS)] == ["10.0.0.1", "10.0.0.2"]
    h.cluster.endpointslices.delete(NS, "reviews-abc")
    assert [u.full for u in h.updates] == [False]
    assert [e.address for e in h.index.endpoints(REVIEWS)] == ["10.0.0.2"]


def test_feeds_by_resource_name() -> None:
    cluster = MemoryCluster()
    by_name = {feed.resource: feed for feed in cluster.feeds().all()}
    assert KubeFeeds.by_resource(by_name) == cluster.feeds()


def test_endpoints_of_a_headless_service_with_a_tcp_port_are_a_full_update() -> None:
    """Sidecars listen at a headless Service's endpoint addresses for its non-HTTP ports
    (lds_headless.py), so its endpoints changing is a full update, as istiod pushes it;
    a headless Service with only HTTP ports stays on the EDS path."""
    h = Harness()
    h.cluster.services.apply(
        service("db", NS, [{"name": "tcp-pg", "port": 5432}], cluster_ip="None")
    )
    h.cluster.services.apply(service("web", NS, [{"name": "http", "port": 80}], cluster_ip="None"))
    h.updates.clear()
    h.cluster.endpointslices.apply(
        endpoint_slice("db-1", NS, "db", [("tcp-pg", 5432)], [("10.0.0.7", None, True)])
    )
    h.cluster.endpointslices.apply(
        endpoint_slice("web-1", NS, "web", [("http", 80)], [("10.0.0.8", None, True)])
    )
    assert [(u.full, u.services) for u in h.updates] == [
        (True, frozenset({ServiceKey(f"db.{NS}.svc.cluster.local", NS)})),
        (False, frozenset({ServiceKey(f"web.{NS}.svc.cluster.local", NS)})),
    ]
