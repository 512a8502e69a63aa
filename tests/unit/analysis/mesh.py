"""Build an analysis view from YAML text, as ``analyze`` reads files, for the tests."""

from __future__ import annotations

from pilothouse.analysis.analyzers import ANALYZERS, analyze
from pilothouse.analysis.mesh_view import MeshView, mesh_view
from pilothouse.analysis.messages import Message
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS

SERVICES = """
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: reviews, namespace: shop}
spec:
  hosts: [reviews.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 9080, name: http, protocol: HTTP}]
  workloadSelector: {labels: {app: reviews}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: details, namespace: shop}
spec:
  hosts: [details.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
  - {number: 9080, name: http, protocol: HTTP}
  - {number: 9443, name: https, protocol: HTTPS}
  workloadSelector: {labels: {app: details}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: reviews-v1, namespace: shop}
spec: {address: 10.0.0.1, labels: {app: reviews, version: v1}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: details-v1, namespace: shop}
spec: {address: 10.0.0.2, labels: {app: details, version: v1}}
"""
"""Two services of namespace ``shop`` with one workload each (details has two ports)."""


def view_of(text: str, *, with_services: bool = True) -> MeshView:
    loader = Loader(SCHEMAS, default_namespace="shop", skip_plain=True)
    result = loader.load_text((SERVICES + "---\n" if with_services else "") + text, "mesh.yaml")
    assert not result.errors, [str(p) for p in result.errors]
    return mesh_view(result.configs, [raw.data for raw in result.skipped])


def findings(text: str, analyzer: str, *, with_services: bool = True) -> list[str]:
    """One analyzer's findings over the services above and ``text``, as printed."""
    chosen = [a for a in ANALYZERS if a.name == analyzer]
    assert chosen, analyzer
    return [str(m) for m in analyze(view_of(text, with_services=with_services), chosen)]


def messages(text: str) -> list[Message]:
    return analyze(view_of(text))
