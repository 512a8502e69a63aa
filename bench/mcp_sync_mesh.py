"""The MCP sync benchmark's mesh: N ServiceEntries, as files on disk and as plain data.

Each ServiceEntry is what a real mesh registers for a VM workload: a host, two ports
(HTTP and gRPC), two inline endpoints with their own labels and a locality, and
metadata labels. ``write_mesh`` spreads them over ``files`` YAML files (the source
pilothouse reads them); ``service_entry`` gives the same object as a dict (the
benchmark process and the transport floor build their copies from it without
parsing YAML, which at 100,000 objects would take minutes).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

NAMESPACES = 50

TEMPLATE = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: svc-{i}
  namespace: ns-{ns}
  labels: {{app: svc-{i}, team: team-{team}}}
spec:
  hosts: [svc-{i}.ns-{ns}.example.internal]
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
  - {{number: 8080, name: http, protocol: HTTP}}
  - {{number: 9090, name: grpc, protocol: GRPC}}
  endpoints:
  - address: {first}
    ports: {{http: 8080, grpc: 9090}}
    labels: {{version: v1}}
    locality: region-a/zone-{zone}
  - address: {second}
    ports: {{http: 8080, grpc: 9090}}
    labels: {{version: v2}}
    locality: region-a/zone-{zone}
"""


def _address(n: int) -> str:
    return f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


def _fields(i: int) -> dict[str, Any]:
    return {
        "i": i,
        "ns": i % NAMESPACES,
        "team": i % 7,
        "zone": i % 3,
        "first": _address(2 * i + 1),
        "second": _address(2 * i + 2),
    }


def service_entry_text(i: int) -> str:
    """ServiceEntry number ``i`` as YAML."""
    return TEMPLATE.format(**_fields(i))


def service_entry(i: int) -> dict[str, Any]:
    """ServiceEntry number ``i`` as the dict its YAML parses to."""
    f = _fields(i)
    name, ns = f"svc-{i}", f"ns-{f['ns']}"
    ports = {"http": 8080, "grpc": 9090}
    locality = f"region-a/zone-{f['zone']}"
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "ServiceEntry",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {"app": name, "team": f"team-{f['team']}"},
        },
        "spec": {
            "hosts": [f"{name}.{ns}.example.internal"],
            "location": "MESH_INTERNAL",
            "resolution": "STATIC",
            "ports": [
                {"number": 8080, "name": "http", "protocol": "HTTP"},
                {"number": 9090, "name": "grpc", "protocol": "GRPC"},
            ],
            "endpoints": [
                {
                    "address": f["first"],
                    "ports": dict(ports),
                    "labels": {"version": "v1"},
                    "locality": locality,
                },
                {
                    "address": f["second"],
                    "ports": dict(ports),
                    "labels": {"version": "v2"},
                    "locality": locality,
                },
            ],
        },
    }


def service_entries(count: int) -> Iterator[dict[str, Any]]:
    return (service_entry(i) for i in range(count))


def write_mesh(directory: Path, count: int, files: int = 100) -> list[Path]:
    """``count`` ServiceEntries in ``files`` files (fewer when count is smaller)."""
    directory.mkdir(parents=True, exist_ok=True)
    files = max(1, min(files, count))
    per_file, extra = divmod(count, files)
    written: list[Path] = []
    start = 0
    for index in range(files):
        size = per_file + (1 if index < extra else 0)
        path = directory / f"services-{index:03d}.yaml"
        path.write_text(
            "---\n".join(service_entry_text(i) for i in range(start, start + size)),
            encoding="utf-8",
        )
        written.append(path)
        start += size
    return written
