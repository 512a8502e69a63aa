"""The example mesh (examples/bookinfo) scaled up: N bookinfo namespaces and their proxies.

Every namespace ``bookinfo-<n>`` is a copy of the example: its ServiceEntries,
DestinationRules, VirtualServices, Gateway, Sidecar, PeerAuthentication and
WorkloadEntries, with the namespace and the hostnames renamed. What must differ
between copies so that they do not collide is made to differ:

- hosts: ``reviews.bookinfo.svc.cluster.local`` becomes ``reviews.bookinfo-3.svc...``,
  ``books.example.com`` becomes ``books.bookinfo-3.example.com``;
- the ingress Gateway and the VirtualService bound to it serve the site host
  ``bookinfo.bookinfo-3.example.com`` instead of ``*`` (200 Gateways all claiming ``*``
  on one port would be a conflict, not a mesh);
- workloads run as pods with their own IP (10.x.y.z): one WorkloadEntry per pod of a
  workload, and one inline endpoint per pod where the example lists endpoints inline
  (ratings).

The last namespace keeps only as many ServiceEntries as are needed to reach the
requested service count. The sidecars are spread over the namespaces and, inside a
namespace, over its workloads; a few ingress gateway routers run in ``istio-system``
and are selected by every namespace's Gateway. With the ``namespace`` view every
namespace also gets a default Sidecar (egress ``./*`` and ``istio-system/*``), the
usual way to keep a large mesh's sidecars small; with the ``mesh`` view there is none
and a sidecar sees every service (Istio's default outbound view). The example's own
productpage Sidecar is kept in both.

The change a benchmark applies is to one service: the ``reviews`` DestinationRule of
``bookinfo-0`` sets its connection-pool limit to ``100 + state``.
"""

from __future__ import annotations

import copy
import ipaddress
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pilothouse.loadtest.identity import ProxyFlavour, mesh_identity
from pilothouse.push.proxy import ProxyIdentity, parse_node

EXAMPLE_NAMESPACE = "bookinfo"
ROOT_NAMESPACE = "istio-system"
GATEWAY_LABELS: Mapping[str, str] = {"istio": "ingressgateway", "app": "istio-ingressgateway"}
VIEWS = ("namespace", "mesh")
CHANGED_RULE = "reviews"
CHANGED_NAMESPACE = f"{EXAMPLE_NAMESPACE}-0"
FIRST_POD_ADDRESS = int(ipaddress.IPv4Address("10.1.0.1"))
FIRST_GATEWAY_ADDRESS = int(ipaddress.IPv4Address("10.0.0.1"))


def namespace_name(index: int) -> str:
    return f"{EXAMPLE_NAMESPACE}-{index}"


def read_example(directory: Path) -> dict[str, list[dict[str, Any]]]:
    """The example's objects by file name, in file order (empty documents skipped)."""
    files: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(directory.glob("*.yaml")):
        documents = yaml.safe_load_all(path.read_text(encoding="utf-8"))
        files[path.name] = [d for d in documents if d]
    return files


def rename_hosts(value: Any, namespace: str) -> Any:
    """``value`` with every example hostname moved into ``namespace``."""
    if isinstance(value, str):
        internal = f".{EXAMPLE_NAMESPACE}.svc."
        if internal in value:
            return value.replace(internal, f".{namespace}.svc.")
        if value.endswith(".example.com"):
            return value.removesuffix(".example.com") + f".{namespace}.example.com"
        return value
    if isinstance(value, list):
        return [rename_hosts(v, namespace) for v in value]
    if isinstance(value, dict):
        return {k: rename_hosts(v, namespace) for k, v in value.items()}
    return value


def site_host(namespace: str) -> str:
    """The host a namespace's ingress Gateway serves in place of the example's ``*``."""
    return f"{EXAMPLE_NAMESPACE}.{namespace}.example.com"


def workload_names(example: Mapping[str, Sequence[Mapping[str, Any]]]) -> tuple[str, ...]:
    """The example's workloads (``app-version``): its WorkloadEntries and inline endpoints."""
    names: list[str] = []
    for documents in example.values():
        for document in documents:
            spec = document.get("spec", {})
            if document["kind"] == "WorkloadEntry":
                names.append(document["metadata"]["name"])
            elif document["kind"] == "ServiceEntry":
                names.extend(_workload_of(e.get("labels", {})) for e in spec.get("endpoints", ()))
    return tuple(dict.fromkeys(names))


def served_workloads(
    example: Mapping[str, Sequence[Mapping[str, Any]]], services: int
) -> tuple[str, ...]:
    """The workloads behind the first ``services`` ServiceEntries of the example: the
    WorkloadEntries their selectors pick, and their inline endpoints."""
    documents = [d for ds in example.values() for d in ds]
    entries = [d for d in documents if d["kind"] == "ServiceEntry"][: max(services, 0)]
    names: list[str] = []
    for entry in entries:
        spec = entry.get("spec", {})
        selector = spec.get("workloadSelector", {}).get("labels", {})
        if selector:
            names.extend(
                d["metadata"]["name"]
                for d in documents
                if d["kind"] == "WorkloadEntry"
                and d["metadata"].get("namespace") == entry["metadata"].get("namespace")
                and selector.items() <= d.get("spec", {}).get("labels", {}).items()
            )
        names.extend(_workload_of(e.get("labels", {})) for e in spec.get("endpoints", ()))
    return tuple(n for n in workload_names(example) if n in set(names))


def _workload_of(labels: Mapping[str, str]) -> str:
    return f"{labels.get('app', 'unknown')}-{labels.get('version', 'v1')}"


def spread(count: int, buckets: int) -> list[int]:
    """``count`` items over ``buckets`` as evenly as possible (the first ones get extra)."""
    if buckets <= 0:
        return []
    share, extra = divmod(count, buckets)
    return [share + (1 if i < extra else 0) for i in range(buckets)]


def address(number: int) -> str:
    return str(ipaddress.IPv4Address(number))


@dataclass(frozen=True)
class Pod:
    """One sidecar-carrying pod: which workload it runs, where, under what name."""

    namespace: str
    workload: str
    name: str
    ip: str

    @property
    def app(self) -> str:
        return self.workload.rsplit("-", 1)[0]

    @property
    def version(self) -> str:
        return self.workload.rsplit("-", 1)[1] if "-" in self.workload else "v1"


@dataclass
class ScaledBookinfo:
    """The scaled mesh: its files' objects, its pods and gateway routers."""

    services: int
    view: str
    files: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    pods: list[Pod] = field(default_factory=list)
    routers: list[Pod] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        example: Mapping[str, Sequence[Mapping[str, Any]]],
        *,
        services: int,
        sidecars: int,
        gateways: int,
        view: str = "namespace",
    ) -> ScaledBookinfo:
        if view not in VIEWS:
            raise ValueError(f"view must be one of {', '.join(VIEWS)}, not {view!r}")
        per_namespace = sum(
            1 for documents in example.values() for d in documents if d["kind"] == "ServiceEntry"
        )
        if per_namespace == 0:
            raise ValueError("the example has no ServiceEntry to scale")
        namespaces = max(1, -(-services // per_namespace))
        mesh = cls(services=services, view=view)
        served = [
            served_workloads(example, min(per_namespace, services - n * per_namespace))
            for n in range(namespaces)
        ]
        with_workloads = [n for n in range(namespaces) if served[n]]
        pods_in = dict(zip(with_workloads, spread(sidecars, len(with_workloads)), strict=True))
        next_ip = FIRST_POD_ADDRESS
        for index in range(namespaces):
            namespace = namespace_name(index)
            keep = min(per_namespace, services - index * per_namespace)
            workloads = served[index]
            pods: dict[str, list[Pod]] = {w: [] for w in workloads}
            for workload, count in zip(
                workloads, spread(pods_in.get(index, 0), len(workloads)), strict=True
            ):
                for k in range(count):
                    pods[workload].append(
                        Pod(namespace, workload, f"{workload}-{k}", address(next_ip))
                    )
                    next_ip += 1
            for file_name, documents in example.items():
                objects = list(_replica(documents, namespace, pods, keep))
                if file_name == "sidecar.yaml" and view == "namespace":
                    objects.append(namespace_sidecar(namespace))
                mesh.files[f"{namespace}/{file_name}"] = objects
            mesh.pods.extend(p for w in workloads for p in pods[w])
        mesh.routers = [
            Pod(ROOT_NAMESPACE, "istio-ingressgateway", f"istio-ingressgateway-{k}", address(ip))
            for k, ip in enumerate(range(FIRST_GATEWAY_ADDRESS, FIRST_GATEWAY_ADDRESS + gateways))
        ]
        return mesh

    def service_count(self) -> int:
        return sum(len(d["spec"]["hosts"]) for d in self.objects() if d["kind"] == "ServiceEntry")

    def objects(self) -> Iterator[dict[str, Any]]:
        for documents in self.files.values():
            yield from documents

    def write(self, root: Path) -> None:
        for relative in self.files:
            self._write_file(root, relative)

    def set_state(self, root: Path, state: int) -> Path:
        """Set the changed DestinationRule's limit to ``100 + state``; returns the file."""
        for relative, documents in self.files.items():
            for document in documents:
                metadata = document["metadata"]
                if (
                    document["kind"] == "DestinationRule"
                    and metadata["name"] == CHANGED_RULE
                    and metadata["namespace"] == CHANGED_NAMESPACE
                ):
                    pool = document["spec"]["trafficPolicy"]["connectionPool"]
                    pool["tcp"]["maxConnections"] = 100 + state
                    return self._write_file(root, relative)
        raise LookupError(f"no DestinationRule {CHANGED_NAMESPACE}/{CHANGED_RULE} in the mesh")

    def _write_file(self, root: Path, relative: str) -> Path:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        text = yaml.safe_dump_all(self.files[relative], sort_keys=False)
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(path)
        return path

    def proxies(self) -> list[ProxyIdentity]:
        """Every sidecar, then the routers, parsed from their node as the server does."""
        identities = [
            mesh_identity(
                ProxyFlavour.SIDECAR,
                pod.ip,
                pod.name,
                pod.namespace,
                app=pod.app,
                extra_metadata={
                    "LABELS": {"app": pod.app, "version": pod.version},
                    "INTERCEPTION_MODE": "REDIRECT",
                },
            )
            for pod in self.pods
        ]
        identities.extend(
            mesh_identity(
                ProxyFlavour.ROUTER,
                router.ip,
                router.name,
                router.namespace,
                app=router.workload,
                extra_metadata={"LABELS": dict(GATEWAY_LABELS)},
            )
            for router in self.routers
        )
        return [
            parse_node(i.node_id, i.metadata, node_cluster=i.cluster, user_agent="envoy")
            for i in identities
        ]


def namespace_sidecar(namespace: str) -> dict[str, Any]:
    """The namespace's default Sidecar: its own services and the root namespace's."""
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "Sidecar",
        "metadata": {"name": "default", "namespace": namespace},
        "spec": {"egress": [{"hosts": ["./*", f"{ROOT_NAMESPACE}/*"]}]},
    }


def _replica(
    documents: Sequence[Mapping[str, Any]],
    namespace: str,
    pods: Mapping[str, Sequence[Pod]],
    keep_services: int,
) -> Iterator[dict[str, Any]]:
    services_seen = 0
    for original in documents:
        kind = original["kind"]
        if kind == "ServiceEntry":
            services_seen += 1
            if services_seen > keep_services:
                continue
        document: dict[str, Any] = rename_hosts(copy.deepcopy(dict(original)), namespace)
        document["metadata"]["namespace"] = namespace
        spec = document.setdefault("spec", {})
        if kind == "Gateway":
            for server in spec.get("servers", ()):
                server["hosts"] = [site_host(namespace) if h == "*" else h for h in server["hosts"]]
        elif kind == "VirtualService" and spec.get("gateways"):
            spec["hosts"] = [site_host(namespace) if h == "*" else h for h in spec["hosts"]]
        elif kind == "ServiceEntry" and spec.get("endpoints"):
            spec["endpoints"] = [
                {**endpoint, "address": pod.ip}
                for endpoint in spec["endpoints"]
                for pod in _pods_or_one(pods, _workload_of(endpoint.get("labels", {})), endpoint)
            ]
        if kind == "WorkloadEntry":
            name = document["metadata"]["name"]
            for pod in _pods_or_one(pods, name, spec):
                entry = copy.deepcopy(document)
                entry["metadata"]["name"] = pod.name
                entry["spec"]["address"] = pod.ip
                yield entry
            continue
        yield document


def _pods_or_one(
    pods: Mapping[str, Sequence[Pod]], workload: str, original: Mapping[str, Any]
) -> Sequence[Pod]:
    """The workload's pods; a workload without any keeps one endpoint (with no sidecar)."""
    found = pods.get(workload, ())
    if found:
        return found
    return (Pod("", workload, f"{workload}-0", str(original.get("address", "127.0.0.1"))),)
