"""istiod's ProxyUpdate for WorkloadEntries: a changed entry's own sidecars get a full push.

The store, the ServiceEntry registry and the push pipeline are real; the connections are
fakes of :class:`~pilothouse.push.target.ProxyWatches` (the pipeline only asks them who
they are and what they watch). Each step does what the discovery server does with a
registry update: the debounced request is planned (EDS to the watchers of the service),
and :meth:`PushPipeline.workloads_changed` names the sidecars pushed at once.
"""

from __future__ import annotations

import itertools
import math

from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.cache import ResourceCache
from pilothouse.push.own_sidecars import OwnSidecars, proxy_update
from pilothouse.push.pipeline import PushPipeline
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.push.request import PushRequest, TriggerReason
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.registry.model import NO_LABELS, Labels, Workload
from pilothouse.registry.update import RegistryUpdate
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.generators.api import watched_kinds

HOST = "app.shop.svc.cluster.local"
SERVICE = f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: app, namespace: shop}}
spec:
  hosts: [{HOST}]
  resolution: STATIC
  ports: [{{number: 8000, name: http, protocol: HTTP}}]
  workloadSelector: {{labels: {{app: shop-app}}}}
"""
VM = ConfigKey("WorkloadEntry", "shop", "vm")
SHOP_APP = Labels.of({"app": "shop-app"})


def workload_entry(address: str, port: int = 9000, app: str = "shop-app") -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: vm, namespace: shop}}
spec:
  address: {address}
  ports: {{http: {port}}}
  labels: {{app: {app}}}
"""


class Sidecar:
    """A connection as the pipeline sees it."""

    def __init__(self, connection_id: str, proxy: ProxyIdentity, hosts: frozenset[str]) -> None:
        self.id = connection_id
        self.proxy = proxy
        self._hosts = hosts

    def __repr__(self) -> str:
        return f"Sidecar({self.id})"

    def watched_types(self) -> list[str]:
        return []

    def watches_any_host(self, hostnames: frozenset[str]) -> bool:
        return not self._hosts.isdisjoint(hostnames)

    def watches_secrets(self, names: frozenset[str]) -> bool:
        return False


def sidecar(
    name: str,
    ip: str,
    namespace: str = "shop",
    *,
    kind: str = "sidecar",
    watching: frozenset[str] = frozenset({HOST}),
    instance_ips: str = "",
    labels: str = '{"app": "shop-app"}',
) -> Sidecar:
    """A proxy at ``ip`` in ``namespace`` with ``labels`` (the entry's, unless told)
    that watches the service's endpoints."""
    metadata = {"INSTANCE_IPS": instance_ips} if instance_ips else {}
    if labels:
        metadata["LABELS"] = labels
    node = parse_node(f"{kind}~{ip}~{name}.{namespace}~{namespace}.svc.cluster.local", metadata)
    return Sidecar(name, node, watching)


class Stage:
    """A store, the ServiceEntry registry and a started pipeline, driven as the server does."""

    def __init__(self, *configs: str) -> None:
        self.store = MemoryStore()
        for text in (SERVICE, *configs):
            self.store.apply(one(text))
        self.store.mark_synced()
        self.updates: list[RegistryUpdate] = []
        self.registry = ServiceEntryRegistry(self.store, self.updates.append)
        self.registry.initial_load()
        versions = (f"v{n}" for n in itertools.count(1))
        self.pipeline: PushPipeline[Sidecar] = PushPipeline(
            self.store,
            self.registry.services,
            MeshSettings(),
            ResourceCache(),
            next_version=lambda: next(versions),
            api_kinds=watched_kinds,
        )
        self.pipeline.start()
        self.last_plan: list[str] = []

    def connect(self, *connections: Sidecar) -> None:
        for connection in connections:
            self.pipeline.connect(connection)

    def change(self, text: str | None) -> tuple[dict[str, PushRequest], dict[str, PushRequest]]:
        """Apply ``text`` (None: delete the WorkloadEntry) and return what the server would queue:
        (pushed at once, by connection id; pushed after the debounce, by connection id)."""
        if text is None:
            self.store.delete(VM)
        else:
            self.store.apply(one(text))
        at_once: dict[str, PushRequest] = {}
        debounced: dict[str, PushRequest] = {}
        for update in self.updates:
            request = self.pipeline.registry_changed(update, 5.0)
            assert request is not None
            plan = self.pipeline.plan(request)
            assert plan is not None
            debounced.update((c.id, pushed) for c, pushed in plan.pushes)
            self.last_plan = [c.id for c, _ in plan.pushes]
            at_once.update(
                (c.id, pushed) for c, pushed in self.pipeline.workloads_changed(update, 5.0)
            )
        self.updates.clear()
        return at_once, debounced


def one(text: str) -> Config:
    (config,) = Loader(SCHEMAS).load_strict(text, "test.yaml")
    return config


def test_editing_an_entrys_ports_pushes_its_own_sidecar_in_full_and_others_eds_only() -> None:
    stage = Stage(workload_entry("10.0.0.7"))
    own, client = sidecar("vm", "10.0.0.7"), sidecar("client", "10.0.0.20")
    stage.connect(own, client)

    at_once, debounced = stage.change(workload_entry("10.0.0.7", port=9001))

    assert list(at_once) == ["vm"]
    assert at_once["vm"] == proxy_update([VM], 5.0)
    assert at_once["vm"].full and dict(at_once["vm"].reasons) == {TriggerReason.PROXY: 1}
    # the endpoint change itself: EDS only, for every proxy watching the service
    assert set(debounced) == {"vm", "client"}
    assert not any(request.full for request in debounced.values())


def test_an_unrelated_proxy_gets_no_full_push() -> None:
    """Same IP in another namespace, another IP in the namespace, a gateway at the IP,
    a proxy at the IP without the entry's labels (or any): none of them is the entry,
    and none has inbound ports from it (inbound.py's rule)."""
    stage = Stage(workload_entry("10.0.0.7"))
    other_namespace = sidecar("vm", "10.0.0.7", "elsewhere")
    other_ip = sidecar("web", "10.0.0.8")
    gateway = sidecar("ingress", "10.0.0.7", kind="router")
    other_labels = sidecar("client", "10.0.0.7", labels='{"app": "client"}')
    unlabelled = sidecar("sleep", "10.0.0.7", labels="")
    stage.connect(other_namespace, other_ip, gateway, other_labels, unlabelled)

    at_once, debounced = stage.change(workload_entry("10.0.0.7", port=9001))

    assert at_once == {}
    assert not any(request.full for request in debounced.values())


def test_an_address_change_pushes_the_sidecar_it_left_and_the_one_it_reached() -> None:
    stage = Stage(workload_entry("10.0.0.7"))
    old, new, bystander = (
        sidecar("a", "10.0.0.7"),
        sidecar("b", "10.0.0.8"),
        sidecar("c", "10.0.0.9"),
    )
    stage.connect(old, new, bystander)

    at_once, _ = stage.change(workload_entry("10.0.0.8"))
    assert sorted(at_once) == ["a", "b"]

    # from now on the entry is b alone
    at_once, _ = stage.change(workload_entry("10.0.0.8", port=9001))
    assert list(at_once) == ["b"]


def test_an_added_and_a_removed_entry_push_their_sidecar() -> None:
    stage = Stage()
    own, bystander = sidecar("vm", "10.0.0.7"), sidecar("client", "10.0.0.20")
    stage.connect(own, bystander)

    at_once, _ = stage.change(workload_entry("10.0.0.7"))
    assert list(at_once) == ["vm"]

    at_once, _ = stage.change(None)
    assert list(at_once) == ["vm"]


def test_a_label_edit_that_leaves_the_services_pushes_the_sidecar_it_leaves() -> None:
    """Relabelled out of the ServiceEntry's selector, the entry's endpoints go, and with
    them its sidecar's inbound port; relabelled among no selector at all, nothing moves."""
    stage = Stage(workload_entry("10.0.0.7"))
    stage.connect(sidecar("vm", "10.0.0.7"))

    at_once, _ = stage.change(workload_entry("10.0.0.7", app="other"))
    assert list(at_once) == ["vm"]

    at_once, debounced = stage.change(workload_entry("10.0.0.7", port=9001, app="other"))
    assert at_once == {} and debounced == {}  # no service selects it: nothing changed


def test_a_sidecar_with_several_addresses_is_found_by_any_of_them() -> None:
    stage = Stage(workload_entry("10.0.0.7"))
    stage.connect(sidecar("vm", "192.168.0.1", instance_ips="192.168.0.1,10.0.0.7"))

    at_once, _ = stage.change(workload_entry("10.0.0.7", port=9001))

    assert list(at_once) == ["vm"]


def test_a_disconnected_sidecar_is_no_longer_pushed() -> None:
    stage = Stage(workload_entry("10.0.0.7"))
    own = sidecar("vm", "10.0.0.7")
    stage.connect(own)
    stage.pipeline.disconnect(own)

    at_once, _ = stage.change(workload_entry("10.0.0.7", port=9001))

    assert at_once == {}


def test_nothing_at_once_for_a_full_update_or_before_the_first_context() -> None:
    """A full update builds a new context first; its scoped push reaches the sidecars."""
    stage = Stage(workload_entry("10.0.0.7"))
    stage.connect(sidecar("vm", "10.0.0.7"))
    at = frozenset({entry("10.0.0.7")})
    full = RegistryUpdate(True, frozenset({VM}), frozenset(), at)
    assert stage.pipeline.workloads_changed(full, 1.0) == ()

    unstarted: PushPipeline[Sidecar] = PushPipeline(
        stage.store,
        stage.registry.services,
        MeshSettings(),
        ResourceCache(),
        next_version=lambda: "v1",
        api_kinds=watched_kinds,
    )
    unstarted.connect(sidecar("vm", "10.0.0.7"))
    eds = RegistryUpdate(False, frozenset({VM}), frozenset(), at)
    assert unstarted.workloads_changed(eds, 1.0) == ()


HIDDEN = """\
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: shop}
spec:
  egress: [{hosts: ["elsewhere/*"]}]
"""


def test_a_service_entry_edit_reaches_the_sidecars_of_the_entries_it_selects() -> None:
    """A ServiceEntry's new port is a new inbound port of the workloads it selects. Their
    sidecars get the full push even when their Sidecar hides the ServiceEntry from them
    (which would leave them out of the scoped push); other proxies of that scope do not."""
    stage = Stage(HIDDEN, workload_entry("10.0.0.7"))
    own, other = sidecar("vm", "10.0.0.7"), sidecar("web", "10.0.0.8")
    stage.connect(own, other)

    at_once, planned = stage.change(
        SERVICE.replace(
            "protocol: HTTP}]", "protocol: HTTP}, {number: 8001, name: grpc, protocol: GRPC}]"
        )
    )

    assert at_once == {}  # a full update: the planned push carries it
    assert list(planned) == ["vm"]
    assert (
        planned["vm"].full
        and ConfigKey("ServiceEntry", "shop", "app") in planned["vm"].configs_updated
    )


def test_a_service_entry_edit_pushes_a_sidecar_that_sees_it_once() -> None:
    stage = Stage(workload_entry("10.0.0.7"))
    own, other = sidecar("vm", "10.0.0.7"), sidecar("web", "10.0.0.8")
    stage.connect(own, other)

    _, planned = stage.change(SERVICE.replace("number: 8000", "number: 8080"))

    assert sorted(planned) == ["vm", "web"]  # both see it; vm is not pushed twice
    assert len(stage.last_plan) == 2


def entry(address: str, labels: Labels = SHOP_APP) -> Workload:
    return Workload(VM, "shop", address, labels=labels)


def test_own_sidecars_index() -> None:
    """By proxy id for Pods; for WorkloadEntries by namespace, IP (written as parse_node
    writes it) and labels the proxy carries; an address that is not an IP, or an entry
    without labels, matches nobody."""
    index: OwnSidecars[Sidecar] = OwnSidecars()
    v6 = sidecar("v6", "2001:db8::1", labels='{"app": "shop-app", "version": "v1"}')
    pod = sidecar("reviews-1", "10.0.0.3")
    index.connect(v6)
    index.connect(pod)
    assert index.of([entry("2001:DB8:0::1")]) == [v6]
    assert index.of([entry("2001:db8::1", Labels.of({"app": "shop-app", "version": "v1"}))])
    assert index.of([entry("2001:db8::1", Labels.of({"version": "v2"}))]) == []
    assert index.of([entry("vm.example.com"), entry("10.0.0.3", NO_LABELS)]) == []
    assert index.with_proxy_ids(["reviews-1.shop", "gone.shop"]) == [pod]
    index.disconnect(pod)
    index.disconnect(pod)  # twice is harmless
    assert index.with_proxy_ids(["reviews-1.shop"]) == []
    assert index.of([entry("10.0.0.3")]) == []


def test_proxy_update_is_a_full_push_naming_the_workload() -> None:
    pod = ConfigKey("Pod", "shop", "reviews-1")
    request = proxy_update([pod])
    assert request.full and request.configs_updated == {pod}
    assert dict(request.reasons) == {TriggerReason.PROXY: 1} and math.isinf(request.start)
