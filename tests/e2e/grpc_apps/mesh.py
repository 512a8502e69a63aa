"""A small proxyless mesh for the tests: pilothouse in-process, tagged backends, client processes.

:class:`ProxylessMesh` owns an in-process control plane, the tagged backends of
:mod:`.backends` and the client processes it started, and stops them all in
``close()``. :func:`service_entry` writes the ServiceEntry of a gRPC service whose
endpoints are backends (``(tag, port, labels)``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pilothouse.xds.server.connection import Connection
from tests.e2e.grpc_apps.backends import Backends
from tests.e2e.grpc_apps.processes import GrpcProcess, proxyless_bootstrap
from tests.e2e.harness.control_plane import ControlPlane

SERVICE_PORT = 50051


def service_entry(
    name: str,
    endpoints: Iterable[tuple[int, dict[str, str]]],
    *,
    namespace: str = "default",
    port: int = SERVICE_PORT,
    extra: str = "",
) -> str:
    """A STATIC ServiceEntry ``<name>.<namespace>.svc.cluster.local`` with one GRPC port."""
    lines = [
        "apiVersion: networking.istio.io/v1",
        "kind: ServiceEntry",
        f"metadata: {{name: {name}, namespace: {namespace}}}",
        "spec:",
        f"  hosts: [{name}.{namespace}.svc.cluster.local]",
        "  location: MESH_INTERNAL",
        "  resolution: STATIC",
        f"  ports: [{{name: grpc, number: {port}, protocol: GRPC}}]",
        "  endpoints:",
    ]
    for endpoint_port, labels in endpoints:
        label_text = ", ".join(f"{k}: {v}" for k, v in sorted(labels.items()))
        lines.append(
            f"  - {{address: 127.0.0.1, ports: {{grpc: {endpoint_port}}}, "
            f"labels: {{{label_text}}}}}"
        )
    return "\n".join(lines) + "\n" + extra


@dataclass
class ProxylessMesh:
    """pilothouse, backends and proxyless client processes for one test."""

    directory: Path
    control_plane: ControlPlane = field(default_factory=ControlPlane)
    backends: Backends = field(default_factory=Backends)
    processes: list[GrpcProcess] = field(default_factory=list)

    async def start(self, port: int = 0) -> int:
        return await self.control_plane.start(port)

    def apply(self, text: str) -> None:
        self.control_plane.apply_yaml(text)

    async def client(self, pod: str = "client", namespace: str = "default") -> GrpcProcess:
        """A client process with its own bootstrap (node ``sidecar~…~pod.namespace~…``)."""
        bootstrap = proxyless_bootstrap(
            self.directory / f"{pod}.json", self.control_plane.port, pod, namespace
        )
        process = await GrpcProcess.start("client", bootstrap)
        self.processes.append(process)
        return process

    def connections_of(self, pod: str) -> list[Connection]:
        return [c for c in self.control_plane.connections() if c.proxy.pod_name == pod]

    def describe(self) -> str:
        return "\n".join(f"--- {p.log.name}\n{p.describe()}" for p in self.processes)

    async def close(self) -> None:
        for process in self.processes:
            await process.stop()
        await self.backends.close_all()
        await self.control_plane.stop()
