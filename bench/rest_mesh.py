"""What the REST discovery benchmark serves and asks for.

``write_services`` writes N ServiceEntries with one HTTP port each, so that a sidecar's
CDS holds N ``outbound|8080||…`` clusters (plus the few fixed clusters pilothouse
always adds). ``discovery_request`` is the body every client request posts: a
DiscoveryRequest shaped like Envoy 1.40's (proto field names, empty fields left
out), from a sidecar whose node id pilothouse can parse and whose ``node.cluster``
sovereign requires. ``extensions`` adds Envoy's long ``node.extensions`` list, which a
real proxy sends on every poll.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

NODE_ID: Final = "sidecar~10.0.0.1~client-1.shop~shop.svc.cluster.local"
NAMESPACES: Final = 10
OUTBOUND_PREFIX: Final = "outbound|8080||"

SERVICE_ENTRY: Final = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: svc-{i}, namespace: ns-{ns}}}
spec:
  hosts: [{host}]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{number: 8080, name: http, protocol: HTTP}}]
  endpoints:
  - {{address: {first}, labels: {{version: v1}}}}
  - {{address: {second}, labels: {{version: v2}}}}
"""


def host(i: int) -> str:
    return f"svc-{i}.ns-{i % NAMESPACES}.example.internal"


def outbound_cluster(i: int) -> str:
    """The name of the outbound cluster ServiceEntry ``i`` gives a sidecar."""
    return f"{OUTBOUND_PREFIX}{host(i)}"


def _address(n: int) -> str:
    return f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


def write_services(directory: Path, count: int) -> Path:
    """``count`` ServiceEntries in one YAML file under ``directory``; returns the file."""
    directory.mkdir(parents=True, exist_ok=True)
    documents = (
        SERVICE_ENTRY.format(
            i=i,
            ns=i % NAMESPACES,
            host=host(i),
            first=_address(2 * i + 1),
            second=_address(2 * i + 2),
        )
        for i in range(count)
    )
    path = directory / "services.yaml"
    path.write_text("---\n".join(documents), encoding="utf-8")
    return path


def discovery_request(version_info: str = "", extensions: int = 0) -> dict[str, Any]:
    """The DiscoveryRequest a sidecar's REST CDS subscription posts."""
    node: dict[str, Any] = {
        "id": NODE_ID,
        "cluster": "client.shop",
        "metadata": {
            "NAMESPACE": "shop",
            "LABELS": {"app": "client", "version": "v1"},
            "ISTIO_VERSION": "1.24.0",
        },
        "locality": {"region": "region-a", "zone": "zone-1"},
        "user_agent_name": "envoy",
        "user_agent_build_version": {"version": {"major_number": 1, "minor_number": 40}},
    }
    if extensions:
        node["extensions"] = [
            {
                "name": f"envoy.filters.http.extension_number_{i:04d}",
                "category": "envoy.filters.http",
                "type_urls": [f"envoy.extensions.filters.http.number_{i}.v3.Config"],
            }
            for i in range(extensions)
        ]
    request: dict[str, Any] = {
        "node": node,
        "type_url": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
    }
    if version_info:
        request["version_info"] = version_info
    return request


def request_body(version_info: str = "", extensions: int = 0) -> bytes:
    return json.dumps(discovery_request(version_info, extensions), separators=(",", ":")).encode()
