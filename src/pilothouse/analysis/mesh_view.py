"""The whole config set as the analyzers read it: services, workloads and namespaces.

Built once per analysis from the Istio objects and, when they are at hand (files given
to ``analyze``), the plain Kubernetes objects beside them: a Service is a service
(``name.namespace.svc.<domain suffix>``) selecting Pods by labels; a Pod, a Deployment's
(or StatefulSet's, DaemonSet's) pod template, a WorkloadEntry, a WorkloadGroup's
template and a ServiceEntry's inline endpoint are workloads. Host names follow
:mod:`pilothouse.push.hostnames` (short names read in the namespace of the config that
wrote them; ``*`` and ``*.suffix`` wildcards).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config
from pilothouse.push.hostnames import host_matches, resolve_host

WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"})
"""Plain Kubernetes kinds whose ``spec.template`` is a pod template."""


@dataclass(frozen=True, slots=True)
class Workload:
    """Something a selector can select: a name to show, its namespace and labels."""

    name: str
    namespace: str
    labels: Mapping[str, str]

    def carries(self, selector: Mapping[str, str]) -> bool:
        return all(self.labels.get(k) == v for k, v in selector.items())


@dataclass(frozen=True, slots=True)
class Service:
    """One host of a ServiceEntry or one Kubernetes Service, with what backs it."""

    hostname: str
    namespace: str
    ports: tuple[int, ...]
    selector: Mapping[str, str] | None
    """Labels of the workloads behind it in its namespace (None: it selects none)."""
    endpoints: tuple[Workload, ...] = ()
    """Inline endpoints (a ServiceEntry's ``endpoints``)."""
    endpoints_unknown: bool = False
    """Its endpoints cannot be known here (found by DNS, or a Service without selector)."""
    target_ports: tuple[int | str, ...] | None = None
    """A Kubernetes Service's target ports (numbers or port names; a port without one
    targets its own number); None for a ServiceEntry."""


@dataclass(frozen=True, slots=True)
class MeshView:
    """Every object of the analysis, and what is derived from them once."""

    configs: tuple[Config, ...]
    services: tuple[Service, ...]
    workloads: tuple[Workload, ...]
    namespaces: frozenset[str]
    mesh: MeshSettings = field(default_factory=MeshSettings)
    by_kind: Mapping[str, tuple[Config, ...]] = field(default_factory=dict)
    by_host: Mapping[str, tuple[Service, ...]] = field(default_factory=dict)
    workloads_by_label: Mapping[tuple[str | None, str, str], tuple[Workload, ...]] = field(
        default_factory=dict
    )
    """Workloads by (namespace, label, value), and by (None, label, value) in any
    namespace: a selector's candidates without a walk over every workload."""
    mesh_known: bool = False
    """Whether ``mesh`` is the mesh config in force (``serve``) rather than the defaults
    (``analyze`` over files): checks against the mesh config run only when it is."""

    def of_kind(self, kind: str) -> tuple[Config, ...]:
        return self.by_kind.get(kind, ())

    def resolve(self, host: str, namespace: str) -> str:
        return resolve_host(host, namespace, self.mesh.domain_suffix)

    def services_for(self, host: str) -> tuple[Service, ...]:
        """The services a (resolved) host names: the one of that name, else those a
        wildcard host covers or whose wildcard host covers it."""
        exact = self.by_host.get(host)
        if exact:
            return exact
        return tuple(
            service
            for service in self.services
            if host_matches(host, service.hostname) or host_matches(service.hostname, host)
        )

    def close_hosts(self, host: str) -> list[str]:
        """Known service hosts spelled like ``host`` (for a did-you-mean): the first label
        compared among hosts of the same domain, else the whole name, closely (a long
        shared ``.svc.cluster.local`` makes any two names look alike)."""
        known = [h for h in self.by_host if not h.startswith("*")]
        label, _, rest = host.partition(".")
        beside = [h.partition(".")[0] for h in known if h.partition(".")[2] == rest]
        close = difflib.get_close_matches(label, beside, n=1, cutoff=0.75)
        if close:
            return [f"{close[0]}.{rest}" if rest else close[0]]
        return difflib.get_close_matches(host, known, n=1, cutoff=0.92)

    def workloads_in(self, namespace: str | None, selector: Mapping[str, str]) -> list[Workload]:
        """The workloads of ``namespace`` (any, when None) carrying every label of
        ``selector``."""
        if not selector:
            return [w for w in self.workloads if namespace is None or w.namespace == namespace]
        label, value = next(iter(selector.items()))
        among = self.workloads_by_label.get((namespace, label, value), ())
        return [w for w in among if w.carries(selector)]

    def backing(self, service: Service) -> list[Workload]:
        """The workloads behind a service: its inline endpoints and those it selects."""
        found = list(service.endpoints)
        if service.selector:
            found += self.workloads_in(service.namespace, service.selector)
        return found


def mesh_view(
    configs: Iterable[Config],
    plain: Iterable[Mapping[str, Any]] = (),
    *,
    default_namespace: str = "default",
    mesh: MeshSettings | None = None,
) -> MeshView:
    """The view of ``configs`` and the plain Kubernetes objects ``plain`` (raw dicts)."""
    mesh_known = mesh is not None
    mesh = mesh or MeshSettings()
    configs = tuple(sorted(configs, key=lambda c: c.key))
    by_kind: dict[str, list[Config]] = {}
    services: list[Service] = []
    workloads: list[Workload] = []
    namespaces = {mesh.root_namespace}
    for config in configs:
        by_kind.setdefault(config.kind, []).append(config)
        namespaces.add(config.namespace)
        if config.kind == "ServiceEntry":
            services += _service_entry(config, mesh)
            workloads += _inline_endpoints(config)
        elif config.kind == "WorkloadEntry":
            labels = dict(getattr(config.spec, "labels", {}))
            workloads.append(
                Workload(f"{config.namespace}/{config.name}", config.namespace, labels)
            )
        elif config.kind == "WorkloadGroup":
            spec: Any = config.spec
            labels = dict(spec.metadata.labels) or dict(spec.template.labels)
            workloads.append(
                Workload(f"{config.namespace}/{config.name}", config.namespace, labels)
            )
    for data in plain:
        kind, namespace, name = _identity(data, default_namespace)
        if kind == "Namespace":
            namespaces.add(name)
            continue
        namespaces.add(namespace)
        spec = data.get("spec") if isinstance(data.get("spec"), Mapping) else {}
        if kind == "Service":
            services.append(_kubernetes_service(name, namespace, spec, mesh))
        elif kind == "Pod":
            labels = _labels(data.get("metadata"))
            workloads.append(Workload(f"{namespace}/{name}", namespace, labels))
        elif kind in WORKLOAD_KINDS:
            template = spec.get("template") if isinstance(spec.get("template"), Mapping) else {}
            labels = _labels(template.get("metadata"))
            workloads.append(Workload(f"{namespace}/{name}", namespace, labels))
    by_host: dict[str, list[Service]] = {}
    for service in services:
        by_host.setdefault(service.hostname, []).append(service)
    by_label: dict[tuple[str | None, str, str], list[Workload]] = {}
    for workload in workloads:
        for label, value in workload.labels.items():
            by_label.setdefault((workload.namespace, label, value), []).append(workload)
            by_label.setdefault((None, label, value), []).append(workload)
    return MeshView(
        configs,
        tuple(services),
        tuple(workloads),
        frozenset(namespaces),
        mesh,
        {kind: tuple(found) for kind, found in by_kind.items()},
        {host: tuple(found) for host, found in by_host.items()},
        {where: tuple(found) for where, found in by_label.items()},
        mesh_known,
    )


def _service_entry(config: Config, mesh: MeshSettings) -> list[Service]:
    spec: Any = config.spec
    ports = tuple(sorted({p.number for p in spec.ports}))
    selector = dict(spec.workload_selector.labels) if spec.HasField("workload_selector") else None
    endpoints = tuple(_inline_endpoints(config))
    dns = spec.resolution in (2, 3)  # DNS, DNS_ROUND_ROBIN
    return [
        Service(
            resolve_host(host, config.namespace, mesh.domain_suffix),
            config.namespace,
            ports,
            selector,
            endpoints,
            endpoints_unknown=dns and not endpoints,
        )
        for host in spec.hosts
    ]


def _inline_endpoints(config: Config) -> list[Workload]:
    spec: Any = config.spec
    return [
        Workload(
            f"{config.namespace}/{config.name} endpoint {e.address or index}",
            config.namespace,
            dict(e.labels),
        )
        for index, e in enumerate(spec.endpoints)
    ]


def _kubernetes_service(
    name: str, namespace: str, spec: Mapping[str, Any], mesh: MeshSettings
) -> Service:
    ports: list[Any] = spec["ports"] if isinstance(spec.get("ports"), list) else []
    numbers = tuple(
        sorted(
            {p["port"] for p in ports if isinstance(p, Mapping) and isinstance(p.get("port"), int)}
        )
    )
    raw_selector = spec.get("selector")
    selector = (
        {str(k): str(v) for k, v in raw_selector.items()}
        if isinstance(raw_selector, Mapping)
        else None
    )
    external = spec.get("type") == "ExternalName"
    targets: list[int | str] = []
    for port in ports:
        if isinstance(port, Mapping):
            target = port.get("targetPort", port.get("port"))
            if isinstance(target, int | str) and not isinstance(target, bool):
                targets.append(target)
    return Service(
        f"{name}.{namespace}.svc.{mesh.domain_suffix}",
        namespace,
        numbers,
        selector,
        endpoints_unknown=external or not selector,
        target_ports=tuple(targets),
    )


def _identity(data: Mapping[str, Any], default_namespace: str) -> tuple[str, str, str]:
    metadata: Mapping[str, Any] = (
        data["metadata"] if isinstance(data.get("metadata"), Mapping) else {}
    )
    return (
        str(data.get("kind", "")),
        str(metadata.get("namespace") or default_namespace),
        str(metadata.get("name", "")),
    )


def _labels(metadata: Any) -> dict[str, str]:
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("labels"), Mapping):
        return {}
    return {str(k): str(v) for k, v in metadata["labels"].items()}
