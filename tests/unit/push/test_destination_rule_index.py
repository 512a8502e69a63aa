"""Which DestinationRule applies to a service: the index's lookup by host against a scan of
every rule in precedence order (the proxy's namespace, the service's, the root; exact hosts
before wildcards, then by key; selectors and exportTo honoured)."""

from __future__ import annotations

import random

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2
from pilothouse.config.mesh import MeshSettings, exported_to
from pilothouse.config.model import Config, ConfigKey, Origin
from pilothouse.push.hostnames import host_matches, resolve_host, specificity
from pilothouse.push.indexes import DestinationRuleIndex
from pilothouse.registry.model import Labels, Location, Resolution, Service

MESH = MeshSettings()
NAMESPACES = ("a", "b", MESH.root_namespace)
HOSTS = (
    "x.a.svc.cluster.local",
    "y.b.svc.cluster.local",
    "x",  # short: resolved in the rule's own namespace
    "*.a.svc.cluster.local",
    "*.svc.cluster.local",
    "*",
    "api.example.com",
    "*.example.com",
)
SERVICES = tuple(
    Service(host, namespace, (), Resolution.STATIC, Location.MESH_INTERNAL,
            ConfigKey("ServiceEntry", namespace, host))
    for host, namespace in (
        ("x.a.svc.cluster.local", "a"),
        ("y.b.svc.cluster.local", "b"),
        ("api.example.com", "a"),
        ("*.example.com", "b"),
        ("z.b.svc.cluster.local", "b"),
    )
)  # fmt: skip


def rule(index: int, chooser: random.Random) -> Config:
    spec = dr_pb2.DestinationRule(host=chooser.choice(HOSTS))
    if chooser.random() < 0.3:
        spec.export_to.append(chooser.choice((".", "*", "a", "b")))
    if chooser.random() < 0.2:
        spec.workload_selector.match_labels["app"] = chooser.choice(("web", "db"))
    namespace = chooser.choice(NAMESPACES)
    return Config("DestinationRule", f"r{index}", namespace, spec, origin=Origin("test"))


def scanned(
    rules: list[Config], proxy_namespace: str, service: Service, labels: Labels | None
) -> Config | None:
    """The rule a scan of every rule finds (the precedence the index must keep)."""
    order = sorted(
        rules,
        key=lambda c: (specificity(resolve_host(c.spec.host, c.namespace)), c.key),
    )
    seen: set[str] = set()
    for namespace in (proxy_namespace, service.namespace, MESH.root_namespace):
        if namespace in seen:
            continue
        seen.add(namespace)
        for config in (c for c in order if c.namespace == namespace):
            if not host_matches(resolve_host(config.spec.host, namespace), service.hostname):
                continue
            selector = config.spec.workload_selector.match_labels
            if config.spec.HasField("workload_selector") and (
                labels is None
                or namespace != proxy_namespace
                or not labels.matches(Labels.of(dict(selector)))
            ):
                continue
            if namespace != proxy_namespace and not exported_to(
                frozenset(config.spec.export_to),
                namespace,
                proxy_namespace,
                MESH.default_destination_rule_export_to,
            ):
                continue
            return config
    return None


def test_lookup_by_host_finds_what_a_scan_in_precedence_order_finds() -> None:
    chooser = random.Random(17)
    found = 0
    for _ in range(200):
        rules = [rule(i, chooser) for i in range(chooser.randint(1, 12))]
        index = DestinationRuleIndex(rules, MESH)
        for proxy_namespace in NAMESPACES:
            for service in SERVICES:
                for labels in (None, Labels.of({"app": "web"}), Labels.of({"app": "db"})):
                    expected = scanned(rules, proxy_namespace, service, labels)
                    assert index.lookup(proxy_namespace, service, labels) is expected
                    found += expected is not None
    assert found > 1000  # the cases do find rules, through every path
