"""A WorkloadEntry edited in its file reaches the sidecar that is the entry as CDS.

``pilothouse serve`` runs in process over a config directory (the real file source and
wiring); the sidecar is a raw grpc.aio ADS stream that subscribes to clusters only, so
an endpoint change alone (EDS) would send it nothing. When the entry's labels bring it
under a second ServiceEntry, the sidecar's own ``inbound|9090||`` cluster arrives at
once (istiod's ProxyUpdate), from the file source as from any other.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.type_urls import CDS
from tests.integration.ads_stream import cluster_names, open_ads, sotw_request
from tests.integration.serve_in_process import serve_in_process, write_atomically

SERVICES = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: app, namespace: shop}
spec:
  hosts: [app.shop.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 8000, name: http, protocol: HTTP}]
  workloadSelector: {labels: {app: shop-app}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: metrics, namespace: shop}
spec:
  hosts: [metrics.shop.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 9090, name: http-metrics, protocol: HTTP}]
  workloadSelector: {labels: {role: metrics}}
"""


def entry(labels: str) -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: vm-1, namespace: shop}}
spec:
  address: 10.0.0.7
  ports: {{http: 18000, http-metrics: 19090}}
  labels: {labels}
"""


async def test_the_entrys_sidecar_gets_its_new_inbound_cluster_from_an_edited_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "services.yaml").write_text(SERVICES)
    (tmp_path / "vm.yaml").write_text(entry("{app: shop-app}"))
    async with serve_in_process(monkeypatch, tmp_path) as served:
        stream = await open_ads(served.bound.xds_port)
        try:
            first = discovery_pb2.DiscoveryRequest(type_url=CDS)
            first.node.id = "sidecar~10.0.0.7~vm-1.shop~shop.svc.cluster.local"
            first.node.metadata.update({"LABELS": {"app": "shop-app", "role": "metrics"}})
            await stream.send(first.SerializeToString())
            response = await stream.read(10)
            inbound = {n for n in cluster_names(response) if n.startswith("inbound|")}
            assert inbound == {"inbound|8000||"}
            await stream.send(
                sotw_request(CDS, version_info=response.version_info, response_nonce=response.nonce)
            )

            write_atomically(tmp_path / "vm.yaml", entry("{app: shop-app, role: metrics}"))

            async with asyncio.timeout(10):
                response = await stream.read(10)
            inbound = {n for n in cluster_names(response) if n.startswith("inbound|")}
            assert inbound == {"inbound|8000||", "inbound|9090||"}
        finally:
            await stream.close()
    assert served.discovery.stats.push_triggers.get("proxy") == 1
