"""The Istio config of the benchmarks that load, store or encode config rather than push
it (config_load, mcp_encode, kube_source, etcd_replicas): N services in 20 namespaces.

Service ``i`` is a ServiceEntry (one HTTP port, one inline endpoint, an ``app`` label), a
VirtualService (a canary header route to subset v2, then 90/10 between v1 and v2 with a
timeout) and a DestinationRule (the two subsets); a benchmark takes the kinds it needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

NAMESPACES = 20
KINDS = ("ServiceEntry", "VirtualService", "DestinationRule")


def service_objects(i: int, kinds: Sequence[str] = KINDS) -> list[dict[str, Any]]:
    """Service ``i``'s objects of ``kinds``, in that order."""
    ns = f"ns-{i % NAMESPACES}"
    host = f"svc-{i}.{ns}.svc.cluster.local"

    def to(subset: str, weight: int | None = None) -> dict[str, Any]:
        route: dict[str, Any] = {"destination": {"host": host, "subset": subset}}
        return route if weight is None else {**route, "weight": weight}

    specs: dict[str, dict[str, Any]] = {
        "ServiceEntry": {
            "hosts": [host],
            "location": "MESH_INTERNAL",
            "resolution": "STATIC",
            "ports": [{"number": 8080, "name": "http", "protocol": "HTTP"}],
            "endpoints": [
                {
                    "address": f"10.{i // 62500}.{i // 250 % 250}.{i % 250 + 1}",
                    "ports": {"http": 8080},
                    "labels": {"version": "v1"},
                }
            ],
        },
        "VirtualService": {
            "hosts": [host],
            "http": [
                {"match": [{"headers": {"x-canary": {"exact": "true"}}}], "route": [to("v2")]},
                {"route": [to("v1", 90), to("v2", 10)], "timeout": "2s"},
            ],
        },
        "DestinationRule": {
            "host": host,
            "subsets": [{"name": v, "labels": {"version": v}} for v in ("v1", "v2")],
        },
    }
    metadata = {"name": f"svc-{i}", "namespace": ns}
    return [
        {
            "apiVersion": "networking.istio.io/v1",
            "kind": kind,
            "metadata": {**metadata, "labels": {"app": f"svc-{i}"}}
            if kind == "ServiceEntry"
            else dict(metadata),
            "spec": specs[kind],
        }
        for kind in kinds
    ]


def config_objects(services: int, kinds: Sequence[str] = KINDS) -> list[dict[str, Any]]:
    """Every service's objects of ``kinds``."""
    return [obj for i in range(services) for obj in service_objects(i, kinds)]


def config_text(objects: Sequence[dict[str, Any]]) -> str:
    """Objects as one multi-document YAML text (libyaml's emitter when there is one)."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump_all(objects, Dumper=dumper, sort_keys=False)
