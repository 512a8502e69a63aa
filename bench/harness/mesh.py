"""The mesh the push fan-out benchmark serves, written as a directory of Istio YAML files.

``services`` ServiceEntries spread over ``namespaces`` namespaces, each with a
DestinationRule and ``endpoints`` WorkloadEntries, one object per file so that a
trigger rewrites exactly one object. Nothing is exported narrowly and there is no
Sidecar, so every proxy sees every service: each holds one cluster and one
ClusterLoadAssignment per service.

The two triggers toggle between two states, so that every run is a real change:

- ``eds``: the first WorkloadEntry of service 0 moves between two addresses
  (an endpoint-only change: EDS for one cluster, no PushContext);
- ``cds``: the DestinationRule of service 0 switches its connection-pool limit
  (a full push: a new PushContext and CDS to every proxy).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PORT = 8080

SERVICE_ENTRY = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: {name}, namespace: {ns}}}
spec:
  hosts: [{host}]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{number: {port}, name: http, protocol: HTTP}}]
  workloadSelector: {{labels: {{app: {name}}}}}
"""

DESTINATION_RULE = """\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: {name}, namespace: {ns}}}
spec:
  host: {host}
  trafficPolicy:
    connectionPool: {{tcp: {{maxConnections: {max_connections}}}}}
    loadBalancer: {{simple: LEAST_REQUEST}}
"""

WORKLOAD_ENTRY = """\
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: {name}-{index}, namespace: {ns}}}
spec:
  address: {address}
  labels: {{app: {name}, version: v1}}
"""


@dataclass(frozen=True)
class FanoutMesh:
    """Where the mesh lives and its shape."""

    root: Path
    services: int
    namespaces: int
    endpoints: int

    @property
    def namespace_names(self) -> tuple[str, ...]:
        return tuple(f"ns-{n}" for n in range(self.namespaces))

    def namespace_of(self, service: int) -> str:
        return f"ns-{service % self.namespaces}"

    def host(self, service: int) -> str:
        return f"svc-{service}.{self.namespace_of(service)}.svc.cluster.local"

    def cluster(self, service: int) -> str:
        """The outbound cluster (and EDS) name of a service."""
        return f"outbound|{PORT}||{self.host(service)}"

    def write(self) -> None:
        """Write every file (state 0 of both triggers)."""
        for service in range(self.services):
            ns = self.namespace_of(service)
            name = f"svc-{service}"
            folder = self.root / ns
            folder.mkdir(parents=True, exist_ok=True)
            host = self.host(service)
            (folder / f"{name}.yaml").write_text(
                SERVICE_ENTRY.format(name=name, ns=ns, host=host, port=PORT), encoding="utf-8"
            )
            self._write_rule(service, 0)
            for index in range(self.endpoints):
                self._write_endpoint(service, index, endpoint_address(service, index, 0))

    def set_state(self, trigger: str, state: int) -> None:
        """Rewrite the one file the trigger owns into ``state`` (0 or 1)."""
        if trigger == "eds":
            self._write_endpoint(0, 0, endpoint_address(0, 0, state))
        elif trigger == "cds":
            self._write_rule(0, state)
        else:
            raise ValueError(f"unknown trigger {trigger!r}")

    def _write_rule(self, service: int, state: int) -> None:
        ns = self.namespace_of(service)
        name = f"svc-{service}"
        text = DESTINATION_RULE.format(
            name=name, ns=ns, host=self.host(service), max_connections=100 + state
        )
        _replace(self.root / ns / f"{name}-rule.yaml", text)

    def _write_endpoint(self, service: int, index: int, address: str) -> None:
        ns = self.namespace_of(service)
        name = f"svc-{service}"
        text = WORKLOAD_ENTRY.format(name=name, index=index, ns=ns, address=address)
        _replace(self.root / ns / f"{name}-we-{index}.yaml", text)


def endpoint_address(service: int, index: int, state: int) -> str:
    """A distinct address per (service, endpoint); state 1 moves it to other /16s."""
    return f"10.{100 + 50 * state + service // 250}.{service % 250}.{index % 250 + 1}"


def _replace(path: Path, text: str) -> None:
    """Write atomically (a rename), so the watcher never reads half a file."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
