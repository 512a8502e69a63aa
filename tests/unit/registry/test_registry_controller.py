"""ServiceEntryRegistry: services kept from the store, and every change classified as
full, EDS-only or nothing."""

from __future__ import annotations

import dataclasses
import datetime
import math

from pilothouse.config.model import Config, ConfigKey
from pilothouse.push.changes import registry_request
from pilothouse.push.request import TriggerReason
from pilothouse.registry.model import SERVICE_KIND, Labels, ServiceKey
from pilothouse.registry.update import RegistryUpdate

from .registry_configs import Harness, load_one, service_entry, workload_entry

HTTP = "  ports: [{number: 80, name: http, protocol: HTTP}]\n"


def static_se(hosts: str, endpoints: str) -> str:
    return f"  hosts: [{hosts}]\n{HTTP}  resolution: STATIC\n  endpoints: {endpoints}\n"


def selector_se(hosts: str, selector: str) -> str:
    return (
        f"  hosts: [{hosts}]\n{HTTP}  resolution: STATIC\n"
        f"  workloadSelector: {{labels: {selector}}}\n"
    )


def addresses(harness: Harness, key: ServiceKey) -> list[str]:
    return [e.address for e in harness.registry.endpoints(key)]


A = ServiceKey("a.example.com", "default")
B = ServiceKey("b.example.com", "default")


def se_a(endpoints: str = "[{address: 1.1.1.1}]", ports: str = HTTP) -> Config:
    return service_entry(
        "a", f"  hosts: [a.example.com]\n{ports}  resolution: STATIC\n  endpoints: {endpoints}\n"
    )


def test_registry_initial_load_and_lookups() -> None:
    se = service_entry("two", f"  hosts: [b.example.com, a.example.com]\n{HTTP}  resolution: DNS\n")
    other_ns = service_entry("x", f"  hosts: [a.example.com]\n{HTTP}", namespace="zz")
    h = Harness(se, other_ns)
    assert h.updates == []  # initial_load does not call back
    assert h.initial is not None and h.initial.full
    assert h.initial.config_keys == {se.key, other_ns.key}
    assert h.initial.services == {A, B, ServiceKey("a.example.com", "zz")}
    assert [(s.hostname, s.namespace) for s in h.registry.services()] == [
        ("a.example.com", "default"),
        ("a.example.com", "zz"),
        ("b.example.com", "default"),
    ]
    assert h.registry.service(A) is not None
    assert h.registry.service(ServiceKey("nope", "default")) is None
    assert [s.namespace for s in h.registry.services_by_hostname("a.example.com")] == [
        "default",
        "zz",
    ]
    assert h.registry.services_by_hostname("nope") == ()
    assert addresses(h, A) == ["a.example.com"]
    # A second initial_load over the same store changes nothing.
    assert h.registry.initial_load() is None


def test_registry_has_synced_mirrors_the_store() -> None:
    h = Harness()
    assert h.initial is None
    assert not h.registry.has_synced()
    h.store.mark_synced()
    assert h.registry.has_synced()


def test_registry_service_level_change_is_full() -> None:
    h = Harness(se_a())
    version = h.registry.endpoint_index.version(A)
    ports = "  ports: [{number: 80, name: http, protocol: HTTP}, {number: 81, name: admin}]\n"
    (update,) = h.apply(se_a(ports=ports))
    assert update == RegistryUpdate(True, frozenset({se_a().key}), frozenset({A}))
    assert [p.number for p in h.registry.service(A).ports] == [80, 81]  # type: ignore[union-attr]
    # The new port got its endpoint too, in the same update.
    assert sorted(e.port for e in h.registry.endpoints(A)) == [80, 81]
    assert h.registry.endpoint_index.version(A) > version


def test_registry_every_service_level_field_is_full() -> None:
    base = static_se("a.example.com", "[{address: 1.1.1.1}]")
    variants = [
        base.replace("a.example.com", "c.example.com"),
        base.replace("protocol: HTTP", "protocol: HTTP2"),
        base + "  location: MESH_INTERNAL\n",
        base + "  addresses: [10.1.1.1]\n",
        base + "  exportTo: ['.']\n",
        base + "  subjectAltNames: [x]\n",
        f"  hosts: [a.example.com]\n{HTTP}  resolution: DNS\n  endpoints: [{{address: 1.1.1.1}}]\n",
        f"  hosts: [a.example.com]\n{HTTP}  resolution: STATIC\n"
        "  workloadSelector: {labels: {app: a}}\n",
    ]
    for variant in variants:
        h = Harness(service_entry("a", base))
        updates = h.apply(service_entry("a", variant))
        assert [u.full for u in updates] == [True], variant


def test_registry_endpoint_only_change_is_eds_only() -> None:
    se_b = service_entry("b", static_se("b.example.com", "[{address: 2.2.2.2}]"))
    h = Harness(se_a(), se_b)
    version_b = h.registry.endpoint_index.version(B)
    services_before = h.registry.services()
    (update,) = h.apply(se_a("[{address: 1.1.1.1}, {address: 1.1.1.9}]"))
    assert update == RegistryUpdate(False, frozenset({se_a().key}), frozenset({A}))
    assert addresses(h, A) == ["1.1.1.1", "1.1.1.9"]
    assert h.registry.services() is services_before  # no rebuild of services
    assert h.registry.endpoint_index.version(B) == version_b
    request = registry_request(update, start=5.0)
    assert not request.full
    assert request.configs_updated == {ConfigKey(SERVICE_KIND, "default", "a.example.com")}
    assert dict(request.reasons) == {TriggerReason.ENDPOINT: 1}
    assert request.start == 5.0


def test_registry_multi_host_endpoint_change_names_every_host() -> None:
    h = Harness(
        service_entry("m", static_se("a.example.com, b.example.com", "[{address: 1.1.1.1}]"))
    )
    (update,) = h.apply(
        service_entry("m", static_se("a.example.com, b.example.com", "[{address: 1.1.1.2}]"))
    )
    assert not update.full and update.services == {A, B}


def test_registry_no_visible_change_gives_no_update() -> None:
    h = Harness(se_a("[{address: 1.1.1.1}, {address: 1.1.1.2}]"))
    version = h.registry.endpoint_index.version(A)
    # Metadata label change: an UPDATE event, but nothing the registry shows changes.
    assert (
        h.apply(
            service_entry(
                "a",
                f"  hosts: [a.example.com]\n{HTTP}  resolution: STATIC\n"
                "  endpoints: [{address: 1.1.1.1}, {address: 1.1.1.2}]\n",
                labels="{team: x}",
            )
        )
        == []
    )
    # Reordering the inline endpoints changes nothing either.
    assert h.apply(se_a("[{address: 1.1.1.2}, {address: 1.1.1.1}]")) == []
    assert h.registry.endpoint_index.version(A) == version


def test_registry_other_kinds_are_ignored() -> None:
    h = Harness()
    vs = load_one(
        """
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: v, namespace: default}
spec:
  hosts: [a.example.com]
  http: [{route: [{destination: {host: a.example.com}}]}]
"""
    )
    assert h.apply(vs) == []


def test_registry_delete_service_entry_is_full_and_drops_endpoints() -> None:
    h = Harness(se_a())
    (update,) = h.delete(se_a())
    assert update.full and update.services == {A} and update.config_keys == {se_a().key}
    assert h.registry.services() == ()
    assert h.registry.endpoints(A) == ()
    request = registry_request(update)
    assert request.full and math.isinf(request.start)
    assert request.configs_updated == {se_a().key, A.config_key}
    assert dict(request.reasons) == {TriggerReason.SERVICE: 1}


def bare(update: RegistryUpdate) -> RegistryUpdate:
    """The update without its workloads (see :func:`at`)."""
    return dataclasses.replace(update, workloads=frozenset())


def at(update: RegistryUpdate) -> set[tuple[str, str]]:
    """Where the update's WorkloadEntries were and are: (namespace, address)."""
    return {(workload.namespace, workload.address) for workload in update.workloads}


def test_registry_workload_entry_add_update_delete_is_eds_only() -> None:
    se = service_entry("sel", selector_se("a.example.com", "{app: a}"))
    h = Harness(se)
    assert h.registry.endpoints(A) == ()
    we = workload_entry("vm1", "  address: 3.3.3.3\n  labels: {app: a}")
    services_before = h.registry.services()
    (added,) = h.apply(we)
    assert h.registry.services() is services_before  # the EDS path leaves services alone
    assert bare(added) == RegistryUpdate(False, frozenset({we.key}), frozenset({A}))
    # each update names the entry as it was and is (its sidecars are found by them)
    assert at(added) == {("default", "3.3.3.3")}
    assert addresses(h, A) == ["3.3.3.3"]
    (updated,) = h.apply(workload_entry("vm1", "  address: 3.3.3.4\n  labels: {app: a}"))
    assert bare(updated) == RegistryUpdate(False, frozenset({we.key}), frozenset({A}))
    assert at(updated) == {("default", "3.3.3.3"), ("default", "3.3.3.4")}
    assert addresses(h, A) == ["3.3.3.4"]
    (deleted,) = h.delete(we)
    assert bare(deleted) == RegistryUpdate(False, frozenset({we.key}), frozenset({A}))
    assert at(deleted) == {("default", "3.3.3.4")}
    assert h.registry.endpoints(A) == ()
    assert h.registry.selected_workloads(se.key) == ()


def test_registry_service_entry_update_names_the_workloads_selected_before_and_after() -> None:
    h = Harness(
        service_entry("sel", selector_se("a.example.com", "{app: a}")),
        workload_entry("vm-a", "  address: 3.3.3.3\n  labels: {app: a}"),
        workload_entry("vm-b", "  address: 4.4.4.4\n  labels: {app: b}"),
        workload_entry("vm-c", "  address: 5.5.5.5\n  labels: {app: c}"),
    )
    (reselected,) = h.apply(service_entry("sel", selector_se("a.example.com", "{app: b}")))
    assert reselected.full
    assert at(reselected) == {("default", "3.3.3.3"), ("default", "4.4.4.4")}


def test_registry_unselected_workload_entry_gives_no_update() -> None:
    h = Harness(service_entry("sel", selector_se("a.example.com", "{app: a}")))
    assert h.apply(workload_entry("vm", "  address: 3.3.3.3\n  labels: {app: b}")) == []
    # Same labels and address in another namespace: not selected either.
    assert h.apply(workload_entry("vm", "  address: 3.3.3.3\n  labels: {app: a}", "other")) == []
    assert h.registry.endpoints(A) == ()


def test_registry_workload_label_change_moves_it_between_services() -> None:
    h = Harness(
        service_entry("sa", selector_se("a.example.com", "{app: a}")),
        service_entry("sb", selector_se("b.example.com", "{app: b}")),
        workload_entry("vm", "  address: 4.4.4.4\n  labels: {app: a}"),
    )
    assert addresses(h, A) == ["4.4.4.4"] and addresses(h, B) == []
    (update,) = h.apply(workload_entry("vm", "  address: 4.4.4.4\n  labels: {app: b}"))
    assert not update.full and update.services == {A, B}
    assert addresses(h, A) == [] and addresses(h, B) == ["4.4.4.4"]
    # Metadata labels count too (and win over spec labels).
    (update,) = h.apply(
        workload_entry("vm", "  address: 4.4.4.4\n  labels: {app: b}", labels="{app: a}")
    )
    assert update.services == {A, B}
    assert addresses(h, A) == ["4.4.4.4"] and addresses(h, B) == []


def test_registry_selector_change_reselects_workloads() -> None:
    h = Harness(
        service_entry("sel", selector_se("a.example.com", "{app: a}")),
        workload_entry("vm1", "  address: 5.5.5.1\n  labels: {app: a}"),
        workload_entry("vm2", "  address: 5.5.5.2\n  labels: {app: b}"),
    )
    assert addresses(h, A) == ["5.5.5.1"]
    (update,) = h.apply(service_entry("sel", selector_se("a.example.com", "{app: b}")))
    assert update.full and update.services == {A}
    assert addresses(h, A) == ["5.5.5.2"]
    # An empty selector selects every workload of the namespace.
    h.apply(service_entry("sel", selector_se("a.example.com", "{}")))
    assert addresses(h, A) == ["5.5.5.1", "5.5.5.2"]


def test_registry_workload_selected_by_two_service_entries() -> None:
    h = Harness(
        service_entry("sa", selector_se("a.example.com", "{app: x}")),
        service_entry("sb", selector_se("b.example.com", "{tier: web}")),
    )
    (update,) = h.apply(workload_entry("vm", "  address: 6.6.6.6\n  labels: {app: x, tier: web}"))
    assert update.services == {A, B}
    (update,) = h.apply(workload_entry("vm", "  address: 6.6.6.6\n  labels: {app: x}"))
    # B loses it; A keeps it, with the endpoint's labels changed (so A changes too).
    assert update.services == {A, B}
    assert addresses(h, A) == ["6.6.6.6"] and addresses(h, B) == []
    (endpoint,) = h.registry.endpoints(A)
    assert endpoint.labels == Labels.of({"app": "x"})


def test_registry_same_host_in_two_service_entries() -> None:
    older = load_one(
        f"""
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: z-old, namespace: default, creationTimestamp: "2020-01-01T00:00:00Z"}}
spec:
  hosts: [a.example.com]
{HTTP}  resolution: STATIC
  endpoints: [{{address: 1.0.0.1}}]
"""
    )
    newer = load_one(
        """
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: a-new, namespace: default, creationTimestamp: "2021-01-01T00:00:00Z"}
spec:
  hosts: [a.example.com]
  ports: [{number: 8080, name: http}]
  resolution: STATIC
  endpoints: [{address: 1.0.0.2}]
"""
    )
    h = Harness(newer, older)
    service = h.registry.service(A)
    assert service is not None and service.source == older.key  # the oldest wins
    assert service.creation_time == datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    assert addresses(h, A) == ["1.0.0.2", "1.0.0.1"]  # both served, shard order
    (update,) = h.delete(older)
    assert update.full
    service = h.registry.service(A)
    assert service is not None and service.source == newer.key
    assert addresses(h, A) == ["1.0.0.2"]


def test_registry_service_entry_labels_in_index() -> None:
    h = Harness(
        se_a(
            "[{address: 1.1.1.1, labels: {version: v1}}, {address: 1.1.1.2, labels: {version: v2}}]"
        )
    )
    index = h.registry.endpoint_index
    assert [e.address for e in index.endpoints_for(A, "http", Labels.of({"version": "v2"}))] == [
        "1.1.1.2"
    ]


def test_registry_endpoint_change_of_a_dns_service_is_full() -> None:
    """A DNS service's endpoints travel inside its clusters (STRICT_DNS / LOGICAL_DNS
    ``load_assignment``), which the EDS fast path does not resend: full, as istiod does.
    Found by the warm-equals-cold fuzz at ``make fuzz`` budget."""
    for resolution in ("DNS", "DNS_ROUND_ROBIN"):
        se = service_entry(
            "sel",
            f"  hosts: [a.example.com]\n{HTTP}  resolution: {resolution}\n"
            "  workloadSelector: {labels: {app: a}}\n",
        )
        h = Harness(se)
        we = workload_entry("vm1", "  address: 3.3.3.3\n  labels: {app: a}")
        (added,) = h.apply(we)
        assert bare(added) == RegistryUpdate(True, frozenset({we.key}), frozenset({A}))
        assert at(added) == {("default", "3.3.3.3")}, resolution
        (moved,) = h.apply(workload_entry("vm1", "  address: 3.3.3.3\n  labels: {app: b}"))
        assert moved.full and moved.services == {A}, resolution

    def dns_se(address: str) -> Config:
        spec = f"  hosts: [a.example.com]\n{HTTP}  resolution: DNS\n"
        return service_entry("dns", spec + f"  endpoints: [{{address: {address}}}]\n")

    h = Harness(dns_se("x.io"))
    (changed,) = h.apply(dns_se("y.io"))
    assert changed.full
