"""The Kubernetes mesh the kube benchmarks share, as API objects and as the same mesh in
Istio files.

N Services in 10 namespaces, each selecting P Pods spread over 20 Nodes in 4 zones, one
EndpointSlice per Service, the Namespaces, and a Sidecar per namespace whose egress is its
own namespace and ``ns-0``. The same mesh as files: a ServiceEntry per Service selecting
its WorkloadEntries (one per Pod, with its labels, service account and locality).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pilothouse.loadtest.triggers import write_atomically
from tests import memory_kube as kube

NAMESPACES = 10
NODES = 20
ZONES = 4
REGION = "region-1"
PORT = 9080
TARGET_PORT = 8080
SHARED = "ns-0"
RESOURCES = {"Service": "services", "EndpointSlice": "endpointslices", "Pod": "pods",
             "Node": "nodes", "Namespace": "namespaces"}  # fmt: skip
"""The kinds the Kubernetes service registry watches, and their resource names."""


@dataclass(frozen=True)
class KubeMesh:
    """The mesh's shape and names, the same for both sides."""

    services: int
    pods: int

    def namespace(self, service: int) -> str:
        return f"ns-{service % NAMESPACES}"

    def name(self, service: int) -> str:
        return f"svc-{service}"

    def host(self, service: int) -> str:
        return f"{self.name(service)}.{self.namespace(service)}.svc.cluster.local"

    def cluster(self, service: int) -> str:
        return f"outbound|{PORT}||{self.host(service)}"

    def pod_name(self, service: int, index: int) -> str:
        return f"{self.name(service)}-{index}"

    def pod_ip(self, service: int, index: int) -> str:
        number = service * self.pods + index
        return f"10.{100 + number // 65536}.{(number >> 8) & 0xFF}.{number & 0xFF}"

    def node_of(self, service: int, index: int) -> int:
        return (service * self.pods + index) % NODES

    def zone(self, node: int) -> str:
        return f"zone-{node % ZONES}"

    def labels(self, service: int) -> dict[str, str]:
        return {"app": self.name(service), "version": "v1"}

    def flipped(self, count: int) -> list[int]:
        """Services of ``ns-0`` whose first Pod flips, one per flip pair."""
        return [i * NAMESPACES for i in range(count) if i * NAMESPACES < self.services]

    # -- the Kubernetes objects ----------------------------------------------------------

    def sidecars(self) -> list[dict[str, Any]]:
        return [
            {"apiVersion": "networking.istio.io/v1", "kind": "Sidecar",
             "metadata": {"name": "default", "namespace": f"ns-{n}"},
             "spec": {"egress": [{"hosts": sorted({"./*", f"{SHARED}/*"} - {f"ns-{n}/*"})}]}}
            for n in range(NAMESPACES)
        ]  # fmt: skip

    def pod(self, service: int, index: int, *, ready: bool) -> dict[str, Any]:
        return kube.pod(
            self.pod_name(service, index), self.namespace(service), self.pod_ip(service, index),
            self.labels(service), service_account=self.name(service),
            node=f"node-{self.node_of(service, index)}", ready=ready,
            container_ports=[{"name": "http-web", "containerPort": TARGET_PORT}],
        )  # fmt: skip

    def endpoint_slice(self, service: int, unready: frozenset[int]) -> dict[str, Any]:
        return kube.endpoint_slice(
            f"{self.name(service)}-abcde", self.namespace(service), self.name(service),
            [("http-web", TARGET_PORT)],
            [(self.pod_ip(service, k), self.pod_name(service, k), k not in unready)
             for k in range(self.pods)],
        )  # fmt: skip

    def kubernetes(self) -> list[dict[str, Any]]:
        objects = [kube.namespace(f"ns-{n}") for n in range(NAMESPACES)]
        objects += [kube.node(f"node-{n}", REGION, self.zone(n)) for n in range(NODES)]
        objects += self.sidecars()
        for s in range(self.services):
            objects.append(
                kube.service(
                    self.name(s), self.namespace(s), [{"name": "http-web", "port": PORT,
                                                       "targetPort": TARGET_PORT}],
                    selector={"app": self.name(s)},
                    cluster_ip=f"10.96.{s // 250}.{s % 250 + 1}",
                )
            )  # fmt: skip
            objects += [self.pod(s, k, ready=True) for k in range(self.pods)]
            objects.append(self.endpoint_slice(s, frozenset()))
        return objects

    # -- the same mesh as files ----------------------------------------------------------

    def service_entry(self, service: int) -> dict[str, Any]:
        return {
            "apiVersion": "networking.istio.io/v1", "kind": "ServiceEntry",
            "metadata": {"name": self.name(service), "namespace": self.namespace(service)},
            "spec": {"hosts": [self.host(service)],
                     "addresses": [f"10.96.{service // 250}.{service % 250 + 1}"],
                     "location": "MESH_INTERNAL", "resolution": "STATIC",
                     "ports": [{"number": PORT, "name": "http-web", "protocol": "HTTP",
                                "targetPort": TARGET_PORT}],
                     "workloadSelector": {"labels": {"app": self.name(service)}}},
        }  # fmt: skip

    def workload_entry(self, service: int, index: int) -> dict[str, Any]:
        node = self.node_of(service, index)
        return {
            "apiVersion": "networking.istio.io/v1", "kind": "WorkloadEntry",
            "metadata": {"name": self.pod_name(service, index),
                         "namespace": self.namespace(service)},
            "spec": {"address": self.pod_ip(service, index), "labels": self.labels(service),
                     "serviceAccount": self.name(service),
                     "locality": f"{REGION}/{self.zone(node)}"},
        }  # fmt: skip

    def workloads_file(self, root: Path, service: int) -> Path:
        return root / f"workloads-{self.name(service)}.yaml"

    def write_workloads(self, root: Path, service: int, unready: frozenset[int]) -> None:
        entries = [self.workload_entry(service, k) for k in range(self.pods) if k not in unready]
        write_atomically(self.workloads_file(root, service), yaml.safe_dump_all(entries))

    def write_files(self, root: Path) -> None:
        root.mkdir(parents=True)
        (root / "sidecars.yaml").write_text(yaml.safe_dump_all(self.sidecars()))
        for n in range(NAMESPACES):
            entries = [self.service_entry(s) for s in range(n, self.services, NAMESPACES)]
            (root / f"services-ns-{n}.yaml").write_text(yaml.safe_dump_all(entries))
        for s in range(self.services):
            self.write_workloads(root, s, frozenset())

    def by_resource(self) -> dict[str, list[dict[str, Any]]]:
        """The objects the service registry's informers list, by resource name."""
        out: dict[str, list[dict[str, Any]]] = {name: [] for name in RESOURCES.values()}
        for obj in self.kubernetes():
            if obj["kind"] in RESOURCES:
                out[RESOURCES[obj["kind"]]].append(obj)
        return out

    def files_text(self) -> str:
        """Every ServiceEntry and WorkloadEntry of the file mesh, as one YAML text."""
        return yaml.safe_dump_all(
            [self.service_entry(s) for s in range(self.services)]
            + [self.workload_entry(s, k) for s in range(self.services) for k in range(self.pods)]
        )
